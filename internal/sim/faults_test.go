package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/store"
)

// peers selects the training job's GPUs off node.
func peers(metric, node string) string {
	return fmt.Sprintf(`%s{namespace=%q,Hostname!=%q}`, metric, TrainingNamespace, node)
}

// onGPU selects one GPU's series.
func onGPU(metric string, e map[string]string) string {
	return fmt.Sprintf(`%s{Hostname=%q,gpu=%q}`, metric, e["node"], e["gpu"])
}

// requireHang checks the NCCL-hang signature on the job's GPUs off node at
// at: GPU_UTIL stays near 100% while tensor activity and power collapse.
func requireHang(t *testing.T, r *run, node string, at time.Time) {
	t.Helper()
	require.Greater(t, r.value(t, "avg("+peers("DCGM_FI_DEV_GPU_UTIL", node)+")", at), 95.0, "GPU_UTIL stays high")
	require.Less(t, r.value(t, "avg("+peers("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", node)+")", at), 0.01, "tensor activity collapses")
	require.Less(t, r.value(t, "avg("+peers("DCGM_FI_DEV_POWER_USAGE", node)+")", at), 0.3*r.sim.c().spec.TDP, "power collapses")
	require.Less(t, r.value(t, "avg("+peers("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", node)+")", at), 500.0, "NVLink traffic collapses")
}

// peersTensor is the median over the three minutes to at of the peers'
// mean tensor activity: a checkpoint's dip does not move it.
func peersTensor(t *testing.T, r *run, node string, at time.Time) float64 {
	t.Helper()
	return r.value(t, "quantile_over_time(0.5, avg("+peers("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", node)+")[3m:30s])", at)
}

// requireRuns checks that the job still trains at at: peers' tensor
// activity is within a tenth of healthy.
func requireRuns(t *testing.T, r *run, node string, at time.Time) {
	t.Helper()
	require.InDelta(t, 0.575, peersTensor(t, r, node, at), 0.06)
}

// requireSlowed checks that the job's peers wait: their tensor activity
// drops by more than a tenth.
func requireSlowed(t *testing.T, r *run, node string, at time.Time) {
	t.Helper()
	require.Less(t, peersTensor(t, r, node, at), 0.53)
}

// xidOf is a GPU's sticky XID at at.
func xidOf(t *testing.T, r *run, e map[string]string, at time.Time) float64 {
	return r.value(t, onGPU("DCGM_FI_DEV_XID_ERRORS", e), at)
}

// TestFaultSignatures runs every fault kind and variant and checks that
// its signature is in the data, as Vigil would read it.
func TestFaultSignatures(t *testing.T) {
	checks := map[string]func(t *testing.T, r *run, f Fault){}
	for _, m := range []map[string]func(t *testing.T, r *run, f Fault){gpuChecks(), nodeChecks(), hostChecks(), servingChecks(), podChecks()} {
		maps.Copy(checks, m)
	}
	names := slices.DeleteFunc(ScenarioNames(), func(n string) bool { return n == Healthy || slices.Contains([]rune(n), '+') })
	for _, name := range names {
		require.Contains(t, checks, name, "no signature test for %s", name)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := simulateRun(t, name, quietSeed(t, name), longer[name])
			f := r.truth(t)
			require.Equal(t, r.sim.Config().Start.Add(faultAfter), f.Onset)
			checks[name](t, r, f)
		})
	}
}

// quietSeed is the first seed from 11 whose decoy traffic spike stays out
// of the fault's window, so that the checks see the fault alone (the
// decoys have their own test).
func quietSeed(t *testing.T, name string) uint64 {
	sc, err := ParseScenario(name)
	require.NoError(t, err)
	for seed := uint64(11); ; seed++ {
		s, err := New(Config{Seed: seed, Duration: faultRun}, sc)
		require.NoError(t, err)
		quiet := true
		for _, d := range s.Decoys() {
			if d.Kind == DecoySpike && d.At.After(s.Config().Start.Add(faultAfter-2*time.Minute)) {
				quiet = false
			}
		}
		if quiet {
			return seed
		}
	}
}

// longer are the scenarios whose signature takes longer than faultRun to
// play out: the job hangs until the NCCL watchdog, then restarts.
var longer = map[string]time.Duration{"node_down/reboot": 22 * time.Minute,
	// A rollout's last replica serves minutes after the onset.
	"bad_rollout": faultAfter + 10*time.Minute, "bad_rollout/subtle": faultAfter + 10*time.Minute}

const ttftP95 = `histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[2m])))`

// checkNVLink: the faulty node's NVLink bandwidth is the lowest and falls
// a DCGM interval before its peers'; XID 74 where the variant says.
func checkNVLink(t *testing.T, r *run, f Fault) {
	n, at := f.Entity["node"], r.end()
	byNode := r.series(t, `avg by (Hostname) (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{namespace="ml-train"})`, r.sim.Config().DCGMInterval, "Hostname")
	require.Len(t, byNode, 8)
	before := meanBetween(byNode[n], f.Onset.Add(-5*time.Minute), f.Onset.Add(-time.Second))
	fell := firstBelow(byNode[n], f.Onset, before/2)
	require.False(t, fell.IsZero())
	require.Less(t, fell.Sub(f.Onset), 31*time.Second, "falls within a DCGM interval")
	end := meanBetween(byNode[n], at.Add(-2*time.Minute), at)
	for peer, pts := range byNode {
		if peer == n {
			continue
		}
		pf := firstBelow(pts, f.Onset, before/2)
		require.False(t, pf.IsZero(), "%s falls too: the job stalls", peer)
		require.GreaterOrEqual(t, pf.Sub(fell), 30*time.Second, "%s falls after %s", peer, n)
		require.Less(t, end, 0.5*meanBetween(pts, at.Add(-2*time.Minute), at), "%s is the lowest", n)
	}
	xid74 := r.value(t, fmt.Sprintf(`count(DCGM_FI_DEV_XID_ERRORS{Hostname=%q} == 74) or vector(0)`, n), at)
	switch f.Variant {
	case "":
		require.Equal(t, 1.0, xid74)
		require.Equal(t, 74.0, xidOf(t, r, f.Entity, at))
		gpu := r.gpuSeries(t, fmt.Sprintf(`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{Hostname=%q}`, n))
		for k, pts := range gpu {
			if k != n+"/"+f.Entity["gpu"] {
				require.Less(t, meanBetween(gpu[n+"/"+f.Entity["gpu"]], at.Add(-2*time.Minute), at), meanBetween(pts, at.Add(-2*time.Minute), at), "the GPU is the node's lowest")
			}
		}
	case "node":
		require.Equal(t, 8.0, xid74)
	case "no_xid":
		require.Equal(t, 0.0, xid74)
	}
	requireSlowed(t, r, n, at)
}

func checkXID(code float64) func(t *testing.T, r *run, f Fault) {
	return func(t *testing.T, r *run, f Fault) {
		require.NotEqual(t, code, xidOf(t, r, f.Entity, f.Onset.Add(-time.Minute)))
		require.Equal(t, code, xidOf(t, r, f.Entity, f.Onset.Add(30*time.Second)))
		require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`max(DCGM_FI_DEV_GPU_UTIL{Hostname=%q})`, f.Entity["node"]), r.end()), "the rank stopped")
		requireHang(t, r, f.Entity["node"], r.end())
	}
}

func checkGPULost(t *testing.T, r *run, f Fault) {
	n, at := f.Entity["node"], r.end()
	require.Equal(t, 79.0, xidOf(t, r, f.Entity, f.Onset.Add(30*time.Second)))
	require.True(t, r.empty(t, onGPU("DCGM_FI_DEV_GPU_TEMP", f.Entity), at), "the GPU vanished")
	require.Equal(t, 7.0, r.value(t, fmt.Sprintf(`count(DCGM_FI_DEV_GPU_TEMP{Hostname=%q})`, n), at))
	require.Equal(t, 7.0, r.value(t, fmt.Sprintf(`kube_node_status_allocatable{node=%q,resource="nvidia_com_gpu"}`, n), at))
	if f.Variant == Subtle {
		requireRuns(t, r, n, at)
		return
	}
	requireHang(t, r, n, at)
}

func checkThermal(t *testing.T, r *run, f Fault) {
	at, sp := r.end(), r.sim.c().spec
	require.GreaterOrEqual(t, r.value(t, `max_over_time(`+onGPU("DCGM_FI_DEV_GPU_TEMP", f.Entity)+`[3m])`, at), sp.SlowdownTemp)
	reasons := uint64(r.value(t, `max_over_time(`+onGPU("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", f.Entity)+`[3m])`, at))
	require.NotZero(t, reasons&uint64(catalog.ClockSWThermal))
	clock := r.value(t, `quantile_over_time(0.5, `+onGPU("DCGM_FI_DEV_SM_CLOCK", f.Entity)+`[3m])`, at)
	require.Less(t, clock, 0.9*r.value(t, `quantile(0.5, `+peers("DCGM_FI_DEV_SM_CLOCK", f.Entity["node"])+`)`, at))
	require.Greater(t, r.value(t, `increase(`+onGPU("DCGM_FI_DEV_THERMAL_VIOLATION", f.Entity)+`[3m])`, at), 3e10)
	requireSlowed(t, r, f.Entity["node"], at)
}

func checkPower(t *testing.T, r *run, f Fault) {
	at, sp := r.end(), r.sim.c().spec
	sel := fmt.Sprintf(`{Hostname=%q}`, f.Entity["node"])
	if g := f.Entity["gpu"]; g != "" {
		sel = fmt.Sprintf(`{Hostname=%q,gpu=%q}`, f.Entity["node"], g)
	}
	want := 1.0
	if f.Variant == "node" {
		want = 8
	}
	require.Equal(t, want, r.value(t, `count(DCGM_FI_DEV_POWER_USAGE`+sel+` < `+fmt.Sprint(0.52*sp.TDP)+`)`, at))
	require.Equal(t, want, r.value(t, `count(DCGM_FI_DEV_CLOCKS_EVENT_REASONS`+sel+` >= 128)`, at), "power brake")
	require.Greater(t, r.value(t, `min(increase(DCGM_FI_DEV_POWER_VIOLATION`+sel+`[3m]))`, at), 1e11)
	requireSlowed(t, r, f.Entity["node"], at)
}

func checkMemory(code float64) func(t *testing.T, r *run, f Fault) {
	return func(t *testing.T, r *run, f Fault) {
		at := r.end()
		require.Equal(t, code, xidOf(t, r, f.Entity, f.Onset.Add(30*time.Second)))
		dbe := onGPU("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", f.Entity)
		require.Equal(t, 2.0, r.value(t, dbe, at)-r.value(t, dbe, f.Onset.Add(-time.Minute)))
		require.Equal(t, 1.0, r.value(t, onGPU("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", f.Entity), at))
		requireHang(t, r, f.Entity["node"], at)
	}
}

func checkNodeDown(t *testing.T, r *run, f Fault) {
	n, at := f.Entity["node"], r.end()
	require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`up{instance=%q}`, n+":9100"), at))
	require.Equal(t, 2.0, r.value(t, `count(up{job=~"nvidia-dcgm-exporter|node-exporter"} == 0)`, at), "dcgm-exporter and node-exporter")
	require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`up{job="kubelet",node=%q}`, n), at), "and the kubelet")
	require.Equal(t, 3.0, r.value(t, `count(up == 0)`, at), "nothing else")
	require.True(t, r.empty(t, fmt.Sprintf(`DCGM_FI_DEV_GPU_TEMP{Hostname=%q}`, n), at), "its series vanish")
	require.True(t, r.empty(t, fmt.Sprintf(`node_load1{instance=%q}`, n+":9100"), at))
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_node_status_condition{node=%q,condition="Ready",status="unknown"}`, n), at))
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_node_status_condition{node=%q,condition="Ready",status="true"}`, n), f.Onset.Add(30*time.Second)), "within the grace period")
	requireHang(t, r, n, at)
}

func checkNodeReboot(t *testing.T, r *run, f Fault) {
	n, at := f.Entity["node"], r.end()
	back := f.Onset.Add(nodeRebootFor)
	require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`up{instance=%q}`, n+":9100"), back.Add(-time.Minute)))
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`up{instance=%q}`, n+":9100"), at))
	// Counters restart from zero.
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`max(resets(node_cpu_seconds_total{instance=%q}[22m]))`, n+":9100"), at))
	require.Equal(t, 8.0, r.value(t, fmt.Sprintf(`count(resets(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{Hostname=%q}[22m]) == 1)`, n), at))
	// Every rank's container restarted: the rebooted one when its node
	// came back, the others when the NCCL watchdog killed them.
	require.Equal(t, 8.0, r.value(t, `count(changes(kube_pod_container_status_restarts_total{namespace="ml-train"}[22m]) == 1)`, at))
	// The job hangs until the watchdog, then restarts: loading, then
	// training again.
	requireHang(t, r, n, back.Add(time.Minute))
	require.Less(t, r.value(t, "avg("+peers("DCGM_FI_DEV_GPU_UTIL", n)+")", f.Onset.Add(ncclTimeout+time.Minute)), 40.0)
	requireRuns(t, r, n, at)
}

func checkOOM(t *testing.T, r *run, f Fault) {
	at, sel := r.end(), fmt.Sprintf(`{pod=%q}`, f.Entity["pod"])
	restarts := `kube_pod_container_status_restarts_total` + sel
	require.Equal(t, 1.0, r.value(t, restarts, at)-r.value(t, restarts, f.Onset.Add(-time.Minute)))
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_pod_container_status_last_terminated_reason{pod=%q,reason="OOMKilled"}`, f.Entity["pod"]), at))
	require.Equal(t, float64(f.Onset.Unix()), r.value(t, `kube_pod_container_status_last_terminated_timestamp`+sel, at))
	require.Equal(t, 0.0, r.value(t, `up`+sel, f.Onset.Add(15*time.Second)), "the server is gone")
	require.Equal(t, 1.0, r.value(t, `up`+sel, at))
	require.Equal(t, 1.0, r.value(t, `resets(vllm:prompt_tokens_total`+sel+`[14m])`, at), "its counters restart from zero")
}

// requireSubtle checks a subtle variant on a per-GPU dcgm-exporter metric
// of the training job: see requireShift.
func requireSubtle(t *testing.T, r *run, f Fault, metric string, sign float64) {
	t.Helper()
	pts := r.gpuSeries(t, metric+`{namespace="ml-train"}`)
	requireShift(t, r, pts, metric, sign, func(k string) (bad, peer bool) {
		node, gpu, _ := cut(k)
		bad = node == f.Entity["node"] && (f.Entity["gpu"] == "" || gpu == f.Entity["gpu"])
		return bad, node != f.Entity["node"]
	})
}

// requireShift checks a subtle effect: over the last five minutes, the
// faulty series (those of pts whose key which says is bad) sit off their
// peers' median in direction sign by more than 0.8 and at most 3 of the
// peers' spreads (their deviations from the median).
func requireShift(t *testing.T, r *run, pts map[string][]promql.FPoint, what string, sign float64, which func(string) (bad, peer bool)) {
	t.Helper()
	from, to := r.end().Add(-5*time.Minute).UnixMilli(), r.end().UnixMilli()
	at := map[int64]map[string]float64{}
	for k, ps := range pts {
		for _, p := range ps {
			if p.T >= from && p.T <= to {
				if at[p.T] == nil {
					at[p.T] = map[string]float64{}
				}
				at[p.T][k] = p.F
			}
		}
	}
	var shift, spread []float64
	for _, vals := range at {
		var peer, bad []float64
		for k, v := range vals {
			switch b, p := which(k); {
			case b:
				bad = append(bad, v)
			case p:
				peer = append(peer, v)
			}
		}
		if len(bad) == 0 || len(peer) < 3 {
			continue
		}
		slices.Sort(peer)
		med := peer[len(peer)/2]
		for _, v := range bad {
			shift = append(shift, sign*(v-med))
		}
		for _, v := range peer {
			spread = append(spread, v-med)
		}
	}
	require.NotEmpty(t, shift)
	mean := 0.0
	for _, x := range shift {
		mean += x
	}
	mean /= float64(len(shift))
	sd := 0.0
	for _, v := range spread {
		sd += v * v
	}
	sd = math.Sqrt(sd / float64(len(spread)))
	ratio := mean / sd
	t.Logf("%s: shift %.4g, peers' spread %.4g: %.2f spreads", what, mean, sd, ratio)
	require.Greater(t, ratio, 0.8, "the subtle effect is there")
	require.LessOrEqual(t, ratio, 3.0, "and within 3× the peers' spread")
}

func cut(k string) (node, gpu string, ok bool) {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '/' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// checkRequestPath: a request-path fault names its entity as the request
// path completes it, reaches the request path with its onset, and leaves
// the metrics healthy.
func checkRequestPath(key string) func(t *testing.T, r *run, f Fault) {
	return func(t *testing.T, r *run, f Fault) {
		require.NotEmpty(t, f.Entity[key], "%v", f.Entity)
		rc := r.sim.RequestPath()
		require.Len(t, rc.Faults, 1)
		require.Equal(t, f.Kind, rc.Faults[0].Kind)
		require.Equal(t, f.Onset, rc.Faults[0].Onset)
		require.Equal(t, f.Subtle, rc.Faults[0].Variant == "subtle")
		require.Equal(t, f.Entity, rc.WithDefaults().Faults[0].Entity)
		requireRuns(t, r, "", r.end())
		require.Equal(t, 0.0, r.value(t, `sum(vllm:num_requests_waiting)`, r.end()))
	}
}

// requireNodeShift checks a subtle node-level effect: q gives one series per
// node-exporter instance.
func requireNodeShift(t *testing.T, r *run, f Fault, q string, sign float64) {
	t.Helper()
	c := r.sim.Config()
	v, _, err := store.QueryRange(t.Context(), r.store, q, c.Start, r.end(), c.ScrapeInterval)
	require.NoError(t, err)
	pts := map[string][]promql.FPoint{}
	for _, s := range v.(promql.Matrix) {
		pts[s.Metric.Get("instance")] = s.Floats
	}
	training := map[string]bool{}
	for i := range c.TrainingNodes {
		training[fmt.Sprintf("gpu-node-%02d:9100", i+1)] = true
	}
	requireShift(t, r, pts, q, sign, func(k string) (bad, peer bool) {
		bad = k == f.Entity["node"]+":9100"
		return bad, !bad && training[k]
	})
}

func checkEvicted(t *testing.T, r *run, f Fault) {
	at, pod := r.end(), f.Entity["pod"]
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_pod_status_reason{pod=%q,reason="Evicted"}`, pod), at))
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_pod_status_phase{pod=%q,phase="Failed"}`, pod), at))
	require.True(t, r.empty(t, fmt.Sprintf(`up{pod=%q}`, pod), at), "its endpoint is gone")
	require.Equal(t, 4.0, r.value(t, `count(up{job="vllm"} == 1)`, at), "a replacement serves")
	require.Equal(t, 5.0, r.value(t, fmt.Sprintf(`count(kube_pod_owner{namespace=%q,owner_kind="ReplicaSet"})`, InferenceNamespace), at), "the evicted pod stays listed")
	// The replacement holds the evicted pod's GPUs.
	gpus := r.instant(t, fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{pod=%q}`, pod), f.Onset.Add(-time.Minute), "gpu")
	require.Len(t, gpus, 2)
	for g := range gpus {
		repl := r.instant(t, fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{gpu=%q,namespace=%q}`, g, InferenceNamespace), at, "pod")
		require.NotContains(t, repl, pod)
	}
	pressure := r.value(t, `max_over_time(max(kube_node_status_condition{condition="DiskPressure",status="true"})[8m:15s])`, at)
	require.Equal(t, map[bool]float64{false: 1, true: 0}[f.Subtle], pressure)
}

// gpuChecks are the signature checks of the GPU hardware kinds.
func gpuChecks() map[string]func(t *testing.T, r *run, f Fault) {
	return map[string]func(t *testing.T, r *run, f Fault){
		"nvlink_degraded":        checkNVLink,
		"nvlink_degraded/node":   checkNVLink,
		"nvlink_degraded/no_xid": checkNVLink,
		"nvlink_degraded/subtle": func(t *testing.T, r *run, f Fault) {
			requireSubtle(t, r, f, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", -1)
			requireRuns(t, r, f.Entity["node"], r.end())
			require.Equal(t, 0.0, r.value(t, `count(DCGM_FI_DEV_XID_ERRORS == 74) or vector(0)`, r.end()))
		},
		"gpu_xid_error":     checkXID(119),
		"gpu_xid_error/109": checkXID(109),
		"gpu_xid_error/subtle": func(t *testing.T, r *run, f Fault) {
			require.Equal(t, 119.0, xidOf(t, r, f.Entity, r.end()))
			requireRuns(t, r, f.Entity["node"], r.end())
		},
		"gpu_lost":             checkGPULost,
		"gpu_lost/subtle":      checkGPULost,
		"gpu_thermal_throttle": checkThermal,
		"gpu_thermal_throttle/subtle": func(t *testing.T, r *run, f Fault) {
			requireSubtle(t, r, f, "DCGM_FI_DEV_SM_CLOCK", -1)
			reasons := onGPU("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", f.Entity)
			require.Equal(t, 32.0, r.value(t, `max_over_time(`+reasons+`[5m])`, r.end()), "sw_thermal now and then")
			require.Less(t, r.value(t, onGPU("DCGM_FI_DEV_GPU_TEMP", f.Entity), r.end()), r.sim.c().spec.SlowdownTemp)
		},
		"gpu_power_throttle":      checkPower,
		"gpu_power_throttle/node": checkPower,
		"gpu_power_throttle/subtle": func(t *testing.T, r *run, f Fault) {
			requireSubtle(t, r, f, "DCGM_FI_DEV_POWER_USAGE", -1)
			requireRuns(t, r, f.Entity["node"], r.end())
		},
		"gpu_memory_errors":    checkMemory(48),
		"gpu_memory_errors/94": checkMemory(94),
		"gpu_memory_errors/95": checkMemory(95),
		"gpu_memory_errors/subtle": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			require.Greater(t, r.value(t, `increase(`+onGPU("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", f.Entity)+`[6m])`, at), 3.0)
			require.GreaterOrEqual(t, r.value(t, onGPU("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", f.Entity), at), 1.0)
			require.Equal(t, 0.0, r.value(t, onGPU("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", f.Entity), at))
			requireRuns(t, r, f.Entity["node"], at)
		},
		"pcie_degraded": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			require.Equal(t, 8.0, r.value(t, onGPU("DCGM_FI_DEV_PCIE_LINK_WIDTH", f.Entity), at))
			require.Equal(t, 16.0, r.value(t, onGPU("DCGM_FI_DEV_PCIE_LINK_WIDTH", f.Entity), f.Onset.Add(-time.Minute)))
			require.Greater(t, r.value(t, `increase(`+onGPU("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", f.Entity)+`[5m])`, at), 500.0)
			require.Less(t, r.value(t, onGPU("DCGM_FI_PROF_PCIE_RX_BYTES", f.Entity), at), 0.6*r.value(t, `avg(`+peers("DCGM_FI_PROF_PCIE_RX_BYTES", f.Entity["node"])+`)`, at))
		},
		"pcie_degraded/subtle": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			n := r.value(t, `increase(`+onGPU("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", f.Entity)+`[6m])`, at)
			require.Greater(t, n, 4.0)
			require.Less(t, n, 60.0)
			require.Equal(t, 16.0, r.value(t, onGPU("DCGM_FI_DEV_PCIE_LINK_WIDTH", f.Entity), at))
		},
	}
}

// nodeChecks are the signature checks of the node and training-job kinds.
func nodeChecks() map[string]func(t *testing.T, r *run, f Fault) {
	return map[string]func(t *testing.T, r *run, f Fault){
		"node_down":        checkNodeDown,
		"node_down/reboot": checkNodeReboot,
		"node_down/subtle": func(t *testing.T, r *run, f Fault) {
			n := f.Entity["node"]
			require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`up{instance=%q}`, n+":9100"), f.Onset.Add(30*time.Second)))
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`up{instance=%q}`, n+":9100"), r.end()))
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_node_status_condition{node=%q,condition="Ready",status="unknown"}`, n), f.Onset.Add(time.Minute)))
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_node_status_condition{node=%q,condition="Ready",status="true"}`, n), r.end()))
			requireRuns(t, r, n, r.end())
		},
		"straggler": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			requireSlowed(t, r, n, at)
			byNode := r.instant(t, `avg by (Hostname) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{namespace="ml-train"})`, at, "Hostname")
			for k, v := range byNode {
				if k != n {
					require.Greater(t, byNode[n], v, "the slow rank is the busiest")
				}
			}
			require.Equal(t, 0.0, r.value(t, `max(DCGM_FI_DEV_CLOCKS_EVENT_REASONS{namespace="ml-train"})`, at), "no hardware reason")
		},
		"straggler/subtle": func(t *testing.T, r *run, f Fault) {
			requireSubtle(t, r, f, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", +1)
		},
		"exporter_down": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			ip := r.value(t, fmt.Sprintf(`count(kube_node_info{node=%q})`, n), at)
			require.Equal(t, 1.0, ip)
			require.Equal(t, 1.0, r.value(t, `count(up{job="nvidia-dcgm-exporter"} == 0)`, at))
			require.True(t, r.empty(t, fmt.Sprintf(`DCGM_FI_DEV_GPU_TEMP{Hostname=%q}`, n), at), "its series vanish")
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`up{instance=%q}`, n+":9100"), at), "the node is up")
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_node_status_condition{node=%q,condition="Ready",status="true"}`, n), at))
			requireRuns(t, r, n, at)
		},
		"exporter_down/subtle": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			require.Equal(t, 7.0, r.value(t, fmt.Sprintf(`count(DCGM_FI_DEV_GPU_TEMP{Hostname=%q})`, n), at))
			require.True(t, r.empty(t, onGPU("DCGM_FI_DEV_GPU_TEMP", f.Entity), at))
			require.Equal(t, 0.0, r.value(t, `count(up == 0) or vector(0)`, at))
			requireRuns(t, r, n, at)
		},
	}
}

// hostChecks are the signature checks of the host kinds: CPU, memory,
// InfiniBand and input.
func hostChecks() map[string]func(t *testing.T, r *run, f Fault) {
	return map[string]func(t *testing.T, r *run, f Fault){
		"node_cpu_saturated": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			cpu := r.instant(t, `1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[2m]))`, at, "instance")
			require.Greater(t, cpu[n+":9100"], 0.9)
			for k, v := range cpu {
				if k != n+":9100" {
					require.Less(t, v, 0.5, k)
				}
			}
			require.Greater(t, r.value(t, fmt.Sprintf(`rate(node_pressure_cpu_waiting_seconds_total{instance=%q}[2m])`, n+":9100"), at), 0.3)
			require.Less(t, r.value(t, fmt.Sprintf(`avg(DCGM_FI_DEV_GPU_UTIL{Hostname=%q})`, n), at), 85.0, "its GPUs wait for input")
			require.Greater(t, r.value(t, "avg("+peers("DCGM_FI_DEV_GPU_UTIL", n)+")", at), 95.0, "its peers wait in NCCL")
			requireSlowed(t, r, n, at)
		},
		"node_cpu_saturated/subtle": func(t *testing.T, r *run, f Fault) {
			requireNodeShift(t, r, f, `1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[1m]))`, +1)
		},
		"node_memory_pressure": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			inst := fmt.Sprintf(`{instance=%q}`, n+":9100")
			require.Less(t, r.value(t, `node_memory_MemAvailable_bytes`+inst+` / node_memory_MemTotal_bytes`+inst, at), 0.03)
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_node_status_condition{node=%q,condition="MemoryPressure",status="true"}`, n), at))
			require.Greater(t, r.value(t, `rate(node_pressure_memory_stalled_seconds_total`+inst+`[2m])`, at), 0.1)
			requireSlowed(t, r, n, at)
		},
		"node_memory_pressure/subtle": func(t *testing.T, r *run, f Fault) {
			requireNodeShift(t, r, f, `1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes`, +1)
			require.Equal(t, 0.0, r.value(t, `count(kube_node_status_condition{condition="MemoryPressure",status="true"} == 1) or vector(0)`, r.end()))
		},
		"node_network_degraded": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			inst := fmt.Sprintf(`{instance=%q}`, n+":9100")
			require.Greater(t, r.value(t, `sum(increase(node_infiniband_symbol_error_total`+inst+`[5m]))`, at), 1000.0)
			require.Greater(t, r.value(t, `sum(rate(node_infiniband_port_transmit_wait_total`+inst+`[2m]))`, at),
				5*r.value(t, fmt.Sprintf(`sum(rate(node_infiniband_port_transmit_wait_total{instance!=%q}[2m])) / 9`, n+":9100"), at))
			requireSlowed(t, r, n, at)
		},
		"node_network_degraded/port_down": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			inst := fmt.Sprintf(`{instance=%q}`, n+":9100")
			require.Equal(t, 1.0, r.value(t, `count(node_infiniband_state_id`+inst+` == 1)`, at))
			require.Equal(t, 1.0, r.value(t, `sum(node_infiniband_link_downed_total`+inst+`)`, at))
			require.Equal(t, 0.0, r.value(t, `min(rate(node_infiniband_port_data_received_bytes_total`+inst+`[2m]))`, at), "the down port moves nothing")
			requireSlowed(t, r, n, at)
		},
		"node_network_degraded/subtle": func(t *testing.T, r *run, f Fault) {
			n, at := f.Entity["node"], r.end()
			errs := r.value(t, fmt.Sprintf(`sum(increase(node_infiniband_symbol_error_total{instance=%q}[5m]))`, n+":9100"), at)
			require.Greater(t, errs, 10.0)
			require.Less(t, errs, 200.0)
			requireRuns(t, r, n, at)
		},
		"input_pipeline_slow": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			require.Less(t, r.value(t, `max(avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{namespace="ml-train"}))`, at), 80.0, "every rank waits for input")
			require.Greater(t, r.value(t, `min(rate(node_pressure_io_waiting_seconds_total[2m]) and on(instance) label_replace(kube_node_info{node=~"gpu-node-0[1-8]"}, "instance", "$1:9100", "node", "(.*)"))`, at), 0.2)
			requireSlowed(t, r, "", at)
		},
		"input_pipeline_slow/subtle": checkInputSubtle,
	}
}

// servingChecks are the signature checks of the inference, drift, waste and request-path kinds.
func servingChecks() map[string]func(t *testing.T, r *run, f Fault) {
	return map[string]func(t *testing.T, r *run, f Fault){
		"inference_capacity_saturated": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			require.Greater(t, r.value(t, `sum(vllm:num_requests_waiting)`, at), 50.0)
			before := r.value(t, ttftP95, f.Onset)
			require.Greater(t, r.value(t, ttftP95, at), 5*before, "time to first token climbs")
		},
		"inference_capacity_saturated/subtle": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			before := r.value(t, ttftP95, f.Onset)
			after := r.value(t, ttftP95, at)
			require.Greater(t, after, 1.15*before)
			require.Less(t, after, 2*before)
			require.Less(t, r.value(t, `max_over_time(sum(vllm:num_requests_waiting)[5m:15s])`, at), 10.0, "no queue to speak of")
		},
		"kv_cache_exhausted": func(t *testing.T, r *run, f Fault) {
			at, sel := r.end(), fmt.Sprintf(`{pod=%q}`, f.Entity["pod"])
			require.Greater(t, r.value(t, `vllm:kv_cache_usage_perc`+sel, at), 0.97)
			require.Greater(t, r.value(t, `increase(vllm:num_preemptions_total`+sel+`[3m])`, at), 10.0)
			require.Greater(t, r.value(t, `vllm:num_requests_waiting`+sel, at), 20.0)
			require.Less(t, r.value(t, fmt.Sprintf(`max(vllm:kv_cache_usage_perc{pod!=%q})`, f.Entity["pod"]), at), 0.6)
		},
		"kv_cache_exhausted/subtle": func(t *testing.T, r *run, f Fault) {
			c := r.sim.Config()
			v, _, err := store.QueryRange(t.Context(), r.store, `vllm:kv_cache_usage_perc`, c.Start, r.end(), c.ScrapeInterval)
			require.NoError(t, err)
			pts := map[string][]promql.FPoint{}
			for _, s := range v.(promql.Matrix) {
				pts[s.Metric.Get("pod")] = s.Floats
			}
			requireShift(t, r, pts, "vllm:kv_cache_usage_perc", +1, func(k string) (bad, peer bool) {
				return k == f.Entity["pod"], k != f.Entity["pod"]
			})
		},
		"gpu_idle": func(t *testing.T, r *run, f Fault) {
			sel := fmt.Sprintf(`{namespace=%q,pod=%q}`, f.Entity["namespace"], f.Entity["pod"])
			req := fmt.Sprintf(`kube_pod_container_resource_requests{namespace=%q,pod=%q,resource="nvidia_com_gpu"}`, f.Entity["namespace"], f.Entity["pod"])
			require.Greater(t, r.value(t, `avg_over_time(DCGM_FI_DEV_GPU_UTIL`+sel+`[7m])`, f.Onset), 10.0, "used before")
			require.Equal(t, 0.0, r.value(t, `max_over_time(DCGM_FI_DEV_GPU_UTIL`+sel+`[6m])`, r.end()), "idle after")
			require.Greater(t, r.value(t, `DCGM_FI_DEV_FB_USED`+sel, r.end()), 20000.0, "memory held")
			require.Equal(t, 1.0, r.value(t, req, r.end()), "and requested")
		},
		"gpu_idle/subtle": func(t *testing.T, r *run, f Fault) {
			sel := fmt.Sprintf(`{namespace=%q,pod=%q}`, f.Entity["namespace"], f.Entity["pod"])
			util := r.value(t, `avg_over_time(DCGM_FI_DEV_GPU_UTIL`+sel+`[6m])`, r.end())
			require.Greater(t, util, 2.0, "GPU_UTIL says busy")
			require.Less(t, util, 10.0)
			require.Less(t, r.value(t, `max_over_time(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE`+sel+`[6m])`, r.end()), 0.001, "nothing computed")
		},
		"model_drift": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			p50 := `histogram_quantile(0.5, sum by (le) (rate(vllm:request_prompt_tokens_bucket[2m])))`
			require.Greater(t, r.value(t, p50, at), 1.8*r.value(t, p50, f.Onset))
			require.Less(t, r.value(t, `avg_over_time(model_accuracy[2m])`, at), healthyAccuracy-0.05)
			require.InDelta(t, healthyAccuracy, r.value(t, `avg_over_time(model_accuracy[5m])`, f.Onset), 0.005)
			require.Greater(t, r.value(t, ttftP95, at), 1.25*r.value(t, ttftP95, f.Onset), "longer prompts, longer prefill")
		},
		"model_drift/subtle": func(t *testing.T, r *run, f Fault) {
			at := r.end()
			p50 := `histogram_quantile(0.5, sum by (le) (rate(vllm:request_prompt_tokens_bucket[2m])))`
			ratio := r.value(t, p50, at) / r.value(t, p50, f.Onset)
			require.Greater(t, ratio, 1.03)
			require.Less(t, ratio, 1.2)
			shift := r.value(t, `avg_over_time(model_accuracy[5m])`, f.Onset) - r.value(t, `avg_over_time(model_accuracy[3m])`, at)
			require.Greater(t, shift, 0.8*accuracyNoise*0.7, "accuracy lower (the fault has ramped %.0f%%)", 70.0)
			require.LessOrEqual(t, shift, 3*accuracyNoise)
		},
		"dependency_slow":        checkRequestPath("service"),
		"dependency_slow/subtle": checkRequestPath("service"),
		"tenant_failure":         checkRequestPath("tenant"),
		"tenant_failure/subtle":  checkRequestPath("tenant"),
		"bad_rollout":            checkBadRollout,
		"bad_rollout/subtle":     checkBadRollout,
	}
}

// podChecks are the signature checks of the Kubernetes pod kinds.
func podChecks() map[string]func(t *testing.T, r *run, f Fault) {
	return map[string]func(t *testing.T, r *run, f Fault){
		"pod_oom_killed":        checkOOM,
		"pod_oom_killed/subtle": checkOOM,
		"pod_crash_loop": func(t *testing.T, r *run, f Fault) {
			at, pod := r.end(), f.Entity["pod"]
			restarts := fmt.Sprintf(`kube_pod_container_status_restarts_total{pod=%q}`, pod)
			require.GreaterOrEqual(t, r.value(t, restarts, at)-r.value(t, restarts, f.Onset.Add(-time.Minute)), 4.0)
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`max_over_time(kube_pod_container_status_waiting_reason{pod=%q,reason="CrashLoopBackOff"}[3m])`, pod), at))
			require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`max_over_time(up{pod=%q}[6m])`, pod), at), "it never serves")
			require.True(t, r.empty(t, fmt.Sprintf(`vllm:num_requests_running{pod=%q}`, pod), at), "its metrics are gone")
			require.Equal(t, 3.0, r.value(t, `count(up{job="vllm"} == 1)`, at), "its peers serve")
		},
		"pod_crash_loop/subtle": func(t *testing.T, r *run, f Fault) {
			at, pod := r.end(), f.Entity["pod"]
			restarts := fmt.Sprintf(`kube_pod_container_status_restarts_total{pod=%q}`, pod)
			require.Equal(t, 2.0, r.value(t, restarts, at)-r.value(t, restarts, f.Onset.Add(-time.Minute)), "every six minutes")
			require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`up{pod=%q}`, pod), at))
			require.Equal(t, 2.0, r.value(t, fmt.Sprintf(`resets(vllm:prompt_tokens_total{pod=%q}[8m])`, pod), at))
		},
		"pod_evicted":        checkEvicted,
		"pod_evicted/subtle": checkEvicted,
	}
}

// checkInputSubtle: every rank idles a little more, between 0.8 and 3 of
// the healthy spreads of GPU_UTIL.
func checkInputSubtle(t *testing.T, r *run, f Fault) {
	// Every rank is hit: compare each GPU with its own past.
	// Checkpoints (GPU_UTIL under 50) are left out.
	pts := r.gpuSeries(t, `DCGM_FI_DEV_GPU_UTIL{namespace="ml-train"} > 50`)
	var before, after, dev []float64
	for _, ps := range pts {
		b := meanBetween(ps, f.Onset.Add(-5*time.Minute), f.Onset.Add(-time.Second))
		before, after = append(before, b), append(after, meanBetween(ps, r.end().Add(-4*time.Minute), r.end()))
		for _, p := range ps {
			if p.T < f.Onset.UnixMilli() && p.T >= f.Onset.Add(-5*time.Minute).UnixMilli() && p.F > 50 {
				dev = append(dev, p.F-b)
			}
		}
	}
	sd := 0.0
	for _, d := range dev {
		sd += d * d
	}
	sd = math.Sqrt(sd / float64(len(dev)))
	shift := 0.0
	for i := range before {
		shift += (before[i] - after[i]) / float64(len(before))
	}
	t.Logf("GPU_UTIL: shift %.3g, spread %.3g: %.2f spreads", shift, sd, shift/sd)
	require.Greater(t, shift/sd, 0.8)
	require.LessOrEqual(t, shift/sd, 3.0)
}
