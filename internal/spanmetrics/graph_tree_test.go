package spanmetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const unspecified = ptrace.SpanKindUnspecified

// edgeOf is the labels of the edge client → server.
func edgeOf(cl, sv, conn string) []string {
	kv := []string{"client", cl, "server", sv}
	if conn != "" {
		kv = append(kv, "connection_type", conn)
	}
	return kv
}

// settleAll lets every wait run out (a parent's too: treeWait) and
// flushes.
func settleAll(t *testing.T, c *Consumer, clk *clock) {
	t.Helper()
	clk.add(time.Minute)
	require.NoError(t, c.Flush(t.Context()))
	clk.add(treeWait)
	require.NoError(t, c.Flush(t.Context()))
	_, _, pending := c.SeriesCount()
	require.Zero(t, pending, "every pending half is settled")
}

// Calls recorded only as SERVER spans whose parent is a span of another
// service (no CLIENT span in between) are edges of the span tree.
func TestServiceGraphServerSpansOnly(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(1,
		tspan{service: "gw", name: "GET /", kind: server, id: 1, dur: 50 * ms},
		tspan{service: "app", name: "GET /x", kind: server, id: 2, parent: 1, start: ms, dur: 40 * ms, err: true},
		tspan{service: "db", name: "query", kind: server, id: 3, parent: 2, start: 2 * ms, dur: 30 * ms},
	)))
	// Parents known at once: no wait.
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("gw", "app", "")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphFailed, edgeOf("gw", "app", "")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("app", "db", "")...)))
	require.InDelta(t, 0.030, rec.value(t, key(MetricGraphServerSeconds+"_sum", edgeOf("app", "db", "")...)), 1e-9)
	settleAll(t, c, clk)
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("user", "gw", "virtual_node")...)))
	require.Len(t, rec.series(MetricGraphRequests), 3)
}

// Children usually end, and are exported, before their parents: the child
// waits for its parent across batches, and is placed when the parent comes.
func TestServiceGraphChildBeforeParent(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(2,
		tspan{service: "app", name: "GET /x", kind: server, id: 2, parent: 1, start: ms, dur: 40 * ms})))
	require.False(t, rec.has(key(MetricGraphRequests, edgeOf("gw", "app", "")...)))
	clk.add(3 * time.Second)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(2,
		tspan{service: "gw", name: "GET /", kind: unspecified, id: 1, dur: 50 * ms})))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("gw", "app", "")...)))
	_, _, pending := c.SeriesCount()
	require.Zero(t, pending, "the child's wait ends with its parent")
	settleAll(t, c, clk)
	require.Len(t, rec.series(MetricGraphRequests), 1)
}

// A parent can end long after its child (a request that retrieves, then
// waits for a model's answer): a server span with no client half waits
// for its parent past EdgeWait, up to treeWait; one whose parent never
// comes is dropped then, and counted.
func TestServiceGraphParentLongAfterChild(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(4,
		tspan{service: "vector-db", name: "search", kind: server, id: 2, parent: 1, start: ms, dur: 40 * ms},
		tspan{service: "vector-db", name: "search", kind: server, id: 3, parent: 9, start: ms, dur: 40 * ms})))
	// 45 s later: past EdgeWait and twice it, well inside treeWait.
	for range 9 {
		clk.add(5 * time.Second)
		require.NoError(t, c.ConsumeTraces(t.Context(), build(5,
			tspan{service: "other", name: "noise", kind: server, id: 1, dur: ms})))
	}
	require.False(t, rec.has(key(MetricGraphRequests, edgeOf("ai-app", "vector-db", "")...)))
	require.NoError(t, c.ConsumeTraces(t.Context(), build(4,
		tspan{service: "ai-app", name: "POST /chat", kind: server, id: 1, dur: 45 * time.Second})))
	require.NoError(t, c.Flush(t.Context()))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("ai-app", "vector-db", "")...)), "placed when its parent came")
	clk.add(15 * time.Second) // the roots' own waits (requests from "user") end
	require.NoError(t, c.Flush(t.Context()))
	_, _, pending := c.SeriesCount()
	require.Equal(t, 1, pending, "the orphan still waits")
	expired := testutil.ToFloat64(c.m.expired)
	clk.add(treeWait)
	require.NoError(t, c.Flush(t.Context()))
	_, _, pending = c.SeriesCount()
	require.Zero(t, pending, "the orphan's wait is over")
	require.Equal(t, expired+1, testutil.ToFloat64(c.m.expired), "and counted")
}

// A dependency that records its calls as CLIENT spans under its own
// service name, under the caller's span, is the caller's call to it.
func TestServiceGraphClientSpanUnderItsOwnName(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(3,
		tspan{service: "mysql", name: "SELECT", kind: client, id: 2, parent: 1, start: ms, dur: 20 * ms, attrs: map[string]any{"db.system": "mysql"}},
		tspan{service: "orders", name: "GET /orders", kind: server, id: 1, dur: 30 * ms},
		// A client span of the caller's own, unanswered and naming no
		// peer, is no edge (as before).
		tspan{service: "orders", name: "GET", kind: client, id: 3, parent: 1, start: 25 * ms, dur: 2 * ms},
	)))
	settleAll(t, c, clk)
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("orders", "mysql", "database")...)))
	require.InDelta(t, 0.020, rec.value(t, key(MetricGraphClientSeconds+"_sum", edgeOf("orders", "mysql", "database")...)), 1e-9)
	require.ElementsMatch(t, []string{
		key(MetricGraphRequests, edgeOf("orders", "mysql", "database")...),
		key(MetricGraphRequests, edgeOf("user", "orders", "virtual_node")...),
	}, rec.series(MetricGraphRequests))
}

// Spans with no kind at all (as Train Ticket's traces record them): each
// span under another service's span is a call; spans under their own
// service's make none, and a fan-out counts every call.
func TestServiceGraphSpansWithoutKind(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(4,
		// Exported children first, as a batch processor does.
		tspan{service: "c", name: "find", kind: unspecified, id: 4, parent: 3, start: 5 * ms, dur: 4 * ms},
		tspan{service: "c", name: "find", kind: unspecified, id: 5, parent: 3, start: 10 * ms, dur: 6 * ms, err: true},
		tspan{service: "b", name: "handle", kind: unspecified, id: 3, parent: 2, start: 3 * ms, dur: 20 * ms},
		tspan{service: "b", name: "POST /b", kind: unspecified, id: 2, parent: 1, start: 2 * ms, dur: 25 * ms},
		tspan{service: "a", name: "GET /", kind: unspecified, id: 1, dur: 30 * ms},
	)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("a", "b", "")...)))
	require.Equal(t, 2.0, rec.value(t, key(MetricGraphRequests, edgeOf("b", "c", "")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphFailed, edgeOf("b", "c", "")...)))
	require.InDelta(t, 0.010, rec.value(t, key(MetricGraphServerSeconds+"_sum", edgeOf("b", "c", "")...)), 1e-9)
	require.False(t, rec.has(key(MetricGraphRequests, edgeOf("b", "b", "")...)))
	settleAll(t, c, clk)
	require.Len(t, rec.series(MetricGraphRequests), 2)
}

// A CLIENT span answered by a span of no kind in another service pairs
// with it once the wait is over; a span of no kind of the client's own
// service under it (instrumentation detail) is no call.
func TestServiceGraphClientAnsweredBySpanWithoutKind(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(5,
		tspan{service: "b", name: "handle", kind: unspecified, id: 3, parent: 2, start: 3 * ms, dur: 20 * ms},
		tspan{service: "a", name: "encode", kind: internal, id: 4, parent: 2, start: 2 * ms, dur: ms},
		tspan{service: "a", name: "POST b", kind: client, id: 2, parent: 1, start: 2 * ms, dur: 25 * ms, attrs: map[string]any{"peer.service": "b"}},
		tspan{service: "a", name: "GET /", kind: server, id: 1, dur: 30 * ms},
	)))
	settleAll(t, c, clk)
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("a", "b", "")...)))
	require.InDelta(t, 0.025, rec.value(t, key(MetricGraphClientSeconds+"_sum", edgeOf("a", "b", "")...)), 1e-9)
	require.InDelta(t, 0.020, rec.value(t, key(MetricGraphServerSeconds+"_sum", edgeOf("a", "b", "")...)), 1e-9)
	// Not also a virtual node edge to the peer, nor a→a.
	require.ElementsMatch(t, []string{
		key(MetricGraphRequests, edgeOf("a", "b", "")...),
		key(MetricGraphRequests, edgeOf("user", "a", "virtual_node")...),
	}, rec.series(MetricGraphRequests))
}

// A client/server pair is counted once, whatever spans of no kind sit
// under the client span besides.
func TestServiceGraphPairNotCountedTwice(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(6,
		tspan{service: "a", name: "GET /", kind: server, id: 1, dur: 30 * ms},
		tspan{service: "a", name: "POST b", kind: client, id: 2, parent: 1, start: 2 * ms, dur: 25 * ms},
		tspan{service: "b", name: "POST /b", kind: server, id: 3, parent: 2, start: 3 * ms, dur: 20 * ms},
	)))
	clk.add(2 * time.Second)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(6,
		tspan{service: "b", name: "late", kind: unspecified, id: 4, parent: 2, start: 3 * ms, dur: ms})))
	settleAll(t, c, clk)
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("a", "b", "")...)))
}

// The spans the tree waits on are bounded by MaxPendingEdges, as the
// halves of requests are; past it they are dropped and counted.
func TestServiceGraphTreeBounded(t *testing.T) {
	c, _, clk := newTestConsumer(t, func(cfg *Config) { cfg.MaxPendingEdges = 4 })
	td := ptrace.NewTraces()
	for i := range 20 {
		addTrace(td, byte(i+1), tspan{service: "b", name: "x", kind: unspecified, id: 2, parent: 1, dur: time.Millisecond})
	}
	require.NoError(t, c.ConsumeTraces(t.Context(), td))
	_, _, pending := c.SeriesCount()
	require.Equal(t, 4, pending)
	c.mu.Lock()
	require.LessOrEqual(t, len(c.seen), 4)
	c.mu.Unlock()
	settleAll(t, c, clk)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.seen, "the index forgets what it no longer needs")
}

// Server spans of several services under one span of their caller's, the
// children first: each is a request (the caller's own span is no call, so
// they share its wait).
func TestServiceGraphServerFanOut(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(7,
		tspan{service: "vdb", name: "search", kind: server, id: 2, parent: 1, start: ms, dur: 5 * ms},
		tspan{service: "llm", name: "generate", kind: server, id: 3, parent: 1, start: 6 * ms, dur: 50 * ms},
		tspan{service: "llm", name: "generate", kind: server, id: 4, parent: 1, start: 60 * ms, dur: 50 * ms, err: true},
	)))
	clk.add(time.Second)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(7,
		tspan{service: "app", name: "POST /chat", kind: server, id: 1, parent: 9, dur: 120 * ms})))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("app", "vdb", "")...)))
	require.Equal(t, 2.0, rec.value(t, key(MetricGraphRequests, edgeOf("app", "llm", "")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphFailed, edgeOf("app", "llm", "")...)))
	clk.add(time.Minute)
	require.NoError(t, c.Flush(t.Context()))
}

// A span of no kind that names what it calls (peer.service, ...) is a
// call: to a virtual node when nothing answers it, to the answering
// service when a span of it does.
func TestServiceGraphSpanWithoutKindNamingAPeer(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	require.NoError(t, c.ConsumeTraces(t.Context(), build(8,
		tspan{service: "app", name: "GET", kind: unspecified, id: 2, parent: 1, start: ms, dur: 30 * ms, attrs: map[string]any{"peer.service": "search-api"}},
		tspan{service: "app", name: "query", kind: unspecified, id: 3, parent: 1, start: 40 * ms, dur: 9 * ms, attrs: map[string]any{"server.address": "db.svc"}},
		tspan{service: "db", name: "SELECT", kind: unspecified, id: 4, parent: 3, start: 41 * ms, dur: 7 * ms},
		tspan{service: "app", name: "POST /x", kind: unspecified, id: 1, dur: 60 * ms},
	)))
	settleAll(t, c, clk)
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("app", "search-api", "virtual_node")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edgeOf("app", "db", "")...)))
	require.Len(t, rec.series(MetricGraphRequests), 2)
}
