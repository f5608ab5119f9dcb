package forward

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/ingest/otlp"
)

// TestMain checks that no test leaves a goroutine behind: Run's
// workers, the exporters' connections and the receivers.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is when the generated telemetry happens.
var t0 = time.Date(2026, 11, 12, 2, 47, 0, 0, time.UTC)

// sink is the backend's consumer: it keeps what arrives; fail, when set,
// decides what each call returns.
type sink struct {
	mu     sync.Mutex
	traces []ptrace.Traces
	logs   []plog.Logs
	calls  int
	fail   func(call int) error
}

func (s *sink) consume(keep func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		if err := s.fail(s.calls); err != nil {
			return err
		}
	}
	keep()
	return nil
}

func (s *sink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	return s.consume(func() { s.traces = append(s.traces, td) })
}

func (s *sink) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	return s.consume(func() { s.logs = append(s.logs, ld) })
}

// counts returns the spans and log records kept so far.
func (s *sink) counts() (spans, logs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, td := range s.traces {
		spans += td.SpanCount()
	}
	for _, ld := range s.logs {
		logs += ld.LogRecordCount()
	}
	return spans, logs
}

// jsonBatches returns every kept batch as OTLP JSON, sorted.
func (s *sink) jsonBatches(t *testing.T) (traces, logs []string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return tracesJSON(t, s.traces...), logsJSON(t, s.logs...)
}

func tracesJSON(t *testing.T, tds ...ptrace.Traces) []string {
	t.Helper()
	var out []string
	for _, td := range tds {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

func logsJSON(t *testing.T, lds ...plog.Logs) []string {
	t.Helper()
	var out []string
	for _, ld := range lds {
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// backend is a real Vigil OTLP receiver on 127.0.0.1.
type backend struct {
	grpcURL, httpURL string
	sink             *sink
}

// startBackend serves the OTLP receiver with both transports until the
// test ends.
func startBackend(t testing.TB, s *sink) *backend {
	t.Helper()
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r, err := otlp.New(otlp.Options{GRPC: gl, HTTP: hl, Traces: s, Logs: s, Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.NoError(t, r.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Shutdown(ctx))
	})
	return &backend{grpcURL: "grpc://" + gl.Addr().String(), httpURL: "http://" + hl.Addr().String(), sink: s}
}

// running is a Forwarder whose Run is in progress.
type running struct {
	*Forwarder
	reg  *prometheus.Registry
	stop func() error
}

// startForwarder runs a Forwarder for cfg with short retry timings; edit
// may change it before Run. It stops when the test ends, if not before.
func startForwarder(t testing.TB, cfg Config, edit func(*Forwarder)) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	f, err := New(cfg, nil, reg)
	require.NoError(t, err)
	f.initialBackoff, f.maxBackoff = 5*time.Millisecond, 20*time.Millisecond
	f.shutdownWait = 2 * time.Second
	if edit != nil {
		edit(f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return &running{Forwarder: f, reg: reg, stop: stop}
}

// eventually waits up to 20 s for cond; the tests assert what arrives,
// never how fast.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, fmt.Sprintf(msg, args...))
}

// genTraces returns n spans under two resources, with attributes of
// every type, events and links.
func genTraces(seed, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", r))
		rs.Resource().Attributes().PutStr("k8s.pod.name", fmt.Sprintf("pod-%d-%d", seed, r))
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("vigil.test")
		ss.Scope().SetVersion("1.0")
		for i := range n / 2 {
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{0: byte(seed), 1: byte(r), 15: byte(i + 1)})
			sp.SetSpanID(pcommon.SpanID{0: byte(seed), 1: byte(r), 7: byte(i + 1)})
			sp.SetName(fmt.Sprintf("POST /v1/chat/completions %d", i))
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i) * time.Millisecond)))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i)*time.Millisecond + 42*time.Second)))
			a := sp.Attributes()
			a.PutStr("gen_ai.request.model", "llama-3.1-70b")
			a.PutInt("gen_ai.usage.input_tokens", int64(100+i))
			a.PutDouble("gen_ai.request.temperature", 0.7)
			a.PutBool("stream", i%2 == 0)
			a.PutEmptySlice("tags").AppendEmpty().SetStr("a")
			a.PutEmptyBytes("blob").FromRaw([]byte{1, 2, 3})
			ev := sp.Events().AppendEmpty()
			ev.SetName("first_token")
			ev.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Second)))
			if i%3 == 0 {
				sp.Status().SetCode(ptrace.StatusCodeError)
				sp.Status().SetMessage("upstream timeout")
			}
		}
	}
	return td
}

// genLogs returns n log records under one resource.
func genLogs(seed, n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("k8s.node.name", fmt.Sprintf("gpu-node-%02d", seed))
	sl := rl.ScopeLogs().AppendEmpty()
	for i := range n {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i) * time.Second)))
		lr.SetSeverityNumber(plog.SeverityNumberError)
		lr.SetSeverityText("ERROR")
		lr.Body().SetStr(fmt.Sprintf("NVRM: Xid (PCI:0000:3b:00): 79, pid=%d, GPU has fallen off the bus.", i))
		lr.Attributes().PutInt("line", int64(i))
		lr.SetTraceID(pcommon.TraceID{0: byte(seed), 15: byte(i + 1)})
	}
	return ld
}

// gauge reads a metric of reg; labels select one series.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
