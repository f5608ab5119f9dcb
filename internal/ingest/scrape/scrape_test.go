package scrape

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/store"
)

func TestLoadConfig(t *testing.T) {
	src := `# a vigil.yaml with Prometheus sections among Vigil's own
storage:
  data_dir: data
scrape_configs:
  - job_name: dcgm
    static_configs:
      - targets: ["gpu-node-01:9400"]
  - job_name: slow
    scrape_interval: 1m
    static_configs:
      - targets: ["x:1"]
web:
  listen: ":9700"
`
	cfg, err := LoadConfig("vigil.yaml", []byte(src), nil)
	require.NoError(t, err)
	jobs, err := cfg.GetScrapeConfigs()
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	require.Equal(t, DefaultInterval, time.Duration(jobs[0].ScrapeInterval), "no interval anywhere: Vigil's default")
	require.Equal(t, time.Minute, time.Duration(jobs[1].ScrapeInterval), "an explicit interval stays")

	cfg, err = LoadConfig("vigil.yaml", []byte("global:\n  scrape_interval: 30s\nscrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['a:1']}]\n"), nil)
	require.NoError(t, err)
	jobs, err = cfg.GetScrapeConfigs()
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, time.Duration(jobs[0].ScrapeInterval), "global interval applies")

	cfg, err = LoadConfig("vigil.yaml", []byte("storage:\n  data_dir: x\n"), nil)
	require.NoError(t, err)
	require.Empty(t, cfg.ScrapeConfigs)

	// A section's list may sit at its key's column, as kubectl and many
	// generators write YAML: its items stay in the section.
	cfg, err = LoadConfig("vigil.yaml", []byte("scrape_configs:\n- job_name: a\n  static_configs: [{targets: ['a:1']}]\n-   job_name: b\n    static_configs: [{targets: ['b:1']}]\nstorage:\n  data_dir: x\nremote_write:\n- url: http://mimir:9009/api/v1/push\n"), nil)
	require.NoError(t, err)
	jobs, err = cfg.GetScrapeConfigs()
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	require.Len(t, cfg.RemoteWriteConfigs, 1)
}

func TestLoadConfigErrors(t *testing.T) {
	f := func(name, src, want string) {
		t.Run(name, func(t *testing.T) {
			_, err := LoadConfig("vigil.yaml", []byte(src), nil)
			require.Error(t, err)
			require.Contains(t, err.Error(), want)
			require.Contains(t, err.Error(), "vigil.yaml")
		})
	}
	f("unknown field keeps its line", "storage:\n  data_dir: x\nweb:\n  listen: ':1'\nscrape_configs:\n  - job_name: a\n    bogus_field: 1\n", "vigil.yaml:7: field bogus_field not found")
	f("duplicate job", "scrape_configs:\n  - job_name: a\n  - job_name: a\n", `found multiple scrape configs with job name "a"`)
	f("bad kubernetes role", "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs:\n      - role: bogus\n", "bogus")
	f("bad relabel regex keeps its line", "scrape_configs:\n  - job_name: node\n    static_configs: [{targets: ['a:1']}]\n    metric_relabel_configs:\n      - source_labels: [__name__]\n        regex: \"node_(cpu|memory\"\n        action: keep\n",
		"vigil.yaml:6: scrape_configs: regex: error parsing regexp: missing closing ): `^(?s:node_(cpu|memory)$`")
	f("timeout over interval", "scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n    scrape_timeout: 10s\n", "scrape timeout greater than scrape interval")
}

func TestKubernetesDiscoveryConfig(t *testing.T) {
	// In-cluster discovery is configured as in Prometheus; without a cluster
	// here, the configuration is what can be tested.
	src := `scrape_configs:
  - job_name: dcgm-exporter
    kubernetes_sd_configs:
      - role: pod
        namespaces: {names: [gpu-operator]}
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app]
        regex: nvidia-dcgm-exporter
        action: keep
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: Hostname
`
	cfg, err := LoadConfig("vigil.yaml", []byte(src), nil)
	require.NoError(t, err)
	require.Len(t, cfg.ScrapeConfigs[0].ServiceDiscoveryConfigs, 1)
	require.Equal(t, "kubernetes", cfg.ScrapeConfigs[0].ServiceDiscoveryConfigs[0].Name())
}

// TestScrapeNodeExporterAndStaleness scrapes a real node-exporter (static
// discovery) and a test target (file discovery) into the embedded store,
// then stops the test target: up goes to 0 and its series go stale.
func TestScrapeNodeExporterAndStaleness(t *testing.T) {
	ne := peertest.StartNodeExporter(t)
	var alive atomic.Bool
	alive.Store(true)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !alive.Load() {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "# TYPE DCGM_FI_DEV_GPU_TEMP gauge")
		fmt.Fprintln(w, `DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="gpu-node-01"} 61`)
	}))
	defer target.Close()

	dir := t.TempDir()
	sdFile := filepath.Join(dir, "targets.json")
	require.NoError(t, os.WriteFile(sdFile, fmt.Appendf(nil, `[{"targets": [%q], "labels": {"cluster": "lab"}}]`, target.Listener.Addr().String()), 0o644))
	src := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: node
    static_configs: [{targets: [%q]}]
  - job_name: dcgm
    file_sd_configs: [{files: [targets.json], refresh_interval: 1s}]
`, ne.Addr)
	cfg, err := LoadConfig(filepath.Join(dir, "vigil.yaml"), []byte(src), nil)
	require.NoError(t, err)

	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(filepath.Join(dir, "data")), nil, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	s, err := New(cfg, st, nil, prometheus.NewRegistry())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Run() }()
	defer func() { s.Stop(); require.NoError(t, <-done) }()

	query := func(q string) promql.Vector {
		v, _, err := store.Query(t.Context(), st, q, time.Now())
		require.NoError(t, err)
		return v.(promql.Vector)
	}
	waitFor := func(what, q string, ok func(promql.Vector) bool) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			if v := query(q); ok(v) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s never held; last: %v", what, q, query(q))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	one := func(v promql.Vector) bool { return len(v) == 1 && v[0].F == 1 }
	waitFor("node-exporter scraped", `up{job="node"}`, one)
	waitFor("node-exporter series", `count(node_cpu_seconds_total{job="node"}) > 0`, func(v promql.Vector) bool { return len(v) == 1 })
	waitFor("file-discovered target scraped", `up{job="dcgm",cluster="lab"}`, one)
	waitFor("target series", `DCGM_FI_DEV_GPU_TEMP{job="dcgm"}`, func(v promql.Vector) bool { return len(v) == 1 && v[0].F == 61 })

	alive.Store(false)
	waitFor("dead target", `up{job="dcgm"}`, func(v promql.Vector) bool { return len(v) == 1 && v[0].F == 0 })
	waitFor("staleness marker", `DCGM_FI_DEV_GPU_TEMP{job="dcgm"}`, func(v promql.Vector) bool { return len(v) == 0 })
}
