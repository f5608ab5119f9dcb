package server

import (
	"bytes"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeListener reports addr without binding it: the test never listens
// on every interface.
type fakeListener struct {
	net.Listener
	addr net.Addr
}

func (f fakeListener) Addr() net.Addr { return f.addr }

func TestWarnOpen(t *testing.T) {
	f := func(ip string, authenticates, wantWarning bool) {
		t.Helper()
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		ln := fakeListener{addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 9700}}
		warnOpen(logger, "HTTP", ln, authenticates, "")
		if wantWarning {
			require.Contains(t, buf.String(), "level=WARN")
			require.Contains(t, buf.String(), unauthenticatedWarning)
			return
		}
		require.Empty(t, buf.String())
	}
	f("0.0.0.0", false, true)
	f("::", false, true)
	f("10.1.2.3", false, true)
	f("0.0.0.0", true, false)
	f("127.0.0.1", false, false)
	f("::1", false, false)
	warnOpen(slog.New(slog.DiscardHandler), "OTLP/gRPC", nil, false, "") // off: no listener
}
