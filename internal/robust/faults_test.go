package robust

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFaultSignatures runs every kind at half and at double size and
// checks that its signature is in the data, larger at double size.
func TestFaultSignatures(t *testing.T) {
	checks := map[string]func(t *testing.T, r *run, f Fault, double bool){
		KindThermalThrottle: func(t *testing.T, r *run, f Fault, double bool) {
			dT, clock := r.vsPeers("DCGM_FI_DEV_GPU_TEMP", f, false), r.vsPeers("DCGM_FI_DEV_SM_CLOCK", f, true)
			if double {
				require.Greater(t, dT, 18.0)
				require.Less(t, clock, 0.45)
			} else {
				require.Greater(t, dT, 8.0)
				require.Less(t, clock, 0.85)
			}
		},
		KindPowerThrottle: func(t *testing.T, r *run, f Fault, double bool) {
			power, clock := r.vsPeers("DCGM_FI_DEV_POWER_USAGE", f, true), r.vsPeers("DCGM_FI_DEV_SM_CLOCK", f, true)
			if double {
				require.Less(t, power, 0.6)
				require.Less(t, clock, 0.55)
			} else {
				require.Less(t, power, 0.92)
				require.Less(t, clock, 0.92)
			}
			// Pinned: its draw barely moves.
			vs := r.gpuSeries("DCGM_FI_DEV_POWER_USAGE", f.Entity["node"], f.Entity["gpu"])[0].between(r.end().Add(-3*time.Minute), r.end())
			require.Less(t, slices.Max(vs)-slices.Min(vs), 0.03*mean(vs))
		},
		KindPCIeDegraded: func(t *testing.T, r *run, f Fault, double bool) {
			from := r.end().Add(-5 * time.Minute)
			s := r.gpuSeries("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", f.Entity["node"], f.Entity["gpu"])[0]
			a, _ := s.last(from)
			b, _ := s.last(r.end())
			tx := r.vsPeers("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", f, true)
			if double {
				require.Greater(t, b-a, 3000.0)
				require.Less(t, tx, 0.2)
			} else {
				require.Greater(t, b-a, 800.0)
				require.Less(t, tx, 0.85)
			}
		},
		KindNVLinkDegraded: func(t *testing.T, r *run, f Fault, double bool) {
			n := f.Entity["node"]
			if double {
				// The links go, XID 74, and the job hangs.
				require.Contains(t, r.xidsOn(n), 74.0, "XID 74 on the node")
				mine, others := r.nodeVsOthers("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", n, f.Onset.Add(50*time.Second), f.Onset.Add(2*time.Minute))
				require.Less(t, mine/others, 0.05)
				r.requireHang(f)
				return
			}
			require.NotContains(t, r.xidsOn(n), 74.0, "no XID at half size")
			from, to := f.Onset.Add(2*time.Minute), f.Onset.Add(6*time.Minute)
			mine, others := r.nodeVsOthers("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", n, from, to)
			require.Less(t, mine/others, 0.45)
			before := r.jobMean("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", r.cluster().job, f.Onset.Add(-3*time.Minute), f.Onset)
			require.Less(t, others/before, 0.85, "the job slows")
		},
		KindXIDError: func(t *testing.T, r *run, f Fault, double bool) {
			xids := r.gpuSeries("DCGM_FI_DEV_XID_ERRORS", f.Entity["node"], f.Entity["gpu"])[0]
			last, _ := xids.last(r.end())
			if double {
				require.Equal(t, 120.0, last)
				require.Contains(t, xids.changes(), 119.0)
				require.GreaterOrEqual(t, r.rankRestarts(f), 3.0, "its rank crash-loops")
			} else {
				require.Equal(t, 109.0, last)
				require.GreaterOrEqual(t, r.rankRestarts(f), 1.0)
			}
			r.requireHang(f)
		},
		KindGPULost: func(t *testing.T, r *run, f Fault, double bool) {
			var seen []float64
			for _, s := range r.gpuSeries("DCGM_FI_DEV_XID_ERRORS", f.Entity["node"], f.Entity["gpu"]) {
				seen = append(seen, s.between(f.Onset, r.end())...)
			}
			require.Contains(t, seen, 79.0)
			for _, s := range r.gpuSeries("DCGM_FI_DEV_GPU_TEMP", f.Entity["node"], f.Entity["gpu"]) {
				require.Empty(t, s.between(f.Onset.Add(3*time.Minute), r.end()), "its series vanish")
			}
			alloc, _ := r.one("kube_node_status_allocatable", "node", f.Entity["node"], "resource", "nvidia_com_gpu").last(r.end())
			require.Equal(t, 7.0, alloc)
			r.requireHang(f)
			if double {
				require.GreaterOrEqual(t, r.rankRestarts(f), 3.0)
			}
		},
		KindMemoryErrors: func(t *testing.T, r *run, f Fault, double bool) {
			s := r.gpuSeries("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", f.Entity["node"], f.Entity["gpu"])[0]
			before, _ := s.last(f.Onset)
			after, _ := s.last(r.end())
			failure, _ := r.gpuSeries("DCGM_FI_DEV_ROW_REMAP_FAILURE", f.Entity["node"], f.Entity["gpu"])[0].last(r.end())
			if double {
				require.GreaterOrEqual(t, after-before, 8.0)
				require.Equal(t, 1.0, failure)
			} else {
				require.GreaterOrEqual(t, after-before, 2.0)
				require.Equal(t, 0.0, failure)
			}
		},
		KindNodeDown: func(t *testing.T, r *run, f Fault, double bool) {
			n := r.nodeOf(f.Entity["node"])
			for _, s := range r.find("node_load1") {
				if s.lset.Get("instance") == n.name || s.lset.Get("instance") == n.ip+":9100" {
					require.Empty(t, s.between(f.Onset.Add(time.Minute), r.end()))
				}
			}
			unknown, _ := r.one("kube_node_status_condition", "node", n.name, "condition", "Ready", "status", "unknown").last(r.end())
			require.Equal(t, 1.0, unknown)
			lost, _ := r.one("kube_pod_status_reason", "pod", r.rankOn(n.name), "reason", "NodeLost").last(r.end())
			require.Equal(t, b2f(double), lost)
		},
		KindMemoryPressure: func(t *testing.T, r *run, f Fault, double bool) {
			n := r.nodeOf(f.Entity["node"])
			var avail []float64
			for _, s := range r.find("node_memory_MemAvailable_bytes") {
				if s.lset.Get("instance") == n.name || s.lset.Get("instance") == n.ip+":9100" {
					avail = append(avail, s.between(f.Onset, r.end())...)
				}
			}
			low := slices.Min(avail) / n.memTotal
			if double {
				require.Less(t, low, 0.01)
				require.NotEmpty(t, r.find("kube_pod_container_status_last_terminated_reason", "pod", r.rankOn(n.name), "reason", "OOMKilled"))
			} else {
				require.Less(t, low, 0.06)
				require.Greater(t, low, 0.03)
			}
		},
		KindCrashLoop: func(t *testing.T, r *run, f Fault, double bool) {
			s := r.one("kube_pod_container_status_restarts_total", "pod", f.Entity["pod"])
			before, _ := s.last(f.Onset)
			after, _ := s.last(r.end())
			require.NotEmpty(t, r.find("kube_pod_container_status_waiting_reason", "pod", f.Entity["pod"], "reason", "CrashLoopBackOff"))
			if double {
				require.GreaterOrEqual(t, after-before, 5.0)
			} else {
				require.GreaterOrEqual(t, after-before, 2.0)
			}
		},
		KindKVCacheExhausted: func(t *testing.T, r *run, f Fault, double bool) {
			from := r.end().Add(-3 * time.Minute)
			for _, s := range r.find("vllm:kv_cache_usage_perc") {
				kv := slices.Max(s.between(from, r.end()))
				if s.lset.Get("pod") == f.Entity["pod"] {
					require.Greater(t, kv, 0.95)
				} else {
					require.Less(t, kv, 0.95, s.lset.Get("pod"))
				}
			}
			w := r.one("vllm:num_requests_waiting", "pod", f.Entity["pod"]).between(from, r.end())
			require.Greater(t, w[len(w)-1], 5.0)
		},
		KindCapacitySaturated: func(t *testing.T, r *run, f Fault, double bool) {
			from := r.end().Add(-2 * time.Minute)
			for _, s := range r.find("vllm:num_requests_waiting") {
				if vs := s.between(from, r.end()); len(vs) > 0 {
					require.Greater(t, vs[len(vs)-1], 5.0, s.lset.Get("pod"))
				}
			}
		},
	}
	require.Len(t, checks, len(Kinds()))
	for i, kind := range Kinds() {
		for _, size := range []string{SizeHalf, SizeDouble} {
			name := Prefix + kind + "/" + size
			t.Run(kind+"/"+size, func(t *testing.T) {
				r := simulate(t, name, small(2_000_200+uint64(i)))
				truth := r.g.Truth()
				require.Len(t, truth, 1)
				f := truth[0]
				require.Equal(t, kind, f.Kind)
				require.Equal(t, size, f.Size)
				require.NotEmpty(t, f.Summary)
				require.False(t, f.Onset.Before(r.cfg.Start.Add(10*time.Minute)))
				require.False(t, f.Onset.After(r.end().Add(-10*time.Minute)))
				checks[kind](t, r, f, size == SizeDouble)
			})
		}
	}
}

// vsPeers compares the faulty GPU's field over the last 3 minutes with
// its node-mates': the difference, or the ratio.
func (r *run) vsPeers(field string, f Fault, ratio bool) float64 {
	from, to := r.end().Add(-3*time.Minute), r.end()
	n := f.Entity["node"]
	mine := r.gpuMean(field, n, f.Entity["gpu"], from, to)
	var others []float64
	for k := range 8 {
		if g := strconv.Itoa(k); g != f.Entity["gpu"] {
			others = append(others, r.gpuMean(field, n, g, from, to))
		}
	}
	if ratio {
		return mine / mean(others)
	}
	return mine - mean(others)
}

// nodeVsOthers is a field's mean over one node's GPUs and over the other
// training nodes' in [from, to).
func (r *run) nodeVsOthers(field, node string, from, to time.Time) (mine, others float64) {
	var a, b []float64
	for _, p := range r.cluster().job.pods {
		for k := range 8 {
			v := r.gpuMean(field, p.node.name, strconv.Itoa(k), from, to)
			if p.node.name == node {
				a = append(a, v)
			} else {
				b = append(b, v)
			}
		}
	}
	return mean(a), mean(b)
}

// xidsOn are the XID values a node's GPUs report.
func (r *run) xidsOn(node string) []float64 {
	var out []float64
	for k := range 8 {
		for _, s := range r.gpuSeries("DCGM_FI_DEV_XID_ERRORS", node, strconv.Itoa(k)) {
			out = append(out, s.between(r.cfg.Start, r.end())...)
		}
	}
	return out
}

// rankRestarts is the restart count of the faulty GPU's training pod at
// the end.
func (r *run) rankRestarts(f Fault) float64 {
	v, _ := r.one("kube_pod_container_status_restarts_total", "pod", r.rankOn(f.Entity["node"])).last(r.end())
	return v
}

// requireHang: the job's other ranks stopped working after the onset
// (spinning in NCCL, or restarted and waiting): their power far below
// what it was.
func (r *run) requireHang(f Fault) {
	j := r.cluster().job
	var before, after []float64
	for _, p := range j.pods {
		if p.node.name == f.Entity["node"] {
			continue
		}
		for k := range 8 {
			before = append(before, r.gpuMean("DCGM_FI_DEV_POWER_USAGE", p.node.name, strconv.Itoa(k), f.Onset.Add(-4*time.Minute), f.Onset))
			after = append(after, r.gpuMean("DCGM_FI_DEV_POWER_USAGE", p.node.name, strconv.Itoa(k), r.end().Add(-2*time.Minute), r.end()))
		}
	}
	require.Less(r.t, mean(after), 0.6*mean(before), "the job hangs")
}

// rankOn names the training pod on a node.
func (r *run) rankOn(node string) string {
	for _, p := range r.cluster().job.pods {
		if p.node.name == node {
			return p.name
		}
	}
	r.t.Fatalf("no rank on %s", node)
	return ""
}

func (r *run) nodeOf(name string) *node {
	for _, n := range r.cluster().nodes {
		if n.name == name {
			return n
		}
	}
	r.t.Fatalf("no node %s", name)
	return nil
}
