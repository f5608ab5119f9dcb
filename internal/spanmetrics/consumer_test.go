package spanmetrics

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const (
	server   = ptrace.SpanKindServer
	client   = ptrace.SpanKindClient
	internal = ptrace.SpanKindInternal
)

// chatTrace is one request: gateway → app → vector DB, two model calls of
// which the first fails (a 500) and the second retries it, and a tool call
// that times out, to a tool with no spans of its own.
func chatTrace(tid byte) ptrace.Traces {
	ms := time.Millisecond
	gen := func(extra map[string]any) map[string]any {
		m := map[string]any{"gen_ai.request.model": "llama-8b", "gen_ai.provider.name": "vllm"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	return build(tid,
		tspan{service: "gw", name: "POST /v1/chat", kind: server, id: 1, dur: 8 * time.Second, attrs: map[string]any{"tenant.id": "acme"}},
		tspan{service: "gw", name: "router app", kind: client, id: 2, parent: 1, start: 10 * ms, dur: 7900 * ms},
		tspan{service: "app", name: "POST /api/chat", kind: server, id: 3, parent: 2, start: 11 * ms, dur: 7800 * ms, attrs: map[string]any{"res:tenant.id": "acme"}},
		tspan{service: "app", name: "search", kind: client, id: 4, parent: 3, start: 20 * ms, dur: 300 * ms, attrs: map[string]any{"db.system.name": "qdrant", "server.address": "vdb.svc"}},
		tspan{service: "vdb", name: "search", kind: server, id: 5, parent: 4, start: 21 * ms, dur: 3 * ms},
		tspan{service: "app", name: "chat llama-8b", kind: client, id: 6, parent: 3, start: 400 * ms, dur: 6 * time.Second, err: true, attrs: gen(map[string]any{"error.type": "500"})},
		tspan{service: "llm", name: "llm_request", kind: server, id: 7, parent: 6, start: 401 * ms, dur: 5900 * ms, err: true, attrs: gen(map[string]any{"error.type": "500"})},
		tspan{service: "app", name: "chat llama-8b", kind: client, id: 8, parent: 3, start: 6500 * ms, dur: 1000 * ms, attrs: gen(nil)},
		tspan{service: "llm", name: "llm_request", kind: server, id: 9, parent: 8, start: 6501 * ms, dur: 990 * ms, attrs: gen(nil)},
		tspan{service: "app", name: "GET", kind: client, id: 10, parent: 3, start: 7600 * ms, dur: 150 * ms, err: true, attrs: map[string]any{"peer.service": "web-search", "error.type": "TimeoutError", "http.request.resend_count": 1}},
	)
}

func TestSpanMetricsOfKnownTraces(t *testing.T) {
	c, rec, _ := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(1)))
	require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(2)))

	base := func(kv ...string) []string { return kv }
	calls := func(kv ...string) float64 { return rec.value(t, key(MetricCalls, kv...)) }

	root := base("service_name", "gw", "span_name", "POST /v1/chat", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET", "tenant", "acme")
	require.Equal(t, 2.0, calls(root...))
	// The tenant comes from the resource when the span lacks it.
	require.Equal(t, 2.0, calls("service_name", "app", "span_name", "POST /api/chat", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET", "tenant", "acme"))
	// Errors by model, provider and error type.
	failed := base("service_name", "app", "span_name", "chat llama-8b", "span_kind", "SPAN_KIND_CLIENT", "status_code", "STATUS_CODE_ERROR",
		"gen_ai_request_model", "llama-8b", "gen_ai_provider_name", "vllm", "error_type", "500")
	require.Equal(t, 2.0, calls(failed...))
	ok := base("service_name", "app", "span_name", "chat llama-8b", "span_kind", "SPAN_KIND_CLIENT", "status_code", "STATUS_CODE_UNSET",
		"gen_ai_request_model", "llama-8b", "gen_ai_provider_name", "vllm")
	require.Equal(t, 2.0, calls(ok...))
	// The second model call repeats a failed sibling: a retry.
	require.Equal(t, 2.0, rec.value(t, key(MetricRetries, ok...)))
	require.False(t, rec.has(key(MetricRetries, failed...)), "the first call is no retry")
	// The tool call timed out and says it is a retry.
	tool := base("service_name", "app", "span_name", "GET", "span_kind", "SPAN_KIND_CLIENT", "status_code", "STATUS_CODE_ERROR", "error_type", "TimeoutError")
	require.Equal(t, 2.0, rec.value(t, key(MetricTimeouts, tool...)))
	require.Equal(t, 2.0, rec.value(t, key(MetricRetries, tool...)))
	require.False(t, rec.has(key(MetricTimeouts, failed...)))
	// Ten spans a trace, ten series.
	require.Len(t, rec.series(MetricCalls), 10)

	// The 3 ms vector search is in the 4 ms bucket and every one above.
	vdb := base("service_name", "vdb", "span_name", "search", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET")
	bucket := func(le string) float64 { return rec.value(t, key(MetricDuration+"_bucket", append(vdb, "le", le)...)) }
	require.Equal(t, 0.0, bucket("0.002"))
	require.Equal(t, 2.0, bucket("0.004"))
	require.Equal(t, 2.0, bucket("120"))
	require.Equal(t, 2.0, bucket("+Inf"))
	require.InDelta(t, 0.006, rec.value(t, key(MetricDuration+"_sum", vdb...)), 1e-9)
	require.Equal(t, 2.0, rec.value(t, key(MetricDuration+"_count", vdb...)))
	// The 5.9 s inference falls in the 10 s bucket, the 8 s root too; the
	// extended buckets are there.
	llm := base("service_name", "llm", "span_name", "llm_request", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_ERROR",
		"gen_ai_request_model", "llama-8b", "gen_ai_provider_name", "vllm", "error_type", "500")
	require.Equal(t, 0.0, rec.value(t, key(MetricDuration+"_bucket", append(llm, "le", "5")...)))
	require.Equal(t, 2.0, rec.value(t, key(MetricDuration+"_bucket", append(llm, "le", "10")...)))
	require.Len(t, rec.series(MetricDuration+"_bucket"), 10*(len(DefaultBuckets)+1))
}

func TestSpanMetricsExemplars(t *testing.T) {
	c, rec, _ := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(1)))
	require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(2)))
	require.NoError(t, c.Flush(t.Context()))

	vdb := []string{"service_name", "vdb", "span_name", "search", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET"}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	exs := rec.exemplars[key(MetricCalls, vdb...)]
	// One per flush that had a fresh one: trace 1, then trace 2, then none.
	require.Len(t, exs, 2)
	require.Equal(t, "00000000000000000000000000000001", exs[0].Labels.Get("trace_id"))
	require.Equal(t, "00000000000000000000000000000002", exs[1].Labels.Get("trace_id"))
	require.Equal(t, "0000000000000005", exs[1].Labels.Get("span_id"))
	require.Equal(t, 1.0, exs[1].Value)
	require.Equal(t, t0.Add(24*time.Millisecond).UnixMilli(), exs[1].Ts)
	bex := rec.exemplars[key(MetricDuration+"_bucket", append(vdb, "le", "0.004")...)]
	require.Len(t, bex, 2)
	require.InDelta(t, 0.003, bex[1].Value, 1e-9)
	require.Empty(t, rec.exemplars[key(MetricDuration+"_bucket", append(vdb, "le", "0.002")...)])
}

func TestServiceGraph(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(1)))

	edge := func(cl, sv, conn string) []string {
		kv := []string{"client", cl, "server", sv}
		if conn != "" {
			kv = append(kv, "connection_type", conn)
		}
		return kv
	}
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edge("gw", "app", "")...)))
	require.Equal(t, 0.0, rec.value(t, key(MetricGraphFailed, edge("gw", "app", "")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edge("app", "vdb", "database")...)))
	require.Equal(t, 2.0, rec.value(t, key(MetricGraphRequests, edge("app", "llm", "")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphFailed, edge("app", "llm", "")...)))
	// Client and server latency: 0.3 s seen by the app, 3 ms by the DB.
	require.InDelta(t, 0.3, rec.value(t, key(MetricGraphClientSeconds+"_sum", edge("app", "vdb", "database")...)), 1e-9)
	require.InDelta(t, 0.003, rec.value(t, key(MetricGraphServerSeconds+"_sum", edge("app", "vdb", "database")...)), 1e-9)
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphServerSeconds+"_bucket", append(edge("app", "vdb", "database"), "le", "0.004")...)))
	// The tool and the user wait for their other half.
	require.False(t, rec.has(key(MetricGraphRequests, edge("app", "web-search", "virtual_node")...)))
	_, _, pending := c.SeriesCount()
	require.Equal(t, 2, pending)

	clk.add(11 * time.Second)
	require.NoError(t, c.Flush(t.Context()))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edge("app", "web-search", "virtual_node")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphFailed, edge("app", "web-search", "virtual_node")...)))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, edge("user", "gw", "virtual_node")...)))
	_, edges, pending := c.SeriesCount()
	require.Equal(t, 0, pending)
	require.Equal(t, 5, edges)
}

func TestServiceGraphPairsAcrossBatches(t *testing.T) {
	c, rec, clk := newTestConsumer(t, nil)
	ms := time.Millisecond
	// The server half arrives first, in a batch of its own.
	require.NoError(t, c.ConsumeTraces(t.Context(), build(7,
		tspan{service: "b", name: "GET /x", kind: server, id: 2, parent: 1, start: ms, dur: 5 * ms, err: true})))
	clk.add(5 * time.Second)
	require.NoError(t, c.ConsumeTraces(t.Context(), build(7,
		tspan{service: "a", name: "GET", kind: client, id: 1, parent: 9, dur: 7 * ms, attrs: map[string]any{"server.address": "b.svc"}})))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphFailed, "client", "a", "server", "b")))
	// A server half whose client never comes, and that has a parent, is
	// dropped when it expires.
	require.NoError(t, c.ConsumeTraces(t.Context(), build(8,
		tspan{service: "b", name: "GET /x", kind: server, id: 2, parent: 1, dur: 5 * ms})))
	clk.add(time.Minute)
	require.NoError(t, c.Flush(t.Context()))
	require.Equal(t, 1.0, rec.value(t, key(MetricGraphRequests, "client", "a", "server", "b")))
	require.Len(t, rec.series(MetricGraphRequests), 1)
}

func TestSpanMetricsOverflow(t *testing.T) {
	c, rec, _ := newTestConsumer(t, func(c *Config) { c.MaxSeries = 2; c.MaxEdges = 1 })
	require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(1)))
	require.Len(t, rec.series(MetricCalls), 3)
	// Eight series did not fit: their ten spans less the first two.
	require.Equal(t, 8.0, rec.value(t, key(MetricCalls, "otel_metric_overflow", "true")))
	require.Equal(t, 8.0, rec.value(t, key(MetricDuration+"_count", "otel_metric_overflow", "true")))
	require.Len(t, rec.series(MetricGraphRequests), 2)
	require.Equal(t, 3.0, rec.value(t, key(MetricGraphRequests, "otel_metric_overflow", "true")))
}

func TestFlushTimestamps(t *testing.T) {
	t.Run("increasing on a stopped clock", func(t *testing.T) {
		c, rec, clk := newTestConsumer(t, nil)
		series := key(MetricCalls, "service_name", "vdb", "span_name", "search", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET")
		require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(1)))
		first := rec.times[series]
		require.Equal(t, clk.now().UnixMilli(), first)
		require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(2)))
		require.Equal(t, first+1, rec.times[series])
	})
	t.Run("every flush interval", func(t *testing.T) {
		c, rec, clk := newTestConsumer(t, func(c *Config) { c.FlushInterval.Set("30s") })
		require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(1)))
		require.Equal(t, 0, rec.commits)
		clk.add(29 * time.Second)
		require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(2)))
		require.Equal(t, 0, rec.commits)
		clk.add(time.Second)
		require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(3)))
		require.Equal(t, 1, rec.commits)
		require.Equal(t, 3.0, rec.value(t, key(MetricCalls, "service_name", "gw", "span_name", "POST /v1/chat", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET", "tenant", "acme")))
	})
}

func TestSpanMetricsDimensionsOnlyWherePresent(t *testing.T) {
	c, rec, _ := newTestConsumer(t, func(c *Config) { c.TenantAttribute = "org" })
	require.NoError(t, c.ConsumeTraces(t.Context(), build(3,
		tspan{service: "a", name: "x", kind: internal, id: 1, dur: time.Millisecond, attrs: map[string]any{"org": "o1", "tenant.id": "ignored"}},
		tspan{service: "", name: "y", kind: ptrace.SpanKindUnspecified, id: 2, dur: -time.Millisecond})))
	require.Equal(t, 1.0, rec.value(t, key(MetricCalls, "service_name", "a", "span_name", "x", "span_kind", "SPAN_KIND_INTERNAL", "status_code", "STATUS_CODE_UNSET", "tenant", "o1")))
	// No service name, an unspecified kind and an end before the start.
	unknown := []string{"service_name", "unknown_service", "span_name", "y", "span_kind", "SPAN_KIND_UNSPECIFIED", "status_code", "STATUS_CODE_UNSET"}
	require.Equal(t, 1.0, rec.value(t, key(MetricDuration+"_bucket", append(unknown, "le", "0.002")...)))
	for _, s := range rec.series(MetricCalls) {
		rec.mu.Lock()
		l := rec.lbls[s]
		rec.mu.Unlock()
		l.Range(func(l labels.Label) { require.NotEmpty(t, l.Value, s) })
	}
}

func TestConfigValidate(t *testing.T) {
	f := func(mod func(*Config), want string) {
		t.Helper()
		cfg := DefaultConfig()
		mod(&cfg)
		err := cfg.Validate()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, want)
	}
	f(func(*Config) {}, "")
	f(func(c *Config) { c.TenantAttribute = "" }, "")
	f(func(c *Config) { c.MaxSeries = 0 }, "max_series must be at least 1")
	f(func(c *Config) { c.MaxEdges = 0 }, "max_edges must be at least 1")
	f(func(c *Config) { c.MaxPendingEdges = -1 }, "max_pending_edges")
	f(func(c *Config) { c.Buckets = nil }, "buckets must not be empty")
	f(func(c *Config) { c.Buckets = []float64{1, 1} }, "buckets must increase")
	f(func(c *Config) { c.Buckets = []float64{-1} }, "positive finite")
	f(func(c *Config) { c.FlushInterval = -1 }, "flush_interval")
	_, err := New(DefaultConfig(), nil, nil, nil, nil)
	require.ErrorContains(t, err, "no metric store")
}

func TestConcurrentConsumeAndFlush(t *testing.T) {
	c, rec, clk := newTestConsumer(t, func(c *Config) { c.FlushInterval.Set("1s") })
	const workers, batches = 4, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range batches {
				if err := c.ConsumeTraces(t.Context(), chatTrace(byte(w*batches+i+1))); err != nil {
					t.Error(err)
				}
				clk.add(100 * time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range batches {
			if err := c.Flush(t.Context()); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	require.NoError(t, c.Flush(t.Context()))
	root := key(MetricCalls, "service_name", "gw", "span_name", "POST /v1/chat", "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET", "tenant", "acme")
	require.Equal(t, float64(workers*batches), rec.value(t, root))
	require.Equal(t, float64(workers*batches), rec.value(t, key(MetricGraphRequests, "client", "gw", "server", "app")))
}
