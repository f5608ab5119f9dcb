package traces

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/traces/tracestest"
)

// spanView is what a test compares of a span: everything OTLP carries.
type spanView struct {
	Resource, Attrs            map[string]any
	ResourceSchema, ScopeName  string
	ScopeVersion, Name, Parent string
	Kind                       ptrace.SpanKind
	Start, End                 pcommon.Timestamp
	Status                     ptrace.StatusCode
	StatusMessage              string
}

func views(td ptrace.Traces) map[pcommon.SpanID]spanView {
	out := map[pcommon.SpanID]spanView{}
	for i := range td.ResourceSpans().Len() {
		rs := td.ResourceSpans().At(i)
		for j := range rs.ScopeSpans().Len() {
			ss := rs.ScopeSpans().At(j)
			for k := range ss.Spans().Len() {
				sp := ss.Spans().At(k)
				out[sp.SpanID()] = spanView{
					Resource: rs.Resource().Attributes().AsRaw(), Attrs: sp.Attributes().AsRaw(),
					ResourceSchema: rs.SchemaUrl(), ScopeName: ss.Scope().Name(), ScopeVersion: ss.Scope().Version(),
					Name: sp.Name(), Parent: sp.ParentSpanID().String(), Kind: sp.Kind(),
					Start: sp.StartTimestamp(), End: sp.EndTimestamp(),
					Status: sp.Status().Code(), StatusMessage: sp.Status().Message(),
				}
			}
		}
	}
	return out
}

// byTrace splits td's spans by trace.
func byTrace(td ptrace.Traces) map[pcommon.TraceID]map[pcommon.SpanID]spanView {
	out := map[pcommon.TraceID]map[pcommon.SpanID]spanView{}
	all := views(td)
	for i := range td.ResourceSpans().Len() {
		rs := td.ResourceSpans().At(i)
		for j := range rs.ScopeSpans().Len() {
			ss := rs.ScopeSpans().At(j)
			for k := range ss.Spans().Len() {
				sp := ss.Spans().At(k)
				if out[sp.TraceID()] == nil {
					out[sp.TraceID()] = map[pcommon.SpanID]spanView{}
				}
				out[sp.TraceID()][sp.SpanID()] = all[sp.SpanID()]
			}
		}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	s := open(t, nil)
	gen := tracestest.NewGen(1, t0.Add(10*time.Minute), 7*time.Second)
	batches, infos := gen.Batches(4, 5, 12)
	want := map[pcommon.TraceID]map[pcommon.SpanID]spanView{}
	for _, td := range batches {
		require.NoError(t, s.ConsumeTraces(t.Context(), td))
		for id, spans := range byTrace(td) {
			want[id] = spans
		}
	}
	require.Len(t, want, 20)
	for _, info := range infos {
		td, err := s.Trace(t.Context(), info.ID)
		require.NoError(t, err)
		require.Equal(t, want[info.ID], views(td), "trace %s", info.ID)
		// One ResourceSpans per service: the resource is stored once.
		require.Equal(t, len(info.Services), td.ResourceSpans().Len())
	}
	_, err := s.Trace(t.Context(), tid(99))
	require.ErrorIs(t, err, ErrNotFound)
}

func TestTraceAcrossHoursAndRequests(t *testing.T) {
	s := open(t, nil)
	// One trace sent by two services in two requests, crossing an hour.
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 1, span: 1, service: "gateway", name: "GET /", start: 59 * time.Minute, dur: 3 * time.Minute})))
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 1, span: 2, parent: 1, service: "vllm", name: "chat", start: 61 * time.Minute, dur: time.Minute, err: true})))
	td, err := s.Trace(t.Context(), tid(1))
	require.NoError(t, err)
	require.ElementsMatch(t, []byte{1, 2}, spanIDs(td))

	got, err := s.SearchTraces(t.Context(), TraceQuery{Service: "vllm"})
	require.NoError(t, err)
	require.Equal(t, []TraceSummary{{
		TraceID: tid(1), RootService: "gateway", RootOperation: "GET /",
		Start: t0.Add(59 * time.Minute), Duration: 3 * time.Minute, SpanCount: 2,
		Error: true, Services: []string{"gateway", "vllm"},
	}}, got)

	// A span sent twice is stored once.
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 1, span: 1, service: "gateway", name: "GET /", start: 59 * time.Minute, dur: 3 * time.Minute})))
	got, err = s.SearchTraces(t.Context(), TraceQuery{Service: "gateway"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, 2, got[0].SpanCount)
}

func TestDrops(t *testing.T) {
	s := open(t, func(c *Config) { c.Retention.Set("2h") })
	s.clock.set(t0.Add(5 * time.Hour))
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 1, span: 1, service: "a", name: "old", start: time.Hour},                     // past retention
		spanSpec{trace: 2, span: 1, service: "a", name: "future", start: 7 * time.Hour},              // over an hour ahead
		spanSpec{trace: 3, span: 1, service: "a", name: "ok", start: 4 * time.Hour},                  // kept
		spanSpec{trace: 4, span: 1, service: "a", name: "soon", start: 5*time.Hour + 30*time.Minute}, // kept
		spanSpec{trace: 0, span: 1, service: "a", name: "no trace id", start: 4 * time.Hour},
	)))
	for id, want := range map[byte]bool{1: false, 2: false, 3: true, 4: true} {
		_, err := s.Trace(t.Context(), tid(id))
		if want {
			require.NoError(t, err, "trace %d", id)
		} else {
			require.ErrorIs(t, err, ErrNotFound, "trace %d", id)
		}
	}
	require.Equal(t, map[string]float64{"spans/too_old": 1, "spans/future": 1, "spans/invalid": 1}, dropped(t, s))
}

// dropped reads vigil_traces_dropped_total as "signal/reason" → value.
func dropped(t *testing.T, s *testStore) map[string]float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_traces_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var sig, reason string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "signal":
					sig = l.GetValue()
				case "reason":
					reason = l.GetValue()
				}
			}
			out[sig+"/"+reason] = m.GetCounter().GetValue()
		}
	}
	return out
}

func TestClosed(t *testing.T) {
	s := open(t, nil)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	require.ErrorIs(t, s.ConsumeTraces(t.Context(), traces(t, spanSpec{trace: 1, span: 1, service: "a", start: time.Minute})), ErrClosed)
	_, err := s.Trace(t.Context(), tid(1))
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.SearchLogs(t.Context(), LogQuery{})
	require.ErrorIs(t, err, ErrClosed)
}

func TestRestart(t *testing.T) {
	s := open(t, nil)
	gen := tracestest.NewGen(2, t0.Add(5*time.Minute), 3*time.Second)
	batches, infos := gen.Batches(3, 10, 8)
	reqs := map[pcommon.TraceID]string{}
	for _, in := range infos {
		reqs[in.ID] = in.RequestID
	}
	for _, td := range batches {
		require.NoError(t, s.ConsumeTraces(t.Context(), td))
		require.NoError(t, s.ConsumeLogs(t.Context(), tracestest.Logs(td, reqs)))
	}
	before, err := s.SearchTraces(t.Context(), TraceQuery{Limit: 100})
	require.NoError(t, err)
	require.Len(t, before, len(infos))

	require.NoError(t, s.Close())
	s.reopen(t, nil)

	after, err := s.SearchTraces(t.Context(), TraceQuery{Limit: 100})
	require.NoError(t, err)
	require.Equal(t, before, after)
	for _, in := range infos {
		td, err := s.Trace(t.Context(), in.ID)
		require.NoError(t, err)
		require.Equal(t, in.Spans, td.SpanCount())
		recs, err := s.LogsForRequest(t.Context(), in.RequestID)
		require.NoError(t, err)
		require.Len(t, recs, in.Spans, "every span logged once; the request id is on the root's log only")
	}
	// New writes after the restart do not overwrite the old ones.
	more, _ := gen.Batches(1, 2, 8)
	require.NoError(t, s.ConsumeLogs(t.Context(), tracestest.Logs(more[0], reqs)))
	all, err := s.SearchLogs(t.Context(), LogQuery{Limit: MaxLimit})
	require.NoError(t, err)
	require.Len(t, all, len(infos)*8+16)
	require.True(t, slices.IsSortedFunc(all, func(a, b LogRecord) int { return a.Time.Compare(b.Time) }))
}
