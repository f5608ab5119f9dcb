package sim

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// TestQuirksCoverSeeds: a series of seeds draws every exporter quirk both
// ways, and a pinned one stays pinned.
func TestQuirksCoverSeeds(t *testing.T) {
	seen := map[string]map[string]bool{}
	see := func(k, v string) {
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		seen[k][v] = true
	}
	for seed := uint64(1); seed <= 30; seed++ {
		l := Config{Seed: seed}.Resolve().Labels
		see("xid", l.XIDCount)
		see("nvlink", l.NVLinkErrors)
		see("ksm", l.KSM)
		see("blank", l.DCGMBlank)
		see("vllm", l.VLLM)
	}
	for k, vs := range seen {
		require.Len(t, vs, 2, "%s: %v", k, vs)
	}
	l := Config{Seed: 3, Labels: Labels{KSM: KSMExported, VLLM: VLLMOld}}.Resolve().Labels
	require.Equal(t, KSMExported, l.KSM)
	require.Equal(t, VLLMOld, l.VLLM)
	require.Equal(t, Config{Seed: 3}.Resolve().Labels.DCGMHost, l.DCGMHost, "pinning one does not move the others")
}

// quirkRun runs a scenario with testLabels changed by set.
func quirkRun(t *testing.T, name string, set func(l *Labels)) *run {
	t.Helper()
	sc, err := ParseScenario(name)
	require.NoError(t, err)
	for i := range sc.Faults {
		sc.Faults[i].After = faultAfter
	}
	l := testLabels
	set(&l)
	return simulateScenario(t, Config{Seed: quietSeed(t, name), Duration: faultRun, Labels: l}, sc)
}

// TestXIDCount: DCGM_EXP_XID_ERRORS_COUNT counts each XID code over the
// five-minute window, repeats too, where the sticky gauge shows only the
// last code; seeds without it have no such series.
func TestXIDCount(t *testing.T) {
	r := quirkRun(t, "nvlink_degraded", func(l *Labels) { l.XIDCount = On })
	f := r.truth(t)
	count := fmt.Sprintf(`DCGM_EXP_XID_ERRORS_COUNT{Hostname=%q,gpu=%q,xid="74",window_size_in_ms="300000"}`, f.Entity["node"], f.Entity["gpu"])
	require.True(t, r.empty(t, count, f.Onset.Add(-time.Second)))
	require.Equal(t, 1.0, r.value(t, count, f.Onset.Add(30*time.Second)))
	require.Equal(t, 3.0, r.value(t, count, f.Onset.Add(4*time.Minute+30*time.Second)), "XID 74 again every two minutes")
	require.Equal(t, 74.0, xidOf(t, r, f.Entity, r.end()), "the sticky gauge shows one value all along")
	require.Equal(t, 0.0, r.value(t, `changes(`+onGPU("DCGM_FI_DEV_XID_ERRORS", f.Entity)+`[6m])`, r.end()))

	// The decoy's XID 63 is counted inside its window, then its series
	// ends.
	h := quirkRun(t, Healthy, func(l *Labels) { l.XIDCount = On })
	var remap Decoy
	for _, d := range h.sim.Decoys() {
		if d.Kind == DecoyRowRemap {
			remap = d
		}
	}
	c63 := fmt.Sprintf(`DCGM_EXP_XID_ERRORS_COUNT{Hostname=%q,gpu=%q,xid="63"}`, remap.Entity["node"], remap.Entity["gpu"])
	require.Equal(t, 1.0, h.value(t, `max_over_time(`+c63+`[14m])`, h.end()))
	require.Equal(t, 1.0, h.value(t, `count(count_over_time(DCGM_EXP_XID_ERRORS_COUNT[14m]))`, h.end()), "no other XID")
	off := quirkRun(t, "nvlink_degraded", func(l *Labels) { l.XIDCount = Off })
	require.True(t, off.empty(t, `DCGM_EXP_XID_ERRORS_COUNT`, off.end()))
}

// TestNVLinkErrorCounters: the NVLink error counters climb on the faulty
// GPU of nvlink_degraded, trickle in its subtle variant and stay flat
// everywhere else.
func TestNVLinkErrorCounters(t *testing.T) {
	flit := "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
	for _, c := range []struct {
		name     string
		min, max float64
	}{{"nvlink_degraded", 1000, 1e9}, {"nvlink_degraded/no_xid", 1000, 1e9}, {"nvlink_degraded/subtle", 1, 40}} {
		r := quirkRun(t, c.name, func(l *Labels) { l.NVLinkErrors = On })
		f, at := r.truth(t), r.end()
		got := r.value(t, `increase(`+onGPU(flit, f.Entity)+`[6m])`, at)
		t.Logf("%s: %.0f CRC flit errors in 6m", c.name, got)
		require.GreaterOrEqual(t, got, c.min, c.name)
		require.LessOrEqual(t, got, c.max, c.name)
		require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`sum(increase(%s{Hostname!=%q}[14m]))`, flit, f.Entity["node"]), at), "flat elsewhere")
		if c.name != "nvlink_degraded/subtle" {
			require.Greater(t, r.value(t, `increase(`+onGPU("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", f.Entity)+`[6m])`, at), 100.0)
		}
	}
	h := quirkRun(t, Healthy, func(l *Labels) { l.NVLinkErrors = On })
	require.Equal(t, 80.0, h.value(t, `count(`+flit+`)`, h.end()))
	require.Equal(t, 0.0, h.value(t, `max(`+flit+`) + max(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL)`, h.end()))
	off := quirkRun(t, Healthy, func(l *Labels) { l.NVLinkErrors = Off })
	require.True(t, off.empty(t, flit, off.end()))
}

// TestKSMExportedLabels: scraped without honor_labels, kube-state-metrics'
// namespace, pod and container are exported_*, and namespace and pod name
// its own pod.
func TestKSMExportedLabels(t *testing.T) {
	r := quirkRun(t, "pod_oom_killed", func(l *Labels) { l.KSM = KSMExported })
	f, at := r.truth(t), r.end()
	sel := fmt.Sprintf(`{exported_namespace=%q,exported_pod=%q,namespace="monitoring",pod=%q}`, f.Entity["namespace"], f.Entity["pod"], ksmSelfPod)
	require.Equal(t, 1.0, r.value(t, `kube_pod_info`+sel, at))
	require.Equal(t, 1.0, r.value(t, `kube_pod_container_status_last_terminated_reason`+sel[:len(sel)-1]+`,exported_container="vllm",container="kube-state-metrics",reason="OOMKilled"}`, at))
	require.True(t, r.empty(t, fmt.Sprintf(`kube_pod_info{pod=%q}`, f.Entity["pod"]), at))
	require.Equal(t, 10.0, r.value(t, `count(kube_node_info{namespace="monitoring"})`, at), "node series carry the target labels too")
	require.Equal(t, 1.0, r.value(t, `up{job="kube-state-metrics",namespace="monitoring"}`, at))
	// Other exporters keep their own labels.
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`count(container_oom_events_total{pod=%q,container=""})`, f.Entity["pod"]), at))
}

// TestDCGMBlank: a GPU that cannot read a field reports DCGM's blank
// sentinel, printed as dcgm-exporter prints it, instead of leaving the
// field out.
func TestDCGMBlank(t *testing.T) {
	r := quirkRun(t, Healthy, func(l *Labels) { l.DCGMBlank = BlankSentinel })
	at := r.end()
	temps := r.instant(t, `DCGM_FI_DEV_MEMORY_TEMP`, at, "UUID")
	require.Len(t, temps, 80)
	for _, v := range temps {
		require.True(t, catalog.IsBlank(v), "%g", v)
	}
	require.True(t, bytes.Contains(r.om, []byte("\nDCGM_FI_DEV_MEMORY_TEMP{")))
	require.True(t, bytes.Contains(r.om, []byte("} 9223372036854775794 ")), "the exporter's integer")
	for _, v := range r.instant(t, `DCGM_FI_DEV_GPU_TEMP`, at, "UUID") {
		require.False(t, catalog.IsBlank(v), "other fields are readings")
	}
	v := quirkRun(t, Healthy, func(l *Labels) { l.DCGMBlank = BlankAbsent })
	for _, x := range v.instant(t, `DCGM_FI_DEV_MEMORY_TEMP`, at, "UUID") {
		require.InDelta(t, 65, x, 45, "a temperature")
	}
}

// TestVLLMOldNames: a vLLM 0.9 deployment speaks its old names and has no
// engine label; kv_cache_exhausted shows under them.
func TestVLLMOldNames(t *testing.T) {
	r := quirkRun(t, "kv_cache_exhausted", func(l *Labels) { l.VLLM = VLLMOld })
	f, at := r.truth(t), r.end()
	require.True(t, r.empty(t, `vllm:kv_cache_usage_perc`, at))
	require.True(t, r.empty(t, `vllm:inter_token_latency_seconds_count`, at))
	require.Greater(t, r.value(t, fmt.Sprintf(`vllm:gpu_cache_usage_perc{pod=%q}`, f.Entity["pod"]), at), 0.97)
	require.Equal(t, 4.0, r.value(t, `count(vllm:time_per_output_token_seconds_count)`, at))
	require.Equal(t, 0.0, r.value(t, `count(vllm:num_requests_running{engine!=""}) or vector(0)`, at))
	require.Equal(t, "v0.9.2", r.sim.RequestPath().ModelServers[0].Version)
}
