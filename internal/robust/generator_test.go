package robust

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// small is a cheap run: four nodes, half an hour.
func small(seed uint64) Config {
	return Config{Seed: seed, Nodes: 4, Duration: 30 * time.Minute}
}

func textOf(t *testing.T, scenario string, cfg Config) []byte {
	t.Helper()
	sc, err := ParseScenario(scenario)
	require.NoError(t, err)
	g, err := New(cfg, sc)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, g.WriteText(t.Context(), &buf))
	return buf.Bytes()
}

func TestDeterministic(t *testing.T) {
	f := func(scenario string) {
		t.Run(scenario, func(t *testing.T) {
			a, b := textOf(t, scenario, small(2_000_003)), textOf(t, scenario, small(2_000_003))
			require.Equal(t, sha256.Sum256(a), sha256.Sum256(b), "same seed, same bytes")
			require.NotEqual(t, sha256.Sum256(a), sha256.Sum256(textOf(t, scenario, small(2_000_004))), "another seed")
		})
	}
	f(HealthyScenario)
	f("robust/nvlink_degraded/half")
}

func TestDrawnConfig(t *testing.T) {
	sizes, lengths := map[int]bool{}, map[time.Duration]bool{}
	for seed := range uint64(60) {
		g, err := New(Config{Seed: 2_000_000 + seed}, Scenario{})
		require.NoError(t, err)
		c := g.Config()
		require.GreaterOrEqual(t, c.Nodes, 4)
		require.LessOrEqual(t, c.Nodes, 16)
		require.GreaterOrEqual(t, c.Duration, 30*time.Minute)
		require.LessOrEqual(t, c.Duration, time.Hour)
		sizes[c.Nodes], lengths[c.Duration] = true, true
	}
	require.Greater(t, len(sizes), 5, "cluster sizes vary")
	require.Greater(t, len(lengths), 3, "run lengths vary")
	_, err := New(Config{Seed: 1, Duration: time.Minute}, Scenario{})
	require.ErrorContains(t, err, "duration 1m0s is not within [25m0s, 6h0m0s]")
}

func TestParseScenario(t *testing.T) {
	f := func(name string, want Scenario, wantErr string) {
		t.Helper()
		got, err := ParseScenario(name)
		if wantErr != "" {
			require.ErrorContains(t, err, wantErr)
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, name, got.Name())
	}
	f(HealthyScenario, Scenario{Scale: 1}, "")
	f("robust/gpu_lost/half", Scenario{Kind: KindGPULost, Size: SizeHalf, Scale: 0.5}, "")
	f("robust/pod_crash_loop/double", Scenario{Kind: KindCrashLoop, Size: SizeDouble, Scale: 2}, "")
	f("robust/gpu_lost", Scenario{}, `unknown scenario "robust/gpu_lost"`)
	f("robust/gpu_lost/triple", Scenario{}, "unknown scenario")
	f("robust/metric_anomaly/half", Scenario{}, "unknown scenario")
	require.Len(t, Scenarios(), 1+2*len(Kinds()))
	for _, n := range Scenarios() {
		require.True(t, IsScenario(n))
		_, err := ParseScenario(n)
		require.NoError(t, err)
	}
	require.False(t, IsScenario("gpu_lost"))
}

// defaultDCGMFields reads dcgm-exporter's default-counters.csv: the
// fields it exports unless told otherwise.
func defaultDCGMFields(t *testing.T) map[string]bool {
	f, err := os.Open("../catalog/testdata/upstream/dcgm-exporter-default-counters.csv")
	require.NoError(t, err)
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, ",")
		out[strings.TrimSpace(name)] = true
	}
	require.NoError(t, sc.Err())
	require.True(t, out["DCGM_FI_DEV_GPU_TEMP"])
	require.False(t, out["DCGM_FI_DEV_POWER_VIOLATION"], "commented out")
	return out
}

func TestDefaultFieldsOnly(t *testing.T) {
	allowed := defaultDCGMFields(t)
	for _, scenario := range []string{HealthyScenario, "robust/gpu_thermal_throttle/double", "robust/gpu_power_throttle/double"} {
		r := simulate(t, scenario, small(2_000_010))
		names := map[string]bool{}
		for _, s := range r.c.series {
			names[s.lset.Get(model.MetricNameLabel)] = true
		}
		for n := range names {
			require.NotContains(t, n, "DCGM_FI_PROF_", scenario)
			require.NotContains(t, n, "VIOLATION", scenario)
			require.NotContains(t, n, "CLOCK_EVENT", scenario)
			require.NotContains(t, n, "CLOCK_THROTTLE", scenario)
			if strings.HasPrefix(n, "DCGM_") {
				require.True(t, allowed[n], "%s: %s is not a default field", scenario, n)
			}
		}
		for _, want := range []string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
			"kube_pod_info", "kube_pod_owner", "kube_node_status_condition", "kube_pod_container_status_restarts_total",
			"kube_pod_status_phase", "kube_pod_container_resource_requests", "node_cpu_seconds_total",
			"node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes", "node_network_receive_bytes_total", "node_load1",
			"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
			"vllm:time_to_first_token_seconds_bucket", "vllm:e2e_request_latency_seconds_count", "up"} {
			require.True(t, names[want], "%s: no %s", scenario, want)
		}
	}
}

func TestExporterLabels(t *testing.T) {
	r := simulate(t, HealthyScenario, small(2_000_011))
	c := r.cluster()
	held := map[string]bool{}
	for _, s := range r.find("DCGM_FI_DEV_GPU_UTIL") {
		l := s.lset
		for _, k := range []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "DCGM_FI_DRIVER_VERSION", "instance", "job"} {
			require.NotEmpty(t, l.Get(k), "%s lacks %s", l, k)
		}
		require.True(t, l.Has("Hostname") != l.Has("hostname"), "one spelling of the host label: %s", l)
		for _, k := range []string{"pod", "exported_pod"} {
			if strings.Contains(l.Get(k), "-worker-") {
				held[l.Get("UUID")] = true
				require.Equal(t, "pytorch", l.Get(strings.Replace(k, "pod", "container", 1)))
			}
		}
	}
	require.Len(t, held, 8*len(c.job.pods), "every training GPU names its pod")
	for _, p := range c.job.pods {
		info := r.one("kube_pod_info", "pod", p.name)
		require.Equal(t, p.node.name, info.lset.Get("node"))
		owner := r.one("kube_pod_owner", "pod", p.name)
		require.Equal(t, c.job.ownerKind, owner.lset.Get("owner_kind"))
		req := r.one("kube_pod_container_resource_requests", "pod", p.name, "resource", "nvidia_com_gpu")
		v, ok := req.last(r.end())
		require.True(t, ok)
		require.Equal(t, 8.0, v)
	}
	for _, s := range r.find("vllm:num_requests_running") {
		require.NotEmpty(t, s.lset.Get("model_name"))
		require.NotEmpty(t, s.lset.Get("pod"))
		require.NotEmpty(t, s.lset.Get("namespace"))
	}
}
