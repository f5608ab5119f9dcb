package cost_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/cost"
)

// writeOM writes an OpenMetrics file of one metric family per name, a
// sample a minute over (T0, T0+1h], each value from fn (NaN: no sample).
func writeOM(t *testing.T, series map[string]func(k int) float64) string {
	t.Helper()
	var sb strings.Builder
	byName := map[string][]string{}
	var names []string
	for s := range series {
		name, _, _ := strings.Cut(s, "{")
		if _, ok := byName[name]; !ok {
			names = append(names, name)
		}
		byName[name] = append(byName[name], s)
	}
	for _, name := range names {
		fmt.Fprintf(&sb, "# TYPE %s unknown\n", name)
		for _, s := range byName[name] {
			for k := 1; k <= 60; k++ {
				if v := series[s](k); v == v {
					fmt.Fprintf(&sb, "%s %g %d\n", s, v, 1800000000+60*k)
				}
			}
		}
	}
	sb.WriteString("# EOF\n")
	path := filepath.Join(t.TempDir(), "data.om")
	require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
	return path
}

func hourOf(t *testing.T, path string, prices string) *cost.Report {
	t.Helper()
	p, err := cost.ParsePrices("p.yaml", []byte(prices))
	require.NoError(t, err)
	t0 := time.Unix(1800000000, 0).UTC()
	rep, err := cost.Compute(t.Context(), openFiles(t, path), cost.Options{From: t0, To: t0.Add(time.Hour), Prices: p})
	require.NoError(t, err)
	return rep
}

// TestNoPodLabels: dcgm-exporter without pod attribution and no
// kube-state-metrics: allocation is unknown, every GPU-hour counts as
// unallocated, and a warning says so. GPU_UTIL is read (no profiling
// metrics), with the warning that it overstates use.
func TestNoPodLabels(t *testing.T) {
	path := writeOM(t, map[string]func(int) float64{
		`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1",modelName="Tesla T4"}`: func(int) float64 { return 50 },
		`DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="n1",modelName="Tesla T4"}`: func(int) float64 { return 0 },
	})
	rep := hourOf(t, path, "currency: USD\ngpu_hourly: {default: 0.35}\n")
	require.InDelta(t, 2.0, rep.GPUHours.Available, 1e-9)
	require.Zero(t, rep.GPUHours.Allocated)
	require.InDelta(t, 0.70, rep.Cost.Total, 0.005)
	require.InDelta(t, 0.70, rep.Cost.Unallocated, 0.005)
	require.Contains(t, rep.Warnings, "dcgm-exporter names no pod (pod attribution off) and kube-state-metrics' nvidia.com/gpu requests are missing: allocation is unknown, so every GPU-hour counts as unallocated, and the idle cost (held but unused) cannot be told from it")
	require.Contains(t, rep.Warnings, "2 GPUs report no DCGM_FI_PROF_GR_ENGINE_ACTIVE (DCGM profiling off, or a GPU without it): their use is read from DCGM_FI_DEV_GPU_UTIL, the share of time any kernel ran, which overstates use (a GPU that only polls reads busy)")
}

// TestUtilFallback: with pod labels and GPU_UTIL only, use is GPU_UTIL /
// 100; a GPU with GR_ENGINE_ACTIVE too reads that instead.
func TestUtilFallback(t *testing.T) {
	path := writeOM(t, map[string]func(int) float64{
		`DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1",modelName="Tesla T4",namespace="a",pod="p"}`:          func(int) float64 { return 40 },
		`DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="n1",modelName="Tesla T4",namespace="a",pod="p"}`:          func(int) float64 { return 90 },
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",Hostname="n1",modelName="Tesla T4",namespace="a",pod="p"}`: func(int) float64 { return 0.1 },
	})
	rep := hourOf(t, path, "currency: USD\ngpu_hourly: {Tesla T4: 1.0}\n")
	require.InDelta(t, 2.0, rep.GPUHours.Allocated, 1e-9)
	require.InDelta(t, 0.4+0.1, rep.GPUHours.Used, 1e-9)
	require.InDelta(t, 1.5, rep.Cost.Idle, 0.005)
	require.Len(t, rep.Warnings, 1)
	require.Contains(t, rep.Warnings[0], "1 GPUs report no DCGM_FI_PROF_GR_ENGINE_ACTIVE")
}

// TestPodsPartOfTheWindow: a GPU handed from one pod to another mid-hour,
// with a gap: each pod pays for its own minutes only.
func TestPodsPartOfTheWindow(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }
	path := writeOM(t, map[string]func(int) float64{
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n1",modelName="X",namespace="a",pod="first"}`: func(k int) float64 {
			if k <= 20 {
				return 1
			}
			return nan()
		},
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n1",modelName="X"}`: func(k int) float64 {
			if k > 20 && k <= 30 {
				return 0
			}
			return nan()
		},
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n1",modelName="X",namespace="b",pod="second"}`: func(k int) float64 {
			if k > 30 {
				return 0.25
			}
			return nan()
		},
	})
	rep := hourOf(t, path, "currency: USD\ngpu_hourly: {X: 6.0}\n")
	// first: 20 min at 1.0 → 2.00 allocated, 0 idle; second: 30 min at
	// 0.25 → 3.00 allocated, 2.25 idle; 10 min free → 1.00 unallocated.
	require.InDelta(t, 6.00, rep.Cost.Total, 0.005)
	require.InDelta(t, 5.00, rep.Cost.Allocated, 0.005)
	require.InDelta(t, 2.25, rep.Cost.Idle, 0.005)
	require.InDelta(t, 1.00, rep.Cost.Unallocated, 0.005)
	require.Equal(t, "b", rep.By[0].Entity["namespace"])
	require.InDelta(t, 3.00, rep.By[0].Cost, 0.005)
	require.InDelta(t, 2.00, rep.By[1].Cost, 0.005)
}

// TestClusters: data with a cluster label compares the clusters — A at
// 82% used, B at 19% — and keeps the cluster in each row's entity.
func TestClusters(t *testing.T) {
	path := writeOM(t, map[string]func(int) float64{
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{cluster="a",gpu="0",Hostname="n1",modelName="X",namespace="ml",pod="p"}`: func(int) float64 { return 0.82 },
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{cluster="b",gpu="0",Hostname="n1",modelName="X",namespace="ml",pod="p"}`: func(int) float64 { return 0.19 },
	})
	rep := hourOf(t, path, "currency: USD\ngpu_hourly: {X: 2.0}\n")
	require.Len(t, rep.Clusters, 2)
	require.Equal(t, "a", rep.Clusters[0].Cluster)
	require.InDelta(t, 0.82, rep.Clusters[0].Utilization, 1e-9)
	require.InDelta(t, 0.19, rep.Clusters[1].Utilization, 1e-9)
	require.InDelta(t, 2*0.81, rep.Clusters[1].Cost.Idle, 0.005)
	require.Len(t, rep.By, 2)
	require.Equal(t, map[string]string{"cluster": "b", "namespace": "ml"}, rep.By[0].Entity)
}

// TestOpenCostPrices: with no prices file, OpenCost's node_gpu_hourly_cost
// prices each node's GPUs in the currency given.
func TestOpenCostPrices(t *testing.T) {
	path := writeOM(t, map[string]func(int) float64{
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n1",modelName="X",namespace="a",pod="p"}`: func(int) float64 { return 0.5 },
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n2",modelName="X"}`:                       func(int) float64 { return 0 },
		`node_gpu_hourly_cost{node="n1",instance_type="a2-highgpu-1g"}`:                            func(int) float64 { return 3.0 },
		`node_gpu_hourly_cost{node="n2",instance_type="a2-highgpu-1g"}`:                            func(int) float64 { return 1.0 },
	})
	t0 := time.Unix(1800000000, 0).UTC()
	rep, err := cost.Compute(t.Context(), openFiles(t, path), cost.Options{From: t0, To: t0.Add(time.Hour), Currency: "eur"})
	require.NoError(t, err)
	require.Equal(t, "EUR", rep.Currency)
	require.InDelta(t, 4.0, rep.Cost.Total, 0.005)
	require.InDelta(t, 3.0, rep.Cost.Allocated, 0.005)
	require.InDelta(t, 1.5, rep.Cost.Idle, 0.005)
	require.InDelta(t, 1.0, rep.Cost.Unallocated, 0.005)

	_, err = cost.Compute(t.Context(), openFiles(t, writeOM(t, map[string]func(int) float64{
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="n1",modelName="X"}`: func(int) float64 { return 0 },
	})), cost.Options{From: t0, To: t0.Add(time.Hour), Currency: "EUR"})
	require.ErrorIs(t, err, cost.ErrNoPrices)
}

// TestTokenSources: every token counter of the catalog counts, once —
// SGLang's counters, TGI's length histograms' sums (not their buckets),
// OpenTelemetry GenAI's token usage by type — and a counter that restarts
// counts from zero again.
func TestTokenSources(t *testing.T) {
	gpu := func(pod string) string {
		return `DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",Hostname="` + pod + `-node",modelName="X",namespace="ml",pod="` + pod + `"}`
	}
	path := writeOM(t, map[string]func(int) float64{
		gpu("sg"):  func(int) float64 { return 1 },
		gpu("tgi"): func(int) float64 { return 1 },
		gpu("ot"):  func(int) float64 { return 1 },
		// 60 minutes × 1,000 = 60,000 prompt tokens; 2,000 a minute
		// generated, restarting at minute 31: 29 × 2,000 + 30 × 2,000.
		`sglang:prompt_tokens_total{model_name="qwen",namespace="ml",pod="sg"}`: func(k int) float64 { return float64(k) * 1000 },
		`sglang:generation_tokens_total{model_name="qwen",namespace="ml",pod="sg"}`: func(k int) float64 {
			if k > 30 {
				return float64(k-30) * 2000
			}
			return float64(k) * 2000
		},
		`tgi_request_input_length_sum{model_id="mistral",namespace="ml",pod="tgi"}`:                                      func(k int) float64 { return float64(k) * 500 },
		`tgi_request_input_length_bucket{le="+Inf",model_id="mistral",namespace="ml",pod="tgi"}`:                         func(k int) float64 { return float64(k) * 7 },
		`tgi_request_generated_tokens_sum{model_id="mistral",namespace="ml",pod="tgi"}`:                                  func(k int) float64 { return float64(k) * 250 },
		`gen_ai_client_token_usage_sum{gen_ai_request_model="gpt-x",gen_ai_token_type="input",namespace="ml",pod="ot"}`:  func(k int) float64 { return float64(k) * 100 },
		`gen_ai_client_token_usage_sum{gen_ai_request_model="gpt-x",gen_ai_token_type="output",namespace="ml",pod="ot"}`: func(k int) float64 { return float64(k) * 10 },
	})
	p, err := cost.ParsePrices("p.yaml", []byte("currency: USD\ngpu_hourly: {X: 1.0}\n"))
	require.NoError(t, err)
	t0 := time.Unix(1800000000, 0).UTC()
	rep, err := cost.Compute(t.Context(), openFiles(t, path), cost.Options{From: t0, To: t0.Add(time.Hour), Prices: p, By: cost.ByModel})
	require.NoError(t, err)
	got := map[string]cost.Tokens{}
	for _, r := range rep.By {
		got[r.Entity["model"]] = r.Tokens
	}
	// The first sample in the range is each counter's start: 59 minutes
	// of increase.
	require.Equal(t, map[string]cost.Tokens{
		"qwen":    {Prompt: 59 * 1000, Generation: 29*2000 + 30*2000},
		"mistral": {Prompt: 59 * 500, Generation: 59 * 250},
		"gpt-x":   {Prompt: 59 * 100, Generation: 59 * 10},
	}, got)
	// One GPU-hour at 1.00 for 59,000 prompt tokens: 16.95 per million.
	for _, r := range rep.By {
		if r.Entity["model"] == "qwen" {
			require.InDelta(t, 1e6/59000, *r.CostPer1MTokens.Allocation.Prompt, 0.005)
		}
	}
}
