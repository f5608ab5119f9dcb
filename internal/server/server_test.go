package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/traces/tracestest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig is the defaults over dir, with every listener on a free
// port of 127.0.0.1 and self-monitoring off.
func testConfig(t *testing.T, dir string) config.Config {
	cfg := config.Default()
	cfg.Storage.DataDir = dir
	cfg.Web.Listen = "127.0.0.1:0"
	cfg.OTLP.GRPCListen, cfg.OTLP.HTTPListen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Self.Enabled = false
	require.NoError(t, cfg.Validate())
	return cfg
}

// TestLifecycle: the Collector's contract. Shutdown is safe without
// Start and gives the same answer every time; a server starts once.
func TestLifecycle(t *testing.T) {
	idle := New(Options{Config: testConfig(t, t.TempDir())})
	require.NoError(t, idle.Shutdown(t.Context()))
	require.NoError(t, idle.Shutdown(t.Context()))
	require.ErrorContains(t, idle.Start(t.Context(), Host), "already shut down")

	s := New(Options{Config: testConfig(t, t.TempDir())})
	require.NoError(t, s.Start(t.Context(), Host))
	require.NotNil(t, s.Addr())
	require.NotNil(t, s.Watcher())
	require.ErrorContains(t, s.Start(t.Context(), Host), "already started")
	code, _ := get(t, "http://"+s.Addr().String()+"/-/ready")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, s.Shutdown(t.Context()))
	require.NoError(t, s.Shutdown(t.Context()))
	_, err := net.Dial("tcp", s.Addr().String())
	require.Error(t, err, "the API's port is closed")
}

// TestFailedStartReleasesEverything: a start that fails late (the API's
// address is taken) shuts down what it had started — the stores, whose
// directory a new server opens at once, and the OTLP listeners, whose
// ports are free again — and says why.
func TestFailedStartReleasesEverything(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	grpcAddr := freeAddr(t)
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Web.Listen = busy.Addr().String()
	cfg.OTLP.GRPCListen = grpcAddr
	s := New(Options{Config: cfg, OTLPExplicit: OTLPExplicit{GRPC: true, HTTP: true}})
	err = s.Start(t.Context(), Host)
	require.ErrorContains(t, err, "address already in use")
	require.NoError(t, s.Shutdown(t.Context()), "the failed start shut it down already")

	ln, err := net.Listen("tcp", grpcAddr)
	require.NoError(t, err, "the OTLP/gRPC port is free again")
	require.NoError(t, ln.Close())
	again := New(Options{Config: testConfig(t, dir)})
	require.NoError(t, again.Start(t.Context(), Host), "the data directory is not locked")
	require.NoError(t, again.Shutdown(t.Context()))
}

// TestPipeline feeds a server through Traces and Logs as
// the OTLP receiver does: a secret in a log line is redacted before the
// log store takes it, and the spans become span metrics in the embedded
// store.
func TestPipeline(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	now := start.Add(time.Minute)
	cfg := testConfig(t, t.TempDir())
	cfg.OTLP.GRPCListen, cfg.OTLP.HTTPListen = "", ""
	cfg.SpanMetrics.FlushInterval = 0
	s := New(Options{Config: cfg, Now: func() time.Time { return now }, Driven: true})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()

	td, _ := tracestest.NewGen(1, start, time.Second).Batch(3, 5)
	ld := tracestest.Logs(td, map[pcommon.TraceID]string{})
	lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	lr.Body().SetStr("login as ada password=hunter2")
	want := lr.TraceID()
	require.NoError(t, s.Traces().ConsumeTraces(t.Context(), td))
	require.NoError(t, s.Logs().ConsumeLogs(t.Context(), ld))

	code, body := get(t, "http://"+s.Addr().String()+"/api/v1/logs?trace_id="+want.String())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "password=[REDACTED:")
	require.NotContains(t, body, "hunter2")

	q, err := s.Store().Querier(start.Add(-time.Hour).UnixMilli(), now.Add(time.Hour).UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, spanmetrics.MetricCalls))
	n := 0
	for ss.Next() {
		n++
	}
	require.NoError(t, ss.Err())
	require.Positive(t, n, "span metrics were written")

	// A driven watcher cycles when told to.
	require.NoError(t, s.Watcher().Cycle(t.Context(), now))
	rep, at := s.Watcher().Last()
	require.NotNil(t, rep)
	require.True(t, at.Equal(now))
}

// TestRunner: a part's function that fails on its own is reported, and
// its Shutdown says so; one that stops when told returns nothing.
func TestRunner(t *testing.T) {
	fatal := make(chan error, 1)
	boom := newRunner("boom", func(context.Context) error { return io.ErrUnexpectedEOF }, func(err error) { fatal <- err })
	require.NoError(t, boom.Shutdown(t.Context()), "safe without Start")
	boom = newRunner("boom", func(context.Context) error { return io.ErrUnexpectedEOF }, func(err error) { fatal <- err })
	require.NoError(t, boom.Start(t.Context(), Host))
	require.ErrorIs(t, <-fatal, io.ErrUnexpectedEOF)
	require.ErrorIs(t, boom.Shutdown(t.Context()), io.ErrUnexpectedEOF)

	calm := newRunner("calm", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, func(err error) { t.Errorf("reported %v", err) })
	require.NoError(t, calm.Start(t.Context(), Host))
	require.NoError(t, calm.Shutdown(t.Context()))
	require.NoError(t, calm.Shutdown(t.Context()))

	release := make(chan struct{})
	defer close(release)
	stuck := newRunner("stuck", func(context.Context) error { <-release; return nil }, nil)
	require.NoError(t, stuck.Start(t.Context(), Host))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, stuck.Shutdown(ctx), "did not stop in time")
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
