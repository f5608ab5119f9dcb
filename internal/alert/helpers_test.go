package alert

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/peertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a Notifier under test with its registry and logs.
type harness struct {
	n    *Notifier
	reg  *prometheus.Registry
	logs *peertest.SyncBuffer
}

// newHarness builds a notifier logging at debug level into a buffer;
// edit may change the notifier (e.g. its webhook backoff) before Run.
func newHarness(t *testing.T, cfg Config, opts ...Option) *harness {
	t.Helper()
	h := &harness{reg: prometheus.NewRegistry(), logs: &peertest.SyncBuffer{}}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := New(cfg, logger, h.reg, opts...)
	require.NoError(t, err)
	h.n = n
	for _, w := range n.webhooks {
		w.backoff = time.Millisecond
	}
	return h
}

// run starts Run and returns a stop function that cancels it and waits
// for it to return; the test's cleanup calls it too.
func (h *harness) run(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.n.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(stop)
	return stop
}

// metric returns the value of a vigil_notifications_* series of receiver
// ("" for one without labels), or -1 when there is none.
func (h *harness) metric(t *testing.T, name, receiver string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "receiver") != receiver {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// eventually waits for cond, as long as a slow shared machine may need.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 20*time.Millisecond, append([]any{msg}, args...)...)
}
