package topology_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/topology"
)

// benchDCGMMetrics are the dcgm-exporter series of one GPU in the
// benchmark: its default counters plus the profiling ones commonly
// enabled, 25 per GPU.
var benchDCGMMetrics = [...]string{
	"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
	"DCGM_FI_DEV_SLOWDOWN_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL",
	"DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED",
	"DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
}

// benchValue is a healthy, busy GPU's value of a dcgm-exporter metric.
func benchValue(metric string) float64 {
	switch metric {
	case "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
		"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER":
		return 0
	case "DCGM_FI_DEV_SLOWDOWN_TEMP":
		return 90
	case "DCGM_FI_DEV_GPU_UTIL":
		return 97
	case "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
		return 0.9
	}
	return 55
}

// benchScrapes are the sample times: four 30 s scrapes up to the instant.
var benchScrapes = [...]time.Duration{-90 * time.Second, -60 * time.Second, -30 * time.Second, 0}

// BenchmarkBuild builds the topology of a cluster of 100, 300 and 1,000
// nodes with 8 GPUs each (25 dcgm-exporter series per GPU, kube-state-metrics
// for one 8-GPU training pod and two daemon pods per node, node-exporter),
// generated straight into an embedded store: about 230 series per node,
// 230k at 1,000 nodes, four scrapes each.
//
//	go test ./internal/topology -run '^$' -bench BenchmarkBuild -benchtime 5x
func BenchmarkBuild(b *testing.B) {
	for _, nodes := range []int{100, 300, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			s, series := benchStore(b, nodes)
			b.ReportAllocs()
			var topo *topology.Topology
			for b.Loop() {
				var err error
				topo, err = topology.Build(b.Context(), s, nil, fixtureAt, topology.DefaultOptions())
				require.NoError(b, err)
			}
			require.Len(b, topo.Nodes, nodes)
			require.Len(b, topo.Nodes[0].GPUs, 8)
			require.Equal(b, topology.HealthOK, topo.Nodes[0].GPUs[0].Health)
			require.Len(b, topo.Workloads, (nodes+7)/8+2)
			b.ReportMetric(float64(series), "series")
			b.ReportMetric(float64(series)*float64(b.N)/b.Elapsed().Seconds(), "series/s")
		})
	}
}

// benchStore opens an embedded store holding a generated cluster of n
// nodes and returns it with its number of series.
func benchStore(b *testing.B, n int) (*store.Embedded, int) {
	b.Helper()
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(b.TempDir()), func() time.Time { return fixtureAt }, nil, nil)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, s.Close()) })
	var sets []benchSeries
	for i := range n {
		sets = benchNode(sets, i)
	}
	app := s.AppenderV2(b.Context())
	refs := make([]storage.SeriesRef, len(sets))
	for _, d := range benchScrapes {
		ts := fixtureAt.Add(d).UnixMilli()
		for i, bs := range sets {
			refs[i], err = app.Append(refs[i], bs.lset, 0, ts, bs.value, nil, nil, storage.AOptions{})
			require.NoError(b, err)
		}
	}
	require.NoError(b, app.Commit())
	return s, len(sets)
}

// benchSeries is one generated series and its value.
type benchSeries struct {
	lset  labels.Labels
	value float64
}

// benchNode appends the series of node i: a PyTorchJob pod on all 8 GPUs
// (one job per 8 nodes), two daemon pods, node and GPU series.
func benchNode(out []benchSeries, i int) []benchSeries {
	node, ip := fmt.Sprintf("gpu-node-%04d", i), fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	job, pod := fmt.Sprintf("train-%03d", i/8), fmt.Sprintf("train-%03d-worker-%d", i/8, i%8)
	add := func(value float64, kv ...string) { out = append(out, benchSeries{labels.FromStrings(kv...), value}) }
	for g := range 8 {
		uuid := fmt.Sprintf("GPU-%08x-0000-0000-0000-%012x", i, g)
		for _, m := range benchDCGMMetrics {
			add(benchValue(m), "__name__", m, "gpu", fmt.Sprint(g), "UUID", uuid, "device", fmt.Sprintf("nvidia%d", g),
				"modelName", "NVIDIA H100 80GB HBM3", "Hostname", node, "DCGM_FI_DRIVER_VERSION", "570.124.06",
				"pod", pod, "namespace", "ml-train", "container", "pytorch",
				"instance", ip+":9400", "job", "dcgm-exporter")
		}
	}
	add(1, "__name__", "kube_node_info", "node", node, "internal_ip", ip, "kubelet_version", "v1.31.4")
	for _, st := range []string{"true", "false", "unknown"} {
		add(map[bool]float64{true: 1}[st == "true"], "__name__", "kube_node_status_condition", "node", node, "condition", "Ready", "status", st)
	}
	add(8, "__name__", "kube_node_status_capacity", "node", node, "resource", "nvidia_com_gpu", "unit", "integer")
	for _, p := range [][3]string{{"ml-train", pod, job}, {"kube-system", "node-exporter-" + node, "node-exporter"}, {"gpu-operator", "dcgm-exporter-" + node, "dcgm-exporter"}} {
		kind := map[bool]string{true: "PyTorchJob", false: "DaemonSet"}[p[0] == "ml-train"]
		add(1, "__name__", "kube_pod_info", "namespace", p[0], "pod", p[1], "node", node, "host_ip", ip, "pod_ip", ip, "created_by_kind", kind, "created_by_name", p[2])
		add(1, "__name__", "kube_pod_owner", "namespace", p[0], "pod", p[1], "owner_kind", kind, "owner_name", p[2], "owner_is_controller", "true")
		for _, ph := range []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"} {
			add(map[bool]float64{true: 1}[ph == "Running"], "__name__", "kube_pod_status_phase", "namespace", p[0], "pod", p[1], "phase", ph)
		}
	}
	add(8, "__name__", "kube_pod_container_resource_requests", "namespace", "ml-train", "pod", pod, "container", "pytorch", "node", node, "resource", "nvidia_com_gpu", "unit", "integer")
	add(1, "__name__", "node_uname_info", "instance", ip+":9100", "nodename", node, "job", "node-exporter")
	add(1.7e9, "__name__", "node_boot_time_seconds", "instance", ip+":9100", "job", "node-exporter")
	return out
}
