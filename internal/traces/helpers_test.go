package traces

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"
)

// TestMain checks that Close stops the store's goroutines and Pebble's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the tests' epoch: an hour boundary.
var t0 = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

type testStore struct {
	*Store
	dir   string
	clock *fakeClock
	reg   *prometheus.Registry
}

// open opens a store in a new directory with the clock at t0+1h.
func open(t testing.TB, edit func(*Config)) *testStore {
	t.Helper()
	ts := &testStore{dir: t.TempDir(), clock: &fakeClock{t: t0.Add(time.Hour)}}
	ts.reopen(t, edit)
	return ts
}

// reopen opens the store of ts (again).
func (ts *testStore) reopen(t testing.TB, edit func(*Config)) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = ts.dir
	cfg.CacheBytes = 8 << 20
	if edit != nil {
		edit(&cfg)
	}
	ts.reg = prometheus.NewRegistry()
	s, err := Open(cfg, nil, ts.reg, ts.clock.now)
	require.NoError(t, err)
	ts.Store = s
	t.Cleanup(func() { require.NoError(t, s.Close()) })
}

// spanSpec is a hand-written span.
type spanSpec struct {
	trace, span, parent byte
	service, name       string
	start               time.Duration // after t0
	dur                 time.Duration
	err                 bool
	attrs               map[string]any
	resAttrs            map[string]any
}

func tid(b byte) pcommon.TraceID { return pcommon.TraceID{0xab, 1: b, 15: b} }
func sid(b byte) pcommon.SpanID  { return pcommon.SpanID{0xcd, 7: b} }

// traces builds one request holding the spans, one resource per service.
func traces(t testing.TB, specs ...spanSpec) ptrace.Traces {
	td := ptrace.NewTraces()
	bySvc := map[string]ptrace.SpanSlice{}
	for _, sp := range specs {
		key := fmt.Sprint(sp.service, sp.resAttrs)
		spans, ok := bySvc[key]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", sp.service)
			require.NoError(t, rs.Resource().Attributes().FromRaw(merge(map[string]any{"service.name": sp.service}, sp.resAttrs)))
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("test")
			spans = ss.Spans()
			bySvc[key] = spans
		}
		s := spans.AppendEmpty()
		if sp.trace != 0 {
			s.SetTraceID(tid(sp.trace))
		}
		s.SetSpanID(sid(sp.span))
		if sp.parent != 0 {
			s.SetParentSpanID(sid(sp.parent))
		}
		s.SetName(sp.name)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(sp.start)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(sp.start + sp.dur)))
		if sp.err {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
		require.NoError(t, s.Attributes().FromRaw(sp.attrs))
	}
	return td
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// logSpec is a hand-written log record.
type logSpec struct {
	service string
	at      time.Duration // after t0
	trace   byte          // 0: none
	body    any
	attrs   map[string]any
}

func logs(t testing.TB, specs ...logSpec) plog.Logs {
	ld := plog.NewLogs()
	for _, l := range specs {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", l.service)
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(l.at)))
		if l.trace != 0 {
			lr.SetTraceID(tid(l.trace))
			lr.SetSpanID(sid(1))
		}
		require.NoError(t, lr.Body().FromRaw(l.body))
		require.NoError(t, lr.Attributes().FromRaw(l.attrs))
	}
	return ld
}

// bodies returns the string form of the records' bodies.
func bodies(recs []LogRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Body.AsString()
	}
	return out
}

// spanIDs returns the span ids of td, as bytes, in order.
func spanIDs(td ptrace.Traces) []byte {
	var out []byte
	for i := range td.ResourceSpans().Len() {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := range sss.Len() {
			for k := range sss.At(j).Spans().Len() {
				id := sss.At(j).Spans().At(k).SpanID()
				out = append(out, id[7])
			}
		}
	}
	return out
}
