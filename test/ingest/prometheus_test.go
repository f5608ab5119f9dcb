package ingest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// startPrometheusOn runs Debian's Prometheus on addr, which its
// configuration may name (to scrape itself), and waits for /-/ready.
func startPrometheusOn(t *testing.T, addr, config string) *server {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
	url := "http://" + addr
	p := peertest.Start(t, url, addr, peertest.StatusOK(url+"/-/ready"), peertest.LookPath(t, "prometheus"),
		"--config.file="+cfg,
		"--storage.tsdb.path="+t.TempDir(),
		"--web.listen-address="+addr,
		"--log.level=warn")
	return &server{Proc: p, client: newClient(t)}
}

// TestPrometheusRemoteWrite has Debian's Prometheus 2.42 scrape itself and a
// real node-exporter every second and remote-write everything to Vigil. It
// proves that a real sender's requests are all accepted (no failed or
// retried samples on Prometheus's side, only 204s on Vigil's), that Vigil's
// API returns the series by name, label and value, and that the raw samples
// Vigil stored are exactly the ones Prometheus stored.
func TestPrometheusRemoteWrite(t *testing.T) {
	start := time.Now()
	v := startVigil(t, t.TempDir(), "")
	ne := peertest.StartNodeExporter(t)
	promAddr := peertest.FreeAddr(t)
	prom := startPrometheusOn(t, promAddr, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: [%q]}]
  - job_name: node
    static_configs: [{targets: [%q]}]
remote_write:
  - url: %s/api/v1/write
    queue_config: {batch_send_deadline: 1s}
`, promAddr, ne.Addr, v.URL))

	describe := func() string { return "vigil:\n" + v.Output() + "\nprometheus:\n" + prom.Output() }
	// Five scrapes of node-exporter, so that there is history to compare.
	waitFor(t, 60*time.Second, `five samples of up{job="node"} in Vigil`, func() bool {
		res, err := v.tryQuery(t.Context(), `count_over_time(up{job="node"}[1m]) >= 5`, time.Now())
		return err == nil && len(res) == 1
	}, describe)
	now := time.Now()
	require.Equal(t, 1.0, v.scalar(t, `up{job="prometheus"}`, now))
	require.Positive(t, v.scalar(t, `count(node_cpu_seconds_total{job="node",mode="idle"})`, now))
	build := v.query(t, `prometheus_build_info{job="prometheus"}`, now)
	require.Len(t, build, 1)
	require.True(t, strings.HasPrefix(build[0].Metric["version"], "2.42."), "version %q", build[0].Metric["version"])
	require.Subset(t, v.labelValues(t, "job"), []string{"node", "prometheus"})
	require.Contains(t, v.labelValues(t, "__name__"), "node_cpu_seconds_total")
	require.Contains(t, v.labelValues(t, "instance"), ne.Addr)

	// The raw samples up to two seconds ago are the same in both.
	at := time.Now().Add(-2 * time.Second).Truncate(time.Millisecond)
	sel := `{job="node",__name__=~"node_cpu_seconds_total|up|node_load1|scrape_duration_seconds"}[30s]`
	want := prom.query(t, sel, at)
	require.NotEmpty(t, want)
	var got []series
	waitFor(t, 30*time.Second, "Vigil has Prometheus's samples up to "+at.Format(time.RFC3339Nano), func() bool {
		got = v.query(t, sel, at)
		return sameSeries(got, want)
	}, func() string {
		return fmt.Sprintf("vigil: %d series, prometheus: %d series\n%s", len(got), len(want), describe())
	})

	// Vigil counts the 204s, and they keep coming.
	ok := v.metric(t, "vigil_remote_write_requests_total", map[string]string{"code": "204"})
	require.Positive(t, ok)
	waitFor(t, 30*time.Second, "vigil_remote_write_requests_total{code=\"204\"} grows", func() bool {
		return v.metric(t, "vigil_remote_write_requests_total", map[string]string{"code": "204"}) > ok
	}, describe)
	byCode := v.metricBy(t, "vigil_remote_write_requests_total", "code")
	require.Equal(t, []string{"204"}, slices.Collect(maps.Keys(byCode)), "every request of Prometheus was answered 204: %v", byCode)
	require.Positive(t, prom.metric(t, "prometheus_remote_storage_samples_total", nil))
	for _, name := range []string{"prometheus_remote_storage_samples_failed_total", "prometheus_remote_storage_samples_retried_total", "prometheus_remote_storage_samples_dropped_total"} {
		require.Zero(t, prom.metric(t, name, nil), name)
	}
	require.NoError(t, prom.Stop())
	require.NoError(t, v.Stop())
	require.NotContains(t, v.Output(), "level=ERROR")
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}

// sameSeries reports whether two answers hold the same series with the same
// raw samples, in any order.
func sameSeries(a, b []series) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(s series) string { return fmt.Sprint(s.Metric) }
	idx := make(map[string]series, len(a))
	for _, s := range a {
		idx[key(s)] = s
	}
	for _, s := range b {
		o, ok := idx[key(s)]
		if !ok || !slices.Equal(o.Points, s.Points) {
			return false
		}
	}
	return true
}

// TestScrapeNodeExporter runs Vigil with a scrape job for a real
// node-exporter in its configuration file. It proves the job is read,
// /api/v1/targets lists the target as up, its series are queryable, and a
// target that goes away is reported down and gets up == 0.
func TestScrapeNodeExporter(t *testing.T) {
	start := time.Now()
	ne := peertest.StartNodeExporter(t)
	v := startVigil(t, t.TempDir(), fmt.Sprintf(`# Vigil's own keys and Prometheus's scrape sections in one file.
self_monitoring:
  enabled: false
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: [%q]
        labels: {cluster: lab}
`, ne.Addr))

	type target struct {
		Labels     map[string]string `json:"labels"`
		ScrapePool string            `json:"scrapePool"`
		ScrapeURL  string            `json:"scrapeUrl"`
		Health     string            `json:"health"`
		LastError  string            `json:"lastError"`
	}
	targets := func() []target {
		var data struct {
			ActiveTargets []target `json:"activeTargets"`
		}
		require.NoError(t, v.api(t.Context(), "GET", "/api/v1/targets", nil, &data))
		return data.ActiveTargets
	}
	health := func(want string) func() bool {
		return func() bool {
			ts := targets()
			return len(ts) == 1 && ts[0].Health == want
		}
	}
	describe := func() string { return fmt.Sprintf("targets: %+v\n%s", targets(), v.Output()) }
	waitFor(t, 30*time.Second, "the node target is up", health("up"), describe)
	tg := targets()[0]
	require.Equal(t, "node", tg.ScrapePool)
	require.Equal(t, "http://"+ne.Addr+"/metrics", tg.ScrapeURL)
	require.Equal(t, map[string]string{"job": "node", "instance": ne.Addr, "cluster": "lab"}, tg.Labels)

	waitFor(t, 30*time.Second, "up and node_cpu_seconds_total are stored", func() bool {
		res, err := v.tryQuery(t.Context(), `up{job="node",cluster="lab"} == 1 and on() count(node_cpu_seconds_total{job="node",cluster="lab"}) > 0`, time.Now())
		return err == nil && len(res) == 1
	}, describe)
	require.Contains(t, v.labelValues(t, "job"), "node")

	// A target that goes away is down, and up says so.
	ne.Kill()
	waitFor(t, 30*time.Second, "the node target is down", health("down"), describe)
	require.NotEmpty(t, targets()[0].LastError)
	waitFor(t, 30*time.Second, `up{job="node"} == 0`, func() bool {
		res, err := v.tryQuery(t.Context(), `up{job="node"} == 0`, time.Now())
		return err == nil && len(res) == 1
	}, describe)
	require.NoError(t, v.Stop())
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}
