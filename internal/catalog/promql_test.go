package catalog_test

import (
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/store"
)

// openFixtures loads files into a temporary embedded store and returns it
// with the set of metric names it holds.
func openFixtures(t *testing.T, paths ...string) (store.Store, catalog.MetricSet) {
	t.Helper()
	files := make([]*fileimport.File, 0, len(paths))
	for _, p := range paths {
		files = append(files, readFixture(t, p))
	}
	now := func() time.Time { return fixtureTime }
	s, err := fileimport.OpenTemp(t.Context(), files, now, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	q, err := s.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	names, _, err := q.LabelValues(t.Context(), model.MetricNameLabel, nil)
	require.NoError(t, err)
	return s, catalog.NewMetricSet(names...)
}

// TestPromQLOnFixtures generates the PromQL of a signal from whichever
// source a store holds and evaluates it there.
func TestPromQLOnFixtures(t *testing.T) {
	c := catalog.Default()
	syn := func(name string) string { return filepath.Join("testdata/synthetic", name) }
	real := func(name string) string { return filepath.Join(realFixtures, name) }
	cases := []struct {
		name, file, signal string
		opts               catalog.QueryOptions
		metric             string // the source expected to be chosen
		expr               string // the exact query, when given
		key, entity        string // a label of the one result series and its value
		value              float64
	}{
		{name: "vLLM TTFT p95", file: syn("vllm-v1.prom"), signal: "infer.ttft", metric: "vllm:time_to_first_token_seconds",
			expr: `histogram_quantile(0.95, sum by (le, model_name, namespace, pod) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`,
			key:  "model_name", entity: "meta-llama/Llama-3.1-8B-Instruct", value: 0.4875},
		{name: "NIM TTFT p95", file: syn("nim.prom"), signal: "infer.ttft", metric: "time_to_first_token_seconds",
			expr: `histogram_quantile(0.95, sum by (le, model_name, namespace, pod) (rate(time_to_first_token_seconds_bucket[5m])))`,
			key:  "model_name", entity: "meta/llama-3.1-8b-instruct", value: 0.4875},
		{name: "SGLang TTFT p95", file: syn("sglang.prom"), signal: "infer.ttft", metric: "sglang:time_to_first_token_seconds",
			key: "model_name", entity: "Qwen/Qwen2.5-7B-Instruct", value: 0.4875},
		{name: "OTel GenAI TTFT p95", file: syn("otel-genai.prom"), signal: "infer.ttft", metric: "gen_ai_server_time_to_first_token_seconds",
			expr: `histogram_quantile(0.95, sum by (le, gen_ai_request_model, gen_ai_response_model, k8s_namespace_name, k8s_pod_name) (rate(gen_ai_server_time_to_first_token_seconds_bucket[5m])))`,
			key:  "gen_ai_request_model", entity: "gpt-oss-20b", value: 0.4875},
		{name: "TTFT p50", file: syn("vllm-v1.prom"), signal: "infer.ttft", opts: catalog.QueryOptions{Quantile: 0.5},
			metric: "vllm:time_to_first_token_seconds", key: "model_name", entity: "meta-llama/Llama-3.1-8B-Instruct", value: 0.375},
		{name: "vLLM inter-token latency", file: syn("vllm-v1.prom"), signal: "infer.itl", metric: "vllm:inter_token_latency_seconds",
			key: "model_name", entity: "meta-llama/Llama-3.1-8B-Instruct", value: 0.04875},
		{name: "NIM time per output token", file: syn("nim.prom"), signal: "infer.itl", metric: "time_per_output_token_seconds",
			key: "model_name", entity: "meta/llama-3.1-8b-instruct", value: 0.04875},
		{name: "vLLM queue depth is a gauge", file: syn("vllm-v1.prom"), signal: "infer.queue_depth", metric: "vllm:num_requests_waiting",
			expr: `sum by (model_name, namespace, pod) (vllm:num_requests_waiting)`,
			key:  "model_name", entity: "meta-llama/Llama-3.1-8B-Instruct", value: 3},
		{name: "NIM queue depth", file: syn("nim.prom"), signal: "infer.queue_depth", metric: "num_requests_waiting",
			key: "pod", entity: "llm-0", value: 2},
		{name: "SGLang queue depth", file: syn("sglang.prom"), signal: "infer.queue_depth", metric: "sglang:num_queue_reqs",
			key: "pod", entity: "sglang-0", value: 4},
		{name: "TGI queue depth", file: real("tgi.prom"), signal: "infer.queue_depth", metric: "tgi_queue_size", value: 0},
		{name: "generation tokens through rate()", file: syn("vllm-v1.prom"), signal: "infer.generation_tokens", metric: "vllm:generation_tokens_total",
			expr: `sum by (model_name, namespace, pod) (rate(vllm:generation_tokens_total[5m]))`,
			key:  "model_name", entity: "meta-llama/Llama-3.1-8B-Instruct", value: 10},
		{name: "SGLang KV cache", file: syn("sglang.prom"), signal: "infer.kv_cache_usage", metric: "sglang:token_usage",
			key: "model_name", entity: "Qwen/Qwen2.5-7B-Instruct", value: 0.75},
		{name: "NIM KV cache", file: syn("nim.prom"), signal: "infer.kv_cache_usage", metric: "gpu_cache_usage_perc",
			key: "model_name", entity: "meta/llama-3.1-8b-instruct", value: 0.25},
		// NVLink bandwidth is a gauge even where # TYPE says counter: never
		// rate() it. With one sample a rate() would return nothing.
		{name: "NVLink bandwidth typed counter, read as a gauge", file: real("dcgm-exporter-t4.prom"), signal: "gpu.nvlink_bandwidth",
			metric: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
			expr:   `sum by (Hostname, hostname, gpu, UUID, uuid, GPU_I_ID) (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL)`,
			key:    "UUID", entity: "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e", value: 0},
		{name: "NVLink bandwidth, hostname label", file: syn("dcgm-exporter-hostname.prom"), signal: "gpu.nvlink_bandwidth",
			metric: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", key: "hostname", entity: "gpu-node-06", value: 1200},
		{name: "XID count keeps the xid label", file: syn("dcgm-exporter-hostname.prom"), signal: "gpu.xid_count",
			metric: "DCGM_EXP_XID_ERRORS_COUNT", key: "xid", entity: "74", value: 1},
		{name: "NVLink CRC errors through rate()", file: syn("dcgm-exporter-hostname.prom"), signal: "gpu.nvlink_crc_flit_errors",
			metric: "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", key: "gpu", entity: "3", value: 2.0 / 15},
		{name: "MIG engine activity, old namespace", file: syn("dcgm-exporter-old-namespace.prom"), signal: "gpu.gr_engine_active",
			metric: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", key: "GPU_I_ID", entity: "1", value: 0.4},
		{name: "Triton bytes scaled to MiB", file: real("triton.prom"), signal: "gpu.fb_used", metric: "nv_gpu_memory_used_bytes",
			expr: `(sum by (node, gpu_uuid) (nv_gpu_memory_used_bytes)) * 9.5367431640625e-07`,
			key:  "gpu_uuid", entity: "GPU-951eeeeb-d284-d263-688e-d98a5306389b", value: 254},
		{name: "InfiniBand bytes per node", file: syn("node-exporter.prom"), signal: "node.ib_received_bytes",
			metric: "node_infiniband_port_data_received_bytes_total", opts: catalog.QueryOptions{By: []string{}},
			expr: `sum by (device, port) (rate(node_infiniband_port_data_received_bytes_total[5m]))`, value: 2e8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, have := openFixtures(t, tc.file)
			q, err := c.PromQL(tc.signal, have, tc.opts)
			require.NoError(t, err)
			require.Equal(t, tc.metric, q.Source.Metric)
			if tc.expr != "" {
				require.Equal(t, tc.expr, q.Expr)
			}
			v, _, err := store.Query(t.Context(), s, q.Expr, fixtureTime)
			require.NoError(t, err, q.Expr)
			vec, ok := v.(promql.Vector)
			require.True(t, ok, "%s: %v", q.Expr, v)
			require.Len(t, vec, 1, "%s: %v", q.Expr, vec)
			if tc.key != "" {
				require.Equal(t, tc.entity, vec[0].Metric.Get(tc.key), "%s: %v", q.Expr, vec[0].Metric)
			}
			if tc.value == 0 {
				require.Zero(t, vec[0].F, q.Expr)
			} else {
				require.InEpsilon(t, tc.value, vec[0].F, 1e-9, q.Expr)
			}
		})
	}
}

func TestPromQLChoice(t *testing.T) {
	c := catalog.Default()
	both := catalog.NewMetricSet("vllm:time_to_first_token_seconds_bucket", "sglang:time_to_first_token_seconds_bucket")
	qs, err := c.Queries("infer.ttft", both, catalog.QueryOptions{})
	require.NoError(t, err)
	require.Len(t, qs, 2)
	require.Equal(t, "vllm:time_to_first_token_seconds", qs[0].Source.Metric, "vLLM is preferred")
	require.Equal(t, "sglang:time_to_first_token_seconds", qs[1].Source.Metric)

	// The old and the new vLLM name: the new one wins.
	q, err := c.PromQL("infer.itl", catalog.NewMetricSet("vllm:time_per_output_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket"), catalog.QueryOptions{})
	require.NoError(t, err)
	require.Equal(t, "vllm:inter_token_latency_seconds", q.Source.Metric)
	q, err = c.PromQL("infer.itl", catalog.NewMetricSet("vllm:time_per_output_token_seconds_bucket"), catalog.QueryOptions{Window: time.Minute, Quantile: 0.99})
	require.NoError(t, err)
	require.Equal(t, `histogram_quantile(0.99, sum by (le, model_name, namespace, pod) (rate(vllm:time_per_output_token_seconds_bucket[1m])))`, q.Expr)

	_, err = c.PromQL("infer.ttft", catalog.NewMetricSet("tgi_queue_size"), catalog.QueryOptions{})
	require.True(t, errors.Is(err, catalog.ErrNoSource), "TGI has no TTFT: %v", err)
	_, err = c.PromQL("no.such_signal", catalog.NewMetricSet(), catalog.QueryOptions{})
	require.True(t, errors.Is(err, catalog.ErrUnknownSignal), "%v", err)
}

// TestPromQLParses checks that the query of every source of every signal
// parses, and that no gauge, info or stateset is ever rate()d.
func TestPromQLParses(t *testing.T) {
	c := catalog.Default()
	p := parser.NewParser(parser.Options{})
	n := 0
	for _, sig := range c.Signals() {
		for _, src := range sig.Sources {
			q := c.SourceQuery(sig, src, catalog.QueryOptions{})
			_, err := p.ParseExpr(q.Expr)
			require.NoError(t, err, "%s from %s: %s", sig.Name, src.Metric, q.Expr)
			switch src.TrueType(*sig) {
			case catalog.Counter, catalog.Histogram:
				require.Contains(t, q.Expr, "rate(", q.Expr)
			default:
				require.NotContains(t, q.Expr, "rate(", "%s is a %s: %s", src.Metric, src.TrueType(*sig), q.Expr)
			}
			n++
		}
	}
	t.Logf("%d queries parse", n)
}
