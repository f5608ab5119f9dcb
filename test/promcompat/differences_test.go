package promcompat

import (
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// answer is one server's answer to one query.
type answer struct {
	res queryResult
	err error
}

// difference is a query whose answer differs on purpose between Prometheus
// 2.42 and Vigil, which embeds the Prometheus 3 engine. Each is described in
// docs/promql-compat.md; check asserts exactly the documented difference,
// so that a change on either side shows up.
type difference struct {
	name  string
	query string
	at    int64
	check func(t *testing.T, env *compatEnv, prom, vigil answer)
}

// lastScrapeBefore returns the time of the last scrape of tg before d.
func lastScrapeBefore(tg scrapeTarget, d time.Duration) int64 {
	for k := tg.count() - 1; k >= 0; k-- {
		if rel(tg.at(k)) < d {
			return tg.at(k)
		}
	}
	return 0
}

func differences() []difference {
	// A time on the sample grid of gpu-node-01's dcgm-exporter.
	onGrid := dcgmTarget(0).at(100)
	offGrid := evalAt(30 * time.Minute)
	gpu0 := `DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-01", gpu="0"}`
	return []difference{
		{
			name:  "left-open range selector",
			query: gpu0 + "[1m]",
			at:    onGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				p, v := requireSingle(t, prom, "prometheus"), requireSingle(t, vigil, "vigil")
				// 2.x: [t-1m, t] holds the samples at t-1m, t-30s and t;
				// 3.x: (t-1m, t] leaves out the one at t-1m.
				require.Equal(t, []int64{onGrid - 60_000, onGrid - 30_000, onGrid}, pointTimes(p))
				require.Equal(t, pointTimes(p)[1:], pointTimes(v))
			},
		},
		{
			name:  "left-open range selector in count_over_time",
			query: "count_over_time(" + gpu0 + "[5m])",
			at:    onGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				require.Equal(t, 11.0, requireSingle(t, prom, "prometheus").Points[0].V)
				require.Equal(t, 10.0, requireSingle(t, vigil, "vigil").Points[0].V)
			},
		},
		{
			name:  "left-open subquery range",
			query: "count_over_time(" + gpu0 + "[10m:1m])",
			// On the subquery's step grid (a whole minute).
			at: clusterStart + time.Hour.Milliseconds(),
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				require.Equal(t, 11.0, requireSingle(t, prom, "prometheus").Points[0].V)
				require.Equal(t, 10.0, requireSingle(t, vigil, "vigil").Points[0].V)
			},
		},
		{
			name:  "left-open lookback delta",
			query: `DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-02", gpu="0"}`,
			// Exactly the lookback delta after the last sample before the
			// reboot: 2.x still sees it, 3.x does not.
			at: lastScrapeBefore(dcgmTarget(1), nodeRebootAt) + (5 * time.Minute).Milliseconds(),
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				requireSingle(t, prom, "prometheus")
				require.NoError(t, vigil.err)
				require.Empty(t, vigil.res.Series)
			},
		},
		{
			name:  "rate extrapolation limited to half an interval",
			query: `rate(node_network_receive_bytes_total{instance="gpu-node-02:9100", device="ib0"}[5m])`,
			// The window begins while gpu-node-02 is down, and the counter
			// restarted with 80 % of an interval's increase.
			at:    evalAt(140 * time.Minute),
			check: checkRateExtrapolation,
		},
		{
			name:  "atan2 drops the metric name",
			query: `DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-node-01", gpu="3"} atan2 DCGM_FI_DEV_GPU_TEMP`,
			at:    offGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				p, v := requireSingle(t, prom, "prometheus"), requireSingle(t, vigil, "vigil")
				require.Equal(t, "DCGM_FI_DEV_GPU_UTIL", p.Metric["__name__"])
				require.NotContains(t, v.Metric, "__name__")
				withoutName := maps.Clone(p.Metric)
				delete(withoutName, "__name__")
				require.Equal(t, withoutName, v.Metric)
				require.True(t, sameFloat(p.Points[0].V, v.Points[0].V))
			},
		},
		{
			name: "avg with compensated summation",
			// The utilisations are integers: their sum is exact, and so is
			// 3's avg (a Kahan sum divided by the count), while 2.42's
			// running mean picks up rounding noise.
			query: "avg(DCGM_FI_DEV_GPU_UTIL) - sum(DCGM_FI_DEV_GPU_UTIL) / count(DCGM_FI_DEV_GPU_UTIL)",
			at:    evalAt(5 * time.Minute),
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				p := requireSingle(t, prom, "prometheus").Points[0].V
				require.Equal(t, 0.0, requireSingle(t, vigil, "vigil").Points[0].V)
				require.NotZero(t, p, "2.42's running mean was exact here: pick a time where it is not")
				require.Less(t, math.Abs(p), 1e-12)
			},
		},
		{
			name:  "holt_winters is gone",
			query: "holt_winters(" + gpu0 + "[10m], 0.5, 0.5)",
			at:    offGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				requireSingle(t, prom, "prometheus")
				requireAPIError(t, vigil, "bad_data", `unknown function with name "holt_winters"`)
			},
		},
		{
			name:  "double_exponential_smoothing is experimental",
			query: "double_exponential_smoothing(" + gpu0 + "[10m], 0.5, 0.5)",
			at:    offGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				requireAPIError(t, prom, "bad_data", `unknown function with name "double_exponential_smoothing"`)
				requireAPIError(t, vigil, "bad_data", "double_exponential_smoothing")
			},
		},
		{
			name:  "le of classic histograms normalised on ingestion",
			query: "count by (le) (gateway_request_duration_seconds_bucket)",
			at:    offGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				require.NoError(t, prom.err)
				require.NoError(t, vigil.err)
				promLe, vigilLe := labelValuesOf(prom.res, "le"), labelValuesOf(vigil.res, "le")
				require.Equal(t, []string{"+Inf", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "10", "2.5", "5"}, promLe)
				require.Equal(t, []string{"+Inf", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "10.0", "2.5", "5.0"}, vigilLe)
			},
		},
		{
			name:  "le selector written the Go client's way",
			query: `gateway_request_duration_seconds_bucket{le="1"}`,
			at:    offGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				requireSingle(t, prom, "prometheus")
				require.NoError(t, vigil.err)
				require.Empty(t, vigil.res.Series, `Vigil stores le="1.0"`)
			},
		},
		{
			name:  "regex dot matches newline",
			query: `count(kube_pod_annotations{annotation_description=~"Llama.*platform"})`,
			at:    offGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				require.NoError(t, prom.err)
				require.Empty(t, prom.res.Series, "2.x: . does not match the newline in the value")
				require.Equal(t, 1.0, requireSingle(t, vigil, "vigil").Points[0].V)
			},
		},
		{
			name:  "quoted UTF-8 metric name",
			query: `{"vllm:num_requests_running", pod="vllm-0"}`,
			at:    offGrid,
			check: func(t *testing.T, env *compatEnv, prom, vigil answer) {
				requireAPIError(t, prom, "bad_data", "parse error")
				plain, err := env.vigil.query(t.Context(), `vllm:num_requests_running{pod="vllm-0"}`, offGrid)
				require.NoError(t, err)
				require.NoError(t, vigil.err)
				require.NotEmpty(t, plain.Series)
				require.Empty(t, diffResults(plain, vigil.res, "plain selector", "quoted selector", false))
			},
		},
		{
			name:  "label_replace to a UTF-8 label name",
			query: `label_replace(vllm:num_requests_running{pod="vllm-0"}, "k8s.pod.name", "$1", "pod", "(.*)")`,
			at:    offGrid,
			check: func(t *testing.T, _ *compatEnv, prom, vigil answer) {
				requireAPIError(t, prom, "execution", `invalid destination label name in label_replace(): k8s.pod.name`)
				require.Equal(t, "vllm-0", requireSingle(t, vigil, "vigil").Metric["k8s.pod.name"])
			},
		},
	}
}

func testDifferences(t *testing.T, env *compatEnv) {
	for _, d := range differences() {
		t.Run(d.name, func(t *testing.T) {
			var prom, vigil answer
			prom.res, prom.err = env.prom.query(t.Context(), d.query, d.at)
			vigil.res, vigil.err = env.vigil.query(t.Context(), d.query, d.at)
			t.Logf("%s at %s", d.query, formatSeconds(d.at))
			d.check(t, env, prom, vigil)
		})
	}
}

// checkRateExtrapolation recomputes rate() from the raw samples with the
// extrapolation of Prometheus 2.42 (before prometheus/prometheus#13725,
// released in 2.51) and of Prometheus 3, and requires each server to give
// its own.
func checkRateExtrapolation(t *testing.T, env *compatEnv, prom, vigil answer) {
	const window = 5 * time.Minute
	at := evalAt(140 * time.Minute)
	raw, err := env.vigil.query(t.Context(), `node_network_receive_bytes_total{instance="gpu-node-02:9100", device="ib0"}[5m]`, at)
	require.NoError(t, err)
	samples := requireSingle(t, answer{res: raw}, "vigil").Points
	require.GreaterOrEqual(t, len(samples), 2)

	first, last := samples[0], samples[len(samples)-1]
	increase := last.V - first.V
	sampled := float64(last.T-first.T) / 1000
	avg := sampled / float64(len(samples)-1)
	threshold := avg * 1.1
	toStart := float64(first.T-(at-window.Milliseconds())) / 1000
	toEnd := float64(at-last.T) / 1000
	toZero := sampled * first.V / increase
	if toEnd >= threshold {
		toEnd = avg / 2
	}
	rate := func(start float64) float64 { return increase * (sampled + start + toEnd) / sampled / window.Seconds() }

	// 2.42: the zero point limits the start first, then the threshold applies.
	old := math.Min(toStart, toZero)
	if old >= threshold {
		old = avg / 2
	}
	// 3: the threshold applies first (at most half an interval), then the
	// zero point.
	cur := toStart
	if cur >= threshold {
		cur = avg / 2
	}
	cur = math.Min(cur, toZero)
	require.Greater(t, toStart, threshold, "the window must begin well before the first sample")
	require.False(t, sameFloat(rate(old), rate(cur)), "the data does not exercise the difference")

	t.Logf("extrapolated to the start: %.3f s in 2.42, %.3f s in 3 (zero point %.3f s, first sample %.3f s after the window's start)", old, cur, toZero, toStart)
	require.True(t, sameFloat(rate(old), requireSingle(t, prom, "prometheus").Points[0].V), "Prometheus 2.42: want %g", rate(old))
	require.True(t, sameFloat(rate(cur), requireSingle(t, vigil, "vigil").Points[0].V), "Vigil: want %g", rate(cur))
}

// requireSingle requires a successful answer with exactly one series.
func requireSingle(t *testing.T, a answer, who string) resultSeries {
	t.Helper()
	require.NoError(t, a.err, who)
	require.Len(t, a.res.Series, 1, "%s: want one series", who)
	require.NotEmpty(t, a.res.Series[0].Points, who)
	return a.res.Series[0]
}

// requireAPIError requires an error answer of type typ whose message
// contains msg.
func requireAPIError(t *testing.T, a answer, typ, msg string) {
	t.Helper()
	var e *apiError
	require.ErrorAs(t, a.err, &e)
	require.Equal(t, typ, e.Type, e.Msg)
	require.Contains(t, e.Msg, msg)
}

func pointTimes(s resultSeries) []int64 {
	ts := make([]int64, len(s.Points))
	for i, p := range s.Points {
		ts[i] = p.T
	}
	return ts
}

// labelValuesOf returns the sorted values of label name in r.
func labelValuesOf(r queryResult, name string) []string {
	var vs []string
	for _, s := range r.Series {
		vs = append(vs, s.Metric[name])
	}
	slices.Sort(vs)
	return vs
}
