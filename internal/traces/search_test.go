package traces

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// indexed stores four traces that every index tells apart.
func indexed(t *testing.T) *testStore {
	s := open(t, nil)
	s.clock.set(t0.Add(3 * time.Hour))
	ms := time.Millisecond
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 1, span: 1, service: "gateway", name: "GET /a", start: 10 * time.Minute, dur: 100 * ms,
			attrs: map[string]any{"tenant.id": "acme", "request_id": "req-1"}},
		spanSpec{trace: 1, span: 2, parent: 1, service: "vllm", name: "chat", start: 10*time.Minute + ms, dur: 90 * ms, err: true},
		spanSpec{trace: 2, span: 3, service: "gateway", name: "GET /b", start: 20 * time.Minute, dur: 2 * time.Second,
			resAttrs: map[string]any{"tenant.id": "globex"}},
	)))
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 2, span: 4, parent: 3, service: "auth", name: "check", start: 20*time.Minute + ms, dur: 5 * ms},
		spanSpec{trace: 3, span: 5, service: "gateway", name: "GET /a", start: 70 * time.Minute, dur: 50 * ms},
		spanSpec{trace: 3, span: 6, parent: 5, service: "vllm", name: "chat", start: 70*time.Minute + ms, dur: 40 * ms,
			attrs: map[string]any{"X-Request-ID": []any{"req-3"}}},
		spanSpec{trace: 4, span: 7, service: "router", name: "route", start: 80 * time.Minute, dur: 5 * time.Second, err: true,
			attrs: map[string]any{"tenant.id": "acme", "correlation_id": 42}},
	)))
	return s
}

func TestSearchTracesIndexes(t *testing.T) {
	s := indexed(t)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	f := func(name string, q TraceQuery, want ...byte) {
		t.Helper()
		got, err := s.SearchTraces(t.Context(), q)
		require.NoError(t, err, name)
		ids := make([]byte, len(got))
		for i, g := range got {
			ids[i] = g.TraceID[1]
		}
		if want == nil {
			want = []byte{}
		}
		require.Equal(t, want, ids, name)
	}
	f("all, newest first", TraceQuery{}, 4, 3, 2, 1)
	f("service", TraceQuery{Service: "gateway"}, 3, 2, 1)
	f("service and operation", TraceQuery{Service: "vllm", Operation: "chat"}, 3, 1)
	f("operation alone", TraceQuery{Operation: "GET /a"}, 3, 1)
	f("tenant on the span", TraceQuery{Tenant: "acme"}, 4, 1)
	f("tenant on the resource", TraceQuery{Tenant: "globex"}, 2)
	f("request_id attribute", TraceQuery{CorrelationID: "req-1"}, 1)
	f("x-request-id array attribute, key in other case", TraceQuery{CorrelationID: "req-3"}, 3)
	f("integer correlation_id", TraceQuery{CorrelationID: "42"}, 4)
	f("correlation id and service", TraceQuery{CorrelationID: "req-1", Service: "vllm"})
	f("errors", TraceQuery{ErrorOnly: true}, 4, 1)
	f("errors of a service", TraceQuery{ErrorOnly: true, Service: "vllm"}, 1)
	f("slow spans, slowest first", TraceQuery{MinDuration: time.Second}, 4, 2)
	f("duration range", TraceQuery{MinDuration: 60 * time.Millisecond, MaxDuration: time.Second}, 1)
	f("duration range of a service", TraceQuery{Service: "vllm", MinDuration: 60 * time.Millisecond}, 1)
	f("from the second hour", TraceQuery{Start: at(time.Hour)}, 4, 3)
	f("until the first half hour", TraceQuery{End: at(30 * time.Minute)}, 2, 1)
	f("window across the hour", TraceQuery{Start: at(15 * time.Minute), End: at(75 * time.Minute)}, 3, 2)
	f("window of a service", TraceQuery{Service: "gateway", Start: at(15 * time.Minute), End: at(75 * time.Minute)}, 3, 2)
	f("limit", TraceQuery{Limit: 2}, 4, 3)
	f("limit with a service", TraceQuery{Service: "gateway", Limit: 1}, 3)
	f("unknown service", TraceQuery{Service: "nope"})
	f("unknown correlation id", TraceQuery{CorrelationID: "nope"})
}

func TestSearchTracesSummary(t *testing.T) {
	s := indexed(t)
	got, err := s.SearchTraces(t.Context(), TraceQuery{Tenant: "globex"})
	require.NoError(t, err)
	require.Equal(t, []TraceSummary{{
		TraceID: tid(2), RootService: "gateway", RootOperation: "GET /b",
		Start: t0.Add(20 * time.Minute), Duration: 2 * time.Second, SpanCount: 2,
		Services: []string{"auth", "gateway"}, Tenant: "globex",
	}}, got)
}

func TestSearchTracesBadQueries(t *testing.T) {
	s := open(t, nil)
	for name, q := range map[string]TraceQuery{
		"negative limit":    {Limit: -1},
		"end before start":  {Start: t0, End: t0.Add(-time.Second)},
		"negative duration": {MinDuration: -time.Second},
		"max below min":     {MinDuration: time.Second, MaxDuration: time.Millisecond},
	} {
		_, err := s.SearchTraces(t.Context(), q)
		require.ErrorIs(t, err, ErrBadQuery, name)
	}
}

func TestSpans(t *testing.T) {
	s := indexed(t)
	collect := func(q SpanQuery) []Span {
		var out []Span
		require.NoError(t, s.Spans(t.Context(), q, func(sp Span) bool {
			out = append(out, sp)
			return true
		}))
		return out
	}
	got := collect(SpanQuery{Service: "vllm"})
	require.Len(t, got, 2)
	require.Equal(t, []pcommon.SpanID{sid(2), sid(6)}, []pcommon.SpanID{got[0].SpanID, got[1].SpanID})
	sp := got[0]
	require.Equal(t, tid(1), sp.TraceID)
	require.Equal(t, "vllm", sp.Service)
	require.Equal(t, "chat", sp.Name)
	require.True(t, sp.Error)
	require.False(t, sp.Root)
	require.Equal(t, t0.Add(10*time.Minute+time.Millisecond), sp.Start)
	require.Equal(t, 90*time.Millisecond, sp.Duration)
	require.Equal(t, sid(1), sp.Span.ParentSpanID())
	svc, _ := sp.Resource.Attributes().Get("service.name")
	require.Equal(t, "vllm", svc.Str())
	require.Equal(t, "test", sp.Scope.Name())
	v, _ := got[1].Span.Attributes().Get("X-Request-ID")
	require.Equal(t, []any{"req-3"}, v.Slice().AsRaw())

	require.Len(t, collect(SpanQuery{}), 7)
	require.Len(t, collect(SpanQuery{Limit: 3}), 3)
	require.Len(t, collect(SpanQuery{Service: "gateway", Operation: "GET /a"}), 2)
	require.Len(t, collect(SpanQuery{Start: t0.Add(time.Hour), End: t0.Add(75 * time.Minute)}), 2)
	n := 0
	require.NoError(t, s.Spans(t.Context(), SpanQuery{}, func(Span) bool { n++; return n < 4 }))
	require.Equal(t, 4, n, "fn returning false stops the iteration")
	require.ErrorIs(t, s.Spans(t.Context(), SpanQuery{Limit: -1}, func(Span) bool { return true }), ErrBadQuery)
}
