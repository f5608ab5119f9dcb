package traces

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestCorrelator(t *testing.T) {
	c := newCorrelator(DefaultCorrelationKeys)
	f := func(name string, attrs map[string]any, body any, want ...string) {
		t.Helper()
		m := pcommon.NewMap()
		require.NoError(t, m.FromRaw(attrs))
		b := pcommon.NewValueEmpty()
		require.NoError(t, b.FromRaw(body))
		got := c.fromBody(c.fromMap(nil, m), b)
		require.ElementsMatch(t, want, got, name)
	}
	f("nothing", map[string]any{"user": "x"}, "hello")
	f("request_id attribute", map[string]any{"request_id": "r1"}, nil, "r1")
	f("keys match without regard to case", map[string]any{"X-Request-Id": "r1", "RequestID": "r2"}, nil, "r1", "r2")
	f("OTel header attribute is a string array", map[string]any{"http.request.header.x-request-id": []any{"r1", "r2"}}, nil, "r1", "r2")
	f("integer id", map[string]any{"correlation_id": 42}, nil, "42")
	f("same id twice is kept once", map[string]any{"request_id": "r1", "correlation_id": "r1"}, nil, "r1")
	f("spaces are trimmed, empty ignored", map[string]any{"request_id": "  r1 ", "requestId": ""}, nil, "r1")
	f("id too long", map[string]any{"request_id": strings.Repeat("x", maxCorrIDLen+1)}, nil)
	f("JSON string body", nil, `{"level":"info","msg":"done","requestId":"r1"}`, "r1")
	f("JSON string body with spaces and nesting", nil, ` {"http":{"x-request-id":"r1"},"correlation_id":7} `, "r1", "7")
	f("string body that is not JSON", nil, `request_id=r1 done`)
	f("broken JSON", nil, `{"request_id":"r1"`)
	f("map body", nil, map[string]any{"msg": "x", "request_id": "r1"}, "r1")
	f("nested map body", nil, map[string]any{"ctx": map[string]any{"req": map[string]any{"request_id": "r1"}}}, "r1")
	f("attribute and body", map[string]any{"request_id": "r1"}, `{"correlation_id":"c1"}`, "r1", "c1")
	f("a map under the key is not an id", map[string]any{"request_id": map[string]any{"a": "b"}}, nil)

	off := newCorrelator(nil)
	m := pcommon.NewMap()
	m.PutStr("request_id", "r1")
	require.Empty(t, off.fromMap(nil, m), "no keys: correlation off")
}

// logged stores the spans of indexed and logs around them.
func logged(t *testing.T) *testStore {
	s := indexed(t)
	m := time.Minute
	require.NoError(t, s.ConsumeLogs(t.Context(), logs(t,
		logSpec{service: "gateway", at: 10 * m, trace: 1, body: "request in"},
		logSpec{service: "vllm", at: 10*m + time.Second, trace: 1, body: "prefill done"},
		logSpec{service: "edge", at: 9 * m, body: `{"msg":"accepted","request_id":"req-1"}`},
		logSpec{service: "billing", at: 15 * m, body: map[string]any{"msg": "charged", "ctx": map[string]any{"requestId": "req-1"}}},
		logSpec{service: "gateway", at: 20 * m, trace: 2, body: "other request"},
		logSpec{service: "edge", at: 69 * m, body: "accepted", attrs: map[string]any{"x-request-id": "req-9"}},
		logSpec{service: "edge", at: 69*m + time.Second, trace: 9, body: "forwarded", attrs: map[string]any{"x-request-id": "req-9"}},
		logSpec{service: "vllm", at: 71 * m, trace: 9, body: "request 9 served"},
		logSpec{service: "gateway", at: 70 * m, trace: 3, body: "request 3"},
	)))
	return s
}

func TestLogsForRequest(t *testing.T) {
	s := logged(t)
	f := func(id string, want ...string) {
		t.Helper()
		got, err := s.LogsForRequest(t.Context(), id)
		require.NoError(t, err)
		if want == nil {
			want = []string{}
		}
		require.Equal(t, want, bodies(got), id)
	}
	// req-1 is carried by trace 1's root span, an edge log (JSON string
	// body) and a billing log (map body): with trace 1's logs, in time order.
	f("req-1", `{"msg":"accepted","request_id":"req-1"}`, "request in", "prefill done", `{"ctx":{"requestId":"req-1"},"msg":"charged"}`)
	// req-3 is only on a span of trace 3: its logs are found through it.
	f("req-3", "request 3")
	// req-9 is on no span; a log carries it with trace 9, whose other logs follow.
	f("req-9", "accepted", "forwarded", "request 9 served")
	f("nope")
}

func TestSearchLogs(t *testing.T) {
	s := logged(t)
	m := time.Minute
	f := func(name string, q LogQuery, want ...string) {
		t.Helper()
		got, err := s.SearchLogs(t.Context(), q)
		require.NoError(t, err, name)
		if want == nil {
			want = []string{}
		}
		require.Equal(t, want, bodies(got), name)
	}
	f("by trace", LogQuery{TraceID: tid(1)}, "request in", "prefill done")
	f("by trace and service", LogQuery{TraceID: tid(1), Service: "vllm"}, "prefill done")
	f("by request and service", LogQuery{RequestID: "req-1", Service: "edge"}, `{"msg":"accepted","request_id":"req-1"}`)
	f("by request in a window", LogQuery{RequestID: "req-9", Start: t0.Add(69*m + time.Second)}, "forwarded", "request 9 served")
	f("by service", LogQuery{Service: "vllm"}, "prefill done", "request 9 served")
	f("by service, newest kept", LogQuery{Service: "edge", Limit: 2}, "accepted", "forwarded")
	f("window", LogQuery{Start: t0.Add(15 * m), End: t0.Add(69 * m)}, `{"ctx":{"requestId":"req-1"},"msg":"charged"}`, "other request", "accepted")
	f("newest of all", LogQuery{Limit: 2}, "request 3", "request 9 served")
	f("unknown trace", LogQuery{TraceID: tid(77)})

	got, err := s.SearchLogs(t.Context(), LogQuery{TraceID: tid(1), Service: "gateway"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	r := got[0]
	require.Equal(t, t0.Add(10*m), r.Time)
	require.Equal(t, "gateway", r.Service)
	require.Equal(t, tid(1), r.TraceID)
	require.Equal(t, sid(1), r.SpanID)
	svc, _ := r.Resource.Attributes().Get("service.name")
	require.Equal(t, "gateway", svc.Str())

	got, err = s.SearchLogs(t.Context(), LogQuery{Service: "billing"})
	require.NoError(t, err)
	require.Equal(t, []string{"req-1"}, got[0].CorrelationIDs)

	_, err = s.SearchLogs(t.Context(), LogQuery{Limit: -1})
	require.ErrorIs(t, err, ErrBadQuery)
	_, err = s.SearchLogs(t.Context(), LogQuery{Start: t0, End: t0.Add(-m)})
	require.ErrorIs(t, err, ErrBadQuery)
}
