package spanmetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// selfKey is the series of the self time's _sum or _count (suffix) of a
// span of service and name, kind SERVER unless given.
func selfKey(suffix, service, name string, kind ...ptrace.SpanKind) string {
	k := server
	if len(kind) > 0 {
		k = kind[0]
	}
	return key(MetricSelf+suffix, "service_name", service, "span_name", name,
		"span_kind", kindLabel(k), "status_code", "STATUS_CODE_UNSET")
}

// selfOf is the self time's running sum of a span series, in seconds.
func selfOf(t *testing.T, rec *recorder, service, name string, kind ...ptrace.SpanKind) float64 {
	t.Helper()
	return rec.value(t, selfKey("_sum", service, name, kind...))
}

// selfTotal is the running self time (sum, count) of the spans of service
// and name as the consumer holds it, written or not.
func selfTotal(c *Consumer, service, name string) (sum, count float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.spans {
		if s.lbls.Get(labelService) == service && s.lbls.Get(labelSpanName) == name {
			sum, count = sum+s.selfSum, count+s.selfCount
		}
	}
	return sum, count
}

// A callee that slows makes its caller's whole duration rise with it, not
// the caller's self time: the self time is the callee's.
func TestSelfTimeCalleeSlows(t *testing.T) {
	ms := time.Millisecond
	var leaf []float64 // back's self time, fast then slow
	run := func(callee time.Duration) *recorder {
		c, rec, clk := newTestConsumer(t, nil)
		require.NoError(t, c.ConsumeTraces(t.Context(), build(1,
			// The callee ends, and comes, first.
			tspan{service: "back", name: "GET /b", kind: server, id: 3, parent: 2, start: 12 * ms, dur: callee},
			tspan{service: "front", name: "GET /", kind: server, id: 1, dur: callee + 40*ms},
			tspan{service: "front", name: "call back", kind: client, id: 2, parent: 1, start: 10 * ms, dur: callee + 4*ms},
		)))
		settleAll(t, c, clk)
		sum, _ := selfTotal(c, "back", "GET /b")
		leaf = append(leaf, sum)
		return rec
	}
	fast, slow := run(20*ms), run(400*ms)
	whole := func(rec *recorder) float64 {
		return rec.value(t, key(MetricDuration+"_sum", "service_name", "front", "span_name", "GET /",
			"span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET"))
	}
	require.InDelta(t, 0.060, whole(fast), 1e-9)
	require.InDelta(t, 0.440, whole(slow), 1e-9, "the caller's whole duration holds the callee's")
	for _, rec := range []*recorder{fast, slow} {
		require.InDelta(t, 0.036, selfOf(t, rec, "front", "GET /"), 1e-9, "the caller's self time: 40 ms less the client span's 4 ms beyond the callee")
		require.InDelta(t, 0.004, selfOf(t, rec, "front", "call back", client), 1e-9, "the client span's time outside its server span")
		require.Equal(t, 1.0, rec.value(t, selfKey("_count", "front", "GET /")))
	}
	require.InDelta(t, 0.020, leaf[0], 1e-9)
	require.InDelta(t, 0.400, leaf[1], 1e-9, "the callee's self time is its whole time: it has no children")
	require.False(t, slow.has(selfKey("_sum", "back", "GET /b")), "a span with no children has its duration as self time: not written again")
}

// Children that overlap (a fan-out, asynchronous children) count once;
// a child that outlives its parent counts up to the parent's end, and one
// wholly after it (a consumer of a message) not at all.
func TestSelfTimeOverlappingChildren(t *testing.T) {
	ms := time.Millisecond
	c, rec, clk := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(2,
		tspan{service: "app", name: "handle", kind: server, id: 1, dur: 100 * ms},
		tspan{service: "app", name: "a", kind: internal, id: 2, parent: 1, start: 10 * ms, dur: 40 * ms},
		tspan{service: "app", name: "b", kind: internal, id: 3, parent: 1, start: 30 * ms, dur: 40 * ms},
		tspan{service: "app", name: "c", kind: internal, id: 4, parent: 1, start: 60 * ms, dur: 20 * ms},
		tspan{service: "app", name: "tail", kind: internal, id: 5, parent: 1, start: 90 * ms, dur: 60 * ms},
		tspan{service: "worker", name: "consume", kind: ptrace.SpanKindConsumer, id: 6, parent: 1, start: 120 * ms, dur: 30 * ms},
	)))
	settleAll(t, c, clk)
	// Busy: [10, 80] and [90, 100].
	require.InDelta(t, 0.020, selfOf(t, rec, "app", "handle"), 1e-9)
	sum, _ := selfTotal(c, "worker", "consume")
	require.InDelta(t, 0.030, sum, 1e-9)
}

// A child of another service that does not fit in its parent only by the
// hosts' clock skew is moved into it, as internal/hops and Jaeger do; an
// asynchronous child (FOLLOWS_FROM) is not, and counts only where it
// overlaps its parent.
func TestSelfTimeClockSkew(t *testing.T) {
	ms := time.Millisecond
	c, rec, clk := newTestConsumer(t, nil)
	td := build(3,
		tspan{service: "front", name: "call", kind: client, id: 1, dur: 100 * ms},
		tspan{service: "back", name: "serve", kind: server, id: 2, parent: 1, start: -5 * ms, dur: 90 * ms},
	)
	addTrace(td, 4,
		tspan{service: "front", name: "call", kind: client, id: 1, dur: 100 * ms},
		tspan{service: "back", name: "later", kind: server, id: 2, parent: 1, start: 80 * ms, dur: 90 * ms},
	)
	later := td.ResourceSpans().At(3).ScopeSpans().At(0).Spans().At(0)
	l := later.Links().AppendEmpty()
	l.SetTraceID(later.TraceID())
	l.SetSpanID(later.ParentSpanID())
	l.Attributes().PutStr("opentracing.ref_type", "follows_from")
	require.NoError(t, c.ConsumeTraces(t.Context(), td))
	settleAll(t, c, clk)
	// 10 ms (moved in whole) + 80 ms (the asynchronous child's first 20 ms).
	require.InDelta(t, 0.090, selfOf(t, rec, "front", "call", client), 1e-9)
	require.Equal(t, 2.0, rec.value(t, selfKey("_count", "front", "call", client)))
}

// A child in a later batch than its parent, within EdgeWait, is taken out
// of the parent's self time, which waits for it; a child after the wait
// is late, and counted.
func TestSelfTimeChildInLaterBatch(t *testing.T) {
	ms := time.Millisecond
	c, rec, clk := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(5,
		tspan{service: "front", name: "GET /", kind: server, id: 1, dur: 100 * ms})))
	require.False(t, rec.has(selfKey("_sum", "front", "GET /")), "no child yet")
	clk.add(3 * time.Second)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(5,
		tspan{service: "back", name: "GET /b", kind: server, id: 2, parent: 1, start: 10 * ms, dur: 70 * ms})))
	clk.add(time.Duration(DefaultConfig().EdgeWait))
	require.NoError(t, c.Flush(t.Context()))
	require.InDelta(t, 0.030, selfOf(t, rec, "front", "GET /"), 1e-9)
	sum, _ := selfTotal(c, "back", "GET /b")
	require.InDelta(t, 0.070, sum, 1e-9)

	require.NoError(t, c.ConsumeTraces(t.Context(), build(5,
		tspan{service: "db", name: "query", kind: server, id: 3, parent: 1, start: 85 * ms, dur: 10 * ms})))
	settleAll(t, c, clk)
	require.InDelta(t, 0.030, selfOf(t, rec, "front", "GET /"), 1e-9, "a late child does not move a self time already taken")
	require.Equal(t, 1.0, testutil.ToFloat64(c.m.selfLate))
	require.Empty(t, c.selfPend)
}

// A span whose children never come, or that has none, has its whole
// duration as self time once the wait is over; children whose parent
// never comes are dropped after theirs, and counted.
func TestSelfTimeChildNeverComes(t *testing.T) {
	ms := time.Millisecond
	c, rec, clk := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(6,
		tspan{service: "front", name: "GET /", kind: server, id: 1, dur: 100 * ms},
		tspan{service: "back", name: "orphan", kind: server, id: 3, parent: 9, start: 10 * ms, dur: 20 * ms},
	)))
	clk.add(time.Duration(DefaultConfig().EdgeWait))
	require.NoError(t, c.Flush(t.Context()))
	front, _ := selfTotal(c, "front", "GET /")
	require.InDelta(t, 0.100, front, 1e-9)
	orphan, _ := selfTotal(c, "back", "orphan")
	require.InDelta(t, 0.020, orphan, 1e-9, "a child's own self time does not wait for its parent")
	require.Empty(t, rec.series(MetricSelf+"_sum"), "no span had a child: every self time is a duration")
	require.Len(t, c.selfPend, 1, "the orphan waits for its parent")
	settleAll(t, c, clk)
	require.Equal(t, 1.0, testutil.ToFloat64(c.m.selfOrphan))
	require.Equal(t, 2.0, testutil.ToFloat64(c.m.selfWaited))
}

// Settle takes the self time of every waiting span, with the children in.
func TestSelfTimeSettle(t *testing.T) {
	ms := time.Millisecond
	c, rec, _ := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(7,
		tspan{service: "back", name: "GET /b", kind: server, id: 2, parent: 1, start: 10 * ms, dur: 50 * ms},
		tspan{service: "front", name: "GET /", kind: server, id: 1, dur: 100 * ms},
	)))
	require.NoError(t, c.Settle(t.Context()))
	require.InDelta(t, 0.050, selfOf(t, rec, "front", "GET /"), 1e-9)
	require.Empty(t, c.selfPend)
}

// The spans waiting are bounded by MaxPendingEdges: past it, a span's
// self time is taken at once with the children in so far, and a child
// with nowhere to wait is dropped; both are counted.
func TestSelfTimeBounded(t *testing.T) {
	ms := time.Millisecond
	c, rec, clk := newTestConsumer(t, func(cfg *Config) { cfg.MaxPendingEdges = 2 })
	for tid := byte(1); tid <= 4; tid++ {
		require.NoError(t, c.ConsumeTraces(t.Context(), build(tid,
			tspan{service: "app", name: "op", kind: server, id: 1, dur: 10 * ms},
			tspan{service: "app", name: "child", kind: internal, id: 2, parent: 1, start: ms, dur: 4 * ms},
		)))
		require.LessOrEqual(t, len(c.selfPend), 2)
	}
	settleAll(t, c, clk)
	_, leaves := selfTotal(c, "app", "child")
	require.Equal(t, 8.0, rec.value(t, selfKey("_count", "app", "op"))+leaves, "every span has a self time")
	require.Positive(t, testutil.ToFloat64(c.m.selfEarly))
	require.Positive(t, testutil.ToFloat64(c.m.selfDropped))
	// The first trace waited: its parent's self time is 6 ms; the others'
	// were taken at once, without their child (10 ms each).
	require.InDelta(t, 0.006+3*0.010, selfOf(t, rec, "app", "op"), 1e-9)
}

// A span's children are bounded by maxSelfKids: many children at once
// (one after another, overlapping) keep their union exactly; more disjoint
// ones than the bound are merged closest first, the gaps counted as the
// children's, and counted.
func TestSelfTimeManyChildren(t *testing.T) {
	const n = 3 * maxSelfKids
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		before bool // the children come before their parent
		gap    time.Duration
		self   float64
		merged bool
	}{
		{name: "overlapping, parent first", gap: -ms / 2, self: 0.010},
		{name: "overlapping, children first", before: true, gap: -ms / 2, self: 0.010},
		{name: "disjoint, parent first", gap: ms, merged: true},
		{name: "disjoint, children first", before: true, gap: ms, merged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, clk := newTestConsumer(t, nil)
			parent := build(8, tspan{service: "app", name: "loop", kind: server, id: 1, dur: 10*ms + (n-1)*(ms+tc.gap) + ms})
			kids := ptrace.NewTraces()
			for i := range n {
				addTrace(kids, 8, tspan{service: "db", name: "q", kind: server, id: 2, parent: 1, start: 10*ms + time.Duration(i)*(ms+tc.gap), dur: ms})
			}
			// Distinct span ids (tspan's are one byte).
			spans := kids.ResourceSpans()
			for i := range spans.Len() {
				spans.At(i).ScopeSpans().At(0).Spans().At(0).SetSpanID(pcommon.SpanID{6: byte(i >> 8), 7: byte(i), 0: 1})
			}
			first, second := parent, kids
			if tc.before {
				first, second = kids, parent
			}
			require.NoError(t, c.ConsumeTraces(t.Context(), first))
			require.NoError(t, c.ConsumeTraces(t.Context(), second))
			for _, e := range c.selfPend {
				require.LessOrEqual(t, len(e.kids), maxSelfKids)
			}
			settleAll(t, c, clk)
			got := selfOf(t, rec, "app", "loop")
			if !tc.merged {
				require.InDelta(t, tc.self, got, 1e-9)
				require.Zero(t, testutil.ToFloat64(c.m.selfMerged))
				return
			}
			// The true self time is 10 ms and the n-1 gaps; merging counts
			// some gaps as the children's.
			require.Less(t, got, 0.010+float64(n-1)*0.001)
			require.GreaterOrEqual(t, got, 0.010)
			require.Positive(t, testutil.ToFloat64(c.m.selfMerged))
		})
	}
}

// A parent's self time is written from the flush its duration first is,
// though it is taken only once its children can have come: the two series
// have the same history.
func TestSelfTimeWrittenWithDuration(t *testing.T) {
	ms := time.Millisecond
	c, rec, clk := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(9,
		tspan{service: "back", name: "GET /b", kind: server, id: 2, parent: 1, start: 10 * ms, dur: 50 * ms},
		tspan{service: "front", name: "GET /", kind: server, id: 1, dur: 100 * ms},
	)))
	require.Equal(t, 1.0, rec.value(t, key(MetricDuration+"_count", "service_name", "front", "span_name", "GET /",
		"span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET")))
	require.Zero(t, rec.value(t, selfKey("_count", "front", "GET /")), "written, with no self time taken yet")
	settleAll(t, c, clk)
	require.Equal(t, 1.0, rec.value(t, selfKey("_count", "front", "GET /")))
}
