package store_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/store"
)

// peerStart is the time of the first sample loaded into the peers: in the
// past, so that no backend takes it for a sample from the future.
var peerStart = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

type peerSample struct {
	lset labels.Labels
	t    int64
	v    float64
}

// peerData is an hour of scrapes every 15 s: counters with resets, a
// classic histogram and gauges. Each instance scrapes a quarter second
// later than the previous one, so that samples are off the query grid.
// Every value and timestamp is exact in float64, in decimal text and in
// VictoriaMetrics' decimal encoding.
func peerData() []peerSample {
	var out []peerSample
	counters := make([]float64, 4)
	buckets := []string{"0.1", "0.5", "1", "+Inf"}
	hist := make([]float64, len(buckets))
	for k := range 240 {
		for i := range 4 {
			ts := peerStart.Add(time.Duration(k)*15*time.Second + time.Duration(i)*250*time.Millisecond).UnixMilli()
			job := []string{"api", "api", "worker", "worker"}[i]
			inst := fmt.Sprintf("10.0.0.%d:9100", i+1)
			inc := float64((k*7+i*3)%11 + 1)
			switch {
			case i == 0 && k == 100, i == 2 && k == 170:
				counters[i] = inc // a restart
			default:
				counters[i] += inc
			}
			out = append(out,
				peerSample{labels.FromStrings("__name__", "http_requests_total", "instance", inst, "job", job), ts, counters[i]},
				peerSample{labels.FromStrings("__name__", "gpu_temp_celsius", "gpu", fmt.Sprint(i), "node", "gpu-node-01"), ts, 60 + float64((k*(i+1))%17) + 0.25*float64(k%4)},
			)
		}
		ts := peerStart.Add(time.Duration(k) * 15 * time.Second).UnixMilli()
		n := float64(k%5 + 1)
		for b := range buckets {
			hist[b] += n * float64(b+1) / float64(len(buckets))
			hist[b] = math.Round(hist[b]*4) / 4
			if b > 0 {
				hist[b] = max(hist[b], hist[b-1])
			}
			out = append(out, peerSample{labels.FromStrings("__name__", "request_duration_seconds_bucket", "job", "api", "le", buckets[b]), ts, hist[b]})
		}
	}
	return out
}

// openMetrics renders samples as OpenMetrics text (seconds, "# EOF").
func openMetrics(samples []peerSample) string {
	var b strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&b, "%s %s %.3f\n", textSeries(s.lset), formatValue(s.v), float64(s.t)/1000)
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// promText renders samples as Prometheus text exposition (milliseconds).
func promText(samples []peerSample) string {
	var b strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&b, "%s %s %d\n", textSeries(s.lset), formatValue(s.v), s.t)
	}
	return b.String()
}

func textSeries(lset labels.Labels) string {
	var parts []string
	lset.Range(func(l labels.Label) {
		if l.Name != model.MetricNameLabel {
			parts = append(parts, fmt.Sprintf("%s=%q", l.Name, l.Value))
		}
	})
	return lset.Get(model.MetricNameLabel) + "{" + strings.Join(parts, ",") + "}"
}

func formatValue(v float64) string { return fmt.Sprintf("%g", v) }

// peerEmbedded loads samples into a fresh embedded store.
func peerEmbedded(t *testing.T, samples []peerSample) *store.Embedded {
	t.Helper()
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.Retention = 100 * 365 * 24 * time.Hour
	s := openEmbedded(t, cfg)
	app := s.AppenderV2(t.Context())
	for _, smp := range samples {
		_, err := app.Append(0, smp.lset, 0, smp.t, smp.v, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	return s
}

// startPrometheus backfills samples with promtool and starts Prometheus on
// the blocks.
func startPrometheus(t *testing.T, samples []peerSample) *peertest.Proc {
	t.Helper()
	in := filepath.Join(t.TempDir(), "data.om")
	require.NoError(t, os.WriteFile(in, []byte(openMetrics(samples)), 0o644))
	data := t.TempDir()
	peertest.Run(t, peertest.LookPath(t, "promtool"), "tsdb", "create-blocks-from", "openmetrics", in, data)
	return peertest.StartPrometheus(t, data, "")
}

// startVictoriaMetrics imports samples as Prometheus text and flushes them
// so that they are searchable at once.
func startVictoriaMetrics(t *testing.T, samples []peerSample) *peertest.Proc {
	t.Helper()
	vm := peertest.StartVictoriaMetrics(t, t.TempDir())
	httpDo(t, http.MethodPost, vm.URL+"/api/v1/import/prometheus", promText(samples), http.StatusNoContent)
	httpDo(t, http.MethodGet, vm.URL+"/internal/force_flush", "", http.StatusOK)
	return vm
}

func httpDo(t *testing.T, method, u, body string, want int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, u, b)
	return b
}

// requireSameValue compares two query results: same series, same
// timestamps, values within 1e-9 relative (NaN equal to NaN).
func requireSameValue(t *testing.T, want, got parser.Value, msg string) {
	t.Helper()
	switch w := want.(type) {
	case promql.Vector:
		g, ok := got.(promql.Vector)
		require.True(t, ok, "%s: got %T", msg, got)
		sortVector(w)
		sortVector(g)
		require.Len(t, g, len(w), "%s:\nwant %v\n got %v", msg, w, g)
		for i := range w {
			require.Equal(t, w[i].Metric.String(), g[i].Metric.String(), msg)
			require.Equal(t, w[i].T, g[i].T, msg)
			requireClose(t, w[i].F, g[i].F, "%s: %s", msg, w[i].Metric)
		}
	case promql.Matrix:
		g, ok := got.(promql.Matrix)
		require.True(t, ok, "%s: got %T", msg, got)
		require.Len(t, g, len(w), "%s:\nwant %v\n got %v", msg, w, g)
		for i := range w {
			require.Equal(t, w[i].Metric.String(), g[i].Metric.String(), msg)
			require.Len(t, g[i].Floats, len(w[i].Floats), "%s: %s", msg, w[i].Metric)
			for j := range w[i].Floats {
				require.Equal(t, w[i].Floats[j].T, g[i].Floats[j].T, msg)
				requireClose(t, w[i].Floats[j].F, g[i].Floats[j].F, "%s: %s at %d", msg, w[i].Metric, w[i].Floats[j].T)
			}
		}
	case promql.Scalar:
		g, ok := got.(promql.Scalar)
		require.True(t, ok, "%s: got %T", msg, got)
		requireClose(t, w.V, g.V, "%s", msg)
	default:
		t.Fatalf("%s: unexpected %T", msg, want)
	}
}

func sortVector(v promql.Vector) {
	slices.SortFunc(v, func(a, b promql.Sample) int { return labels.Compare(a.Metric, b.Metric) })
}

func requireClose(t *testing.T, want, got float64, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if math.IsNaN(want) || math.IsNaN(got) {
		require.True(t, math.IsNaN(want) && math.IsNaN(got), "want %v, got %v: %s", want, got, msg)
		return
	}
	if want == got {
		return
	}
	require.InEpsilon(t, want, got, 1e-9, msg)
}

// peerQueries are evaluated at several instants, on and off the grid.
var peerQueries = []string{
	"http_requests_total",
	"gpu_temp_celsius",
	`gpu_temp_celsius{gpu=~"[01]"} offset 3m`,
	"rate(http_requests_total[5m])",
	"irate(http_requests_total[5m])",
	"increase(http_requests_total[10m])",
	"resets(http_requests_total[30m])",
	"sum by (job) (rate(http_requests_total[5m]))",
	"histogram_quantile(0.9, sum by (le) (rate(request_duration_seconds_bucket[5m])))",
	"histogram_quantile(0.5, rate(request_duration_seconds_bucket[10m]))",
	"avg by (node) (gpu_temp_celsius)",
	"max(gpu_temp_celsius) - min(gpu_temp_celsius)",
	"count(gpu_temp_celsius > 68)",
	"topk(2, gpu_temp_celsius)",
	"max_over_time(gpu_temp_celsius[7m])",
	"quantile_over_time(0.5, gpu_temp_celsius[15m])",
	"deriv(gpu_temp_celsius[10m])",
	"predict_linear(gpu_temp_celsius[10m], 600)",
	"changes(gpu_temp_celsius[5m])",
	"absent(no_such_metric)",
	"scalar(sum(rate(http_requests_total[5m])))",
}

var peerTimes = []time.Duration{
	10 * time.Minute,
	17*time.Minute + 23456*time.Millisecond,
	25*time.Minute + 125*time.Millisecond, // between the scrapes of two instances
	42*time.Minute + 30*time.Second,       // right after a counter reset of 10.0.0.3
	59*time.Minute + 45*time.Second,       // the last scrape
	62 * time.Minute,                      // after the data, inside the lookback
}

// TestRemoteMatchesEmbedded loads the same data into Debian's Prometheus
// 2.42, VictoriaMetrics 1.79 and an embedded store, and checks that PromQL
// through store.Remote gives the embedded store's answers on both.
func TestRemoteMatchesEmbedded(t *testing.T) {
	samples := peerData()
	emb := peerEmbedded(t, samples)
	peers := map[string]*peertest.Proc{
		"prometheus":      startPrometheus(t, samples),
		"victoriametrics": startVictoriaMetrics(t, samples),
	}
	for _, name := range []string{"prometheus", "victoriametrics"} {
		t.Run(name, func(t *testing.T) {
			r := newRemote(t, store.DefaultRemoteConfig(peers[name].URL))
			for _, q := range peerQueries {
				for _, d := range peerTimes {
					ts := peerStart.Add(d)
					want, _, err := store.Query(t.Context(), emb, q, ts)
					require.NoError(t, err, q)
					got, _, err := store.Query(t.Context(), r, q, ts)
					require.NoError(t, err, q)
					requireSameValue(t, want, got, fmt.Sprintf("%s at %s", q, d))
				}
			}
			for _, q := range []string{"rate(http_requests_total[5m])", "gpu_temp_celsius", "histogram_quantile(0.99, sum by (le) (rate(request_duration_seconds_bucket[2m])))"} {
				start, end := peerStart.Add(5*time.Minute+333*time.Millisecond), peerStart.Add(65*time.Minute)
				want, _, err := store.QueryRange(t.Context(), emb, q, start, end, time.Minute)
				require.NoError(t, err)
				got, _, err := store.QueryRange(t.Context(), r, q, start, end, time.Minute)
				require.NoError(t, err)
				requireSameValue(t, want, got, "range "+q)
			}

			mint, maxt := peerStart.UnixMilli(), peerStart.Add(time.Hour).UnixMilli()
			gpu := labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, "gpu_temp_celsius")
			for _, st := range []store.Store{emb, r} {
				q, err := st.Querier(mint, maxt)
				require.NoError(t, err)
				names, _, err := q.LabelNames(t.Context(), nil, gpu)
				require.NoError(t, err)
				require.Equal(t, []string{"__name__", "gpu", "node"}, names)
				values, _, err := q.LabelValues(t.Context(), "job", nil, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, "http_requests_total"))
				require.NoError(t, err)
				require.Equal(t, []string{"api", "worker"}, values)
				values, _, err = q.LabelValues(t.Context(), "le", nil)
				require.NoError(t, err)
				require.Equal(t, []string{"+Inf", "0.1", "0.5", "1"}, values)
				require.NoError(t, q.Close())
			}

			// "All time", as code that reads a store directly asks for it.
			q, err := r.Querier(math.MinInt64, math.MaxInt64)
			require.NoError(t, err)
			names, _, err := q.LabelNames(t.Context(), nil, gpu)
			require.NoError(t, err)
			require.Equal(t, []string{"__name__", "gpu", "node"}, names)
			set := q.Select(t.Context(), false, nil, gpu)
			n := 0
			for set.Next() {
				it := set.At().Iterator(nil)
				for it.Next() != chunkenc.ValNone {
					n++
				}
			}
			require.NoError(t, set.Err())
			require.Equal(t, 4*240, n)
			require.NoError(t, q.Close())
		})
	}

	// VictoriaMetrics' own rate is MetricsQL's: it does not extrapolate to
	// the window's edges, so its answer differs from PromQL's, while the
	// remote store over the same VictoriaMetrics gives PromQL's.
	t.Run("victoriametrics own rate differs", func(t *testing.T) {
		r := newRemote(t, store.DefaultRemoteConfig(peers["victoriametrics"].URL))
		const q = "rate(http_requests_total[5m])"
		ts := peerStart.Add(17*time.Minute + 23456*time.Millisecond)
		want, _, err := store.Query(t.Context(), emb, q, ts)
		require.NoError(t, err)
		got, _, err := store.Query(t.Context(), r, q, ts)
		require.NoError(t, err)
		requireSameValue(t, want, got, q)

		own := backendQuery(t, peers["victoriametrics"].URL, q, ts)
		wantByInstance := map[string]float64{}
		for _, s := range want.(promql.Vector) {
			wantByInstance[s.Metric.Get("instance")] = s.F
		}
		require.Len(t, own, len(wantByInstance))
		differ := 0
		for inst, v := range own {
			if math.Abs(v-wantByInstance[inst]) > 1e-6*math.Abs(wantByInstance[inst]) {
				differ++
			}
		}
		require.Positive(t, differ, "MetricsQL's rate %v equals PromQL's %v", own, wantByInstance)
	})
}

// backendQuery evaluates q with the backend's own engine and returns the
// values by instance.
func backendQuery(t *testing.T, base, q string, ts time.Time) map[string]float64 {
	t.Helper()
	u := base + "/api/v1/query?" + url.Values{"query": {q}, "time": {fmt.Sprintf("%.3f", float64(ts.UnixMilli())/1000)}}.Encode()
	var env struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(httpDo(t, http.MethodGet, u, "", http.StatusOK), &env))
	require.Equal(t, "success", env.Status)
	out := map[string]float64{}
	for _, r := range env.Data.Result {
		var v float64
		_, err := fmt.Sscan(r.Value[1].(string), &v)
		require.NoError(t, err)
		out[r.Metric["instance"]] = v
	}
	return out
}
