package redaction

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/vigil-obs/vigil/internal/ingest/otlp"
	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

// backend is the OTLP backend Vigil forwards to; it keeps copies of what
// it receives.
type backend struct {
	mu     sync.Mutex
	traces []ptrace.Traces
	logs   []plog.Logs
}

func (b *backend) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	cp := ptrace.NewTraces()
	td.CopyTo(cp)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.traces = append(b.traces, cp)
	return nil
}

func (b *backend) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	cp := plog.NewLogs()
	ld.CopyTo(cp)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logs = append(b.logs, cp)
	return nil
}

func (b *backend) received() ([]ptrace.Traces, []plog.Logs) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]ptrace.Traces(nil), b.traces...), append([]plog.Logs(nil), b.logs...)
}

// Probes are secrets that reach Vigil other than in telemetry: in its own
// configuration, and in the answers of the backend.
var (
	viaConfig  = &position{name: "forwarding configuration (endpoint password, header)"}
	viaAnswers = &position{name: "backend's partial-success message (Vigil logs it)"}
)

// probes returns the secrets of the forwarding configuration and those the
// backend puts in its answers, one per kind.
func probes() (password, header string, answers []*tcase) {
	g := redacttest.NewGen(99)
	password, header = g.Str(redacttest.Alnum, 24), g.Str(redacttest.Alnum, 40)
	answers = []*tcase{
		{id: "p-password", secret: true, kind: "forwarding-password", pos: viaConfig, cores: []string{password}},
		{id: "p-header", secret: true, kind: "forwarding-header", pos: viaConfig, cores: []string{header}},
	}
	for i, s := range redacttest.Secrets(98, 1) {
		if s.Key != "" {
			continue // a bare value is no secret in a message
		}
		answers = append(answers, &tcase{id: fmt.Sprintf("p%03d", i), secret: true, kind: s.Kind, pos: viaAnswers,
			text: s.Text, cores: s.Cores})
	}
	return password, header, answers
}

// startBackend runs Vigil's own OTLP receiver as the backend, behind a
// proxy that answers each export it took with a partial success whose
// message quotes a secret (as a backend refusing a value may), and returns
// the proxy's address.
func startBackend(t *testing.T, answers []*tcase) (*backend, string) {
	be := &backend{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	recv, err := otlp.New(otlp.Options{HTTP: ln, Traces: be, Logs: be})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()

	var n atomic.Int64
	var msgs []string
	for _, c := range answers {
		if c.pos == viaAnswers {
			msgs = append(msgs, "value refused: "+c.text)
		}
	}
	proxy := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, err := relay(r, "http://"+ln.Addr().String())
		if err != nil || status != http.StatusOK {
			http.Error(w, fmt.Sprintf("relay: %v (HTTP %d)", err, status), http.StatusBadGateway)
			return
		}
		msg := msgs[int(n.Add(1)-1)%len(msgs)]
		var b []byte
		if strings.HasSuffix(r.URL.Path, "/v1/logs") {
			resp := plogotlp.NewExportResponse()
			resp.PartialSuccess().SetErrorMessage(msg)
			b, err = resp.MarshalProto()
		} else {
			resp := ptraceotlp.NewExportResponse()
			resp.PartialSuccess().SetErrorMessage(msg)
			b, err = resp.MarshalProto()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	})}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- proxy.Serve(pl) }()
	t.Cleanup(func() {
		require.NoError(t, proxy.Shutdown(context.Background()))
		require.ErrorIs(t, <-served, http.ErrServerClosed)
		cancel()
		require.NoError(t, <-done)
	})
	return be, pl.Addr().String()
}

// relay hands an export on to the receiver and returns its status.
func relay(r *http.Request, receiver string) (int, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, receiver+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for _, h := range []string{"Content-Type", "Content-Encoding"} {
		req.Header.Set(h, r.Header.Get(h))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, errors.New(string(b))
	}
	return resp.StatusCode, nil
}
