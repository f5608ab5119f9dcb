package ui_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/traces"
	"github.com/vigil-obs/vigil/internal/ui"
)

// reqSpan is a span of a test request; times are offsets from its start.
type reqSpan struct {
	service, name string
	kind          ptrace.SpanKind
	id, parent    byte
	start, dur    time.Duration
	attrs         map[string]any
}

const traceHex = "ab000000000000000000000000000001"

// chatRequest is one request of a RAG service: the gateway calls the
// retriever, which spends most of it in a vector search (Qdrant, with no
// spans of its own), then a model server whose name must show as text.
func chatRequest(tid pcommon.TraceID, start time.Time, scale time.Duration) ptrace.Traces {
	ms := scale
	spans := []reqSpan{
		{service: "gateway", name: "POST /v1/chat", kind: ptrace.SpanKindServer, id: 1, dur: 800 * ms, attrs: map[string]any{"http.route": "/v1/chat"}},
		{service: "gateway", name: "POST /retrieve", kind: ptrace.SpanKindClient, id: 2, parent: 1, start: 10 * ms, dur: 500 * ms},
		{service: "retriever", name: "POST /retrieve", kind: ptrace.SpanKindServer, id: 3, parent: 2, start: 15 * ms, dur: 490 * ms},
		{service: "retriever", name: "qdrant search", kind: ptrace.SpanKindClient, id: 4, parent: 3, start: 40 * ms, dur: 420 * ms,
			attrs: map[string]any{"db.system.name": "qdrant", "peer.service": "qdrant"}},
		{service: "gateway", name: "POST /generate", kind: ptrace.SpanKindClient, id: 5, parent: 1, start: 520 * ms, dur: 270 * ms},
		{service: evil, name: evil, kind: ptrace.SpanKindServer, id: 6, parent: 5, start: 525 * ms, dur: 260 * ms},
	}
	td := ptrace.NewTraces()
	for _, s := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", s.service)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{0xcd, 7: s.id})
		if s.parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{0xcd, 7: s.parent})
		}
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(s.start)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(s.start + s.dur)))
		if err := sp.Attributes().FromRaw(s.attrs); err != nil {
			panic(err)
		}
	}
	return td
}

// newTraceServer serves the UI over a trace store holding n requests
// (the first, traceHex, the slowest), ten minutes before now.
func newTraceServer(t *testing.T, n int) *httptest.Server {
	t.Helper()
	cfg := traces.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.CacheBytes = 8 << 20
	clock := func() time.Time { return now }
	st, err := traces.Open(cfg, nil, prometheus.NewRegistry(), clock)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	for i := range n {
		tid := pcommon.TraceID{0xab, 15: byte(i + 1)}
		scale := time.Millisecond
		if i > 0 {
			scale = time.Millisecond / 2
		}
		require.NoError(t, st.ConsumeTraces(t.Context(), chatRequest(tid, now.Add(-10*time.Minute+time.Duration(i)*time.Second), scale)))
	}
	h, err := ui.New(ui.Options{Store: openStore(t), Traces: st, Now: clock})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestSlowPage(t *testing.T) {
	srv := newTraceServer(t, 3)
	code, body := get(t, srv, "/slow")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, `<a href="/slow" aria-current="page">Slow requests</a>`, "in the navigation")
	require.Contains(t, body, "The slowest route is POST /v1/chat: p95 800 ms over 3 requests, most of it in vector search 210 ms (median); the slowest request took 800 ms.", "the answer first")
	require.Contains(t, body, "<strong>3</strong> requests (root spans)")
	require.Contains(t, body, `<a href="/traces/`+traceHex+`">`+traceHex+`</a>`, "the slowest request links to its waterfall")
	require.Less(t, strings.Index(body, `data-trace="`+traceHex+`"`), strings.Index(body, `data-trace="ab000000000000000000000000000002"`), "slowest first")
	require.Contains(t, body, `<td class="num">800 ms</td>`)
	// The route's breakdown: the vector search has the largest share.
	require.Contains(t, body, `<span class="muted">· vector search 210 ms</span>`)
	require.Contains(t, body, `<tr data-service="qdrant">`)
	require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", "a service name shows as text")
	require.NotContains(t, body, evil)
	require.Contains(t, body, `href="/api/v1/slow?end=2026-11-12T03%3A00%3A00Z&amp;window=1h"`)

	// The window is the URL's.
	code, body = get(t, srv, "/slow?from=5m")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No traces yet")
}

func TestSlowEmpty(t *testing.T) {
	srv := newTraceServer(t, 0)
	code, body := get(t, srv, "/slow")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-verdict="no data">No traces yet: no root span started from`)
	require.NotContains(t, body, "<table")

	h, err := ui.New(ui.Options{Store: openStore(t), Now: func() time.Time { return now }})
	require.NoError(t, err)
	off := httptest.NewServer(h)
	defer off.Close()
	code, body = get(t, off, "/slow")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No traces: this Vigil keeps no trace store.")
	code, _ = get(t, off, "/traces/"+traceHex)
	require.Equal(t, http.StatusNotFound, code)
}

func TestTracePage(t *testing.T) {
	srv := newTraceServer(t, 1)
	code, body := get(t, srv, "/traces/"+traceHex)
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, "<title>Trace "+traceHex+" · Vigil</title>")
	require.Contains(t, body, `<svg class="waterfall" role="img" aria-label="waterfall of 6 spans"`)
	require.Equal(t, 6, strings.Count(body, `<rect class="bar `), "one bar per span")
	// The root at depth 0, the vector search at depth 3, indented.
	require.Contains(t, body, `<text class="span-label" x="4" y="36">gateway · POST /v1/chat</text>`)
	require.Contains(t, body, `<text class="span-label" x="40" y="96">retriever · qdrant search</text>`)
	require.Contains(t, body, `>420 ms</text>`, "the duration is labelled")
	// The critical path's shares: qdrant's 420 ms of the 800.
	require.Contains(t, body, `<tr data-service="qdrant">`)
	require.Contains(t, body, `<td>vector search</td><td class="num">420 ms</td>`)
	require.Contains(t, body, `title="52 %"`)
	// An evil service and span name are text, in the table, the label and the hover.
	require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt; · &lt;script&gt;alert(1)&lt;/script&gt;")
	require.NotContains(t, body, evil)
	require.Contains(t, body, `href="/api/v1/traces/`+traceHex+`/breakdown"`)
}

func TestTracePageErrors(t *testing.T) {
	srv := newTraceServer(t, 1)
	for _, tc := range []struct {
		name, id string
		code     int
		want     string
	}{
		{"unknown", "ab0000000000000000000000000000ff", http.StatusNotFound, "No span of trace ab0000000000000000000000000000ff is stored"},
		{"not hex", "zz000000000000000000000000000001", http.StatusBadRequest, "trace id &#34;zz000000000000000000000000000001&#34; is not hexadecimal."},
		{"short", "abc", http.StatusBadRequest, "want 32 hex digits, got 3 characters"},
		{"evil", "%3Cscript%3Ealert(1)%3C%2Fscript%3E", http.StatusBadRequest, "&lt;script&gt;alert(1)&lt;/script&gt;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, srv, "/traces/"+tc.id)
			require.Equal(t, tc.code, code)
			require.Contains(t, body, `<section class="error">`)
			require.Contains(t, body, tc.want)
			require.NotContains(t, body, evil)
		})
	}
}
