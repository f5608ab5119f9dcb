package spanmetrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
	"github.com/vigil-obs/vigil/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// simStart is when the simulated request path starts.
var simStart = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

// feedSim runs the request path for d with faults into c, one batch a
// minute, the clock at each batch's end; it returns the trace ids and the
// span count.
func feedSim(t *testing.T, c *Consumer, clk *clock, d time.Duration, faults ...reqpath.Fault) (map[string]bool, int) {
	t.Helper()
	g, err := reqpath.New(reqpath.Config{Seed: 7, Start: simStart, Duration: d, Faults: faults})
	require.NoError(t, err)
	ids := map[string]bool{}
	n := 0
	for b := range g.Batches() {
		clk.mu.Lock()
		clk.t = b.End
		clk.mu.Unlock()
		rss := b.Traces.ResourceSpans()
		for i := range rss.Len() {
			sss := rss.At(i).ScopeSpans()
			for j := range sss.Len() {
				spans := sss.At(j).Spans()
				for k := range spans.Len() {
					ids[spans.At(k).TraceID().String()] = true
					n++
				}
			}
		}
		require.NoError(t, c.ConsumeTraces(t.Context(), b.Traces))
	}
	clk.add(time.Minute)
	require.NoError(t, c.Flush(t.Context()))
	return ids, n
}

// instant evaluates q at ts and returns the values keyed by the labels of by.
func instant(t *testing.T, s store.Store, q string, ts time.Time, by ...string) map[string]float64 {
	t.Helper()
	v, _, err := store.Query(t.Context(), s, q, ts)
	require.NoError(t, err, q)
	out := map[string]float64{}
	for _, smp := range v.(promql.Vector) {
		k := ""
		for i, l := range by {
			if i > 0 {
				k += " "
			}
			k += smp.Metric.Get(l)
		}
		out[k] = smp.F
	}
	return out
}

func TestSpanMetricsInTheStore(t *testing.T) {
	clk := &clock{t: simStart}
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clk.now, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	c, err := New(Config{
		TenantAttribute: "tenant.id", MaxSeries: 10_000, MaxEdges: 1000, MaxPendingEdges: 100_000,
		EdgeWait: 0, FlushInterval: 0, Buckets: DefaultBuckets,
	}, st, clk.now, nil, nil)
	require.NoError(t, err)

	fault := reqpath.Fault{Kind: reqpath.KindTenantFailure, Entity: map[string]string{"tenant": "tenant-c"}, Onset: simStart}
	ids, spans := feedSim(t, c, clk, 10*time.Minute, fault)
	at := clk.now()

	// Every span is counted once.
	total := instant(t, st, "sum(traces_span_metrics_calls_total)", at)
	require.Equal(t, float64(spans), total[""])

	// The service graph: the path, the external tool as a virtual node,
	// the users in front of the gateway.
	edges := instant(t, st, "sum by (client, server, connection_type) (traces_service_graph_request_total)", at, "client", "server", "connection_type")
	require.ElementsMatch(t, []string{
		"user api-gateway virtual_node",
		"api-gateway ai-app ",
		"ai-app vector-db database",
		"ai-app vllm-llama-3-1-8b ",
		"ai-app vllm-llama-3-1-70b ",
		"ai-app web-search-api virtual_node",
	}, keys(edges))

	// Errors by tenant: tenant-c's vector searches fail, the others' do not.
	errs := instant(t, st, `sum by (tenant) (traces_span_metrics_calls_total{service_name="vector-db",status_code="STATUS_CODE_ERROR"})
		/ sum by (tenant) (traces_span_metrics_calls_total{service_name="vector-db"})`, at, "tenant")
	require.Greater(t, errs["tenant-c"], 0.5)
	for tenant, r := range errs {
		if tenant != "tenant-c" {
			require.Less(t, r, 0.1, tenant)
		}
	}
	// Errors by model and provider exist as dimensions.
	models := instant(t, st, `sum by (gen_ai_request_model, gen_ai_provider_name) (traces_span_metrics_calls_total{span_kind="SPAN_KIND_SERVER", gen_ai_request_model!=""})`, at, "gen_ai_request_model", "gen_ai_provider_name")
	require.ElementsMatch(t, []string{"meta-llama/Llama-3.1-8B-Instruct vllm", "meta-llama/Llama-3.1-70B-Instruct vllm"}, keys(models))
	// Retries: tenant-c's failed searches are retried once each.
	retries := instant(t, st, `sum(traces_span_metrics_retries_total{service_name="ai-app",span_name="search documents"})`, at)
	require.Greater(t, retries[""], 10.0)

	// Model inference takes seconds: the median is in the extended range.
	p50 := instant(t, st, `histogram_quantile(0.5, sum by (le) (rate(traces_span_metrics_duration_seconds_bucket{service_name="vllm-llama-3-1-8b"}[10m])))`, at)
	require.Greater(t, p50[""], 1.0)
	require.Less(t, p50[""], 60.0)

	// Metric → exemplar → trace.
	eq, err := st.ExemplarQuerier(t.Context())
	require.NoError(t, err)
	res, err := eq.Select(simStart.UnixMilli(), at.UnixMilli(), []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, MetricDuration+"_bucket"),
		labels.MustNewMatcher(labels.MatchEqual, "service_name", "vllm-llama-3-1-8b"),
	})
	require.NoError(t, err)
	require.NotEmpty(t, res)
	n := 0
	for _, r := range res {
		for _, ex := range r.Exemplars {
			require.True(t, ids[ex.Labels.Get("trace_id")], "exemplar of an unknown trace: %s", ex.Labels)
			require.Len(t, ex.Labels.Get("span_id"), 16)
			n++
		}
	}
	require.Greater(t, n, 10)
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRunFlushesAndStops(t *testing.T) {
	c, rec, _ := newTestConsumer(t, func(c *Config) { c.FlushInterval.Set("10ms") })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.NoError(t, c.ConsumeTraces(t.Context(), chatTrace(1)))
	require.Eventually(t, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.commits > 0
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
