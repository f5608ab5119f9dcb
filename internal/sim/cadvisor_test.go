package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCAdvisorHealthy: the kubelet's cAdvisor reports every running pod's
// container (labels as cAdvisor gives them) and the pod's own cgroup; the
// old OOM kill of the decoy shows in its pod's cgroup.
func TestCAdvisorHealthy(t *testing.T) {
	r := simulateRun(t, Healthy, 3, 4*time.Minute)
	at := r.end()
	ctr := `{container!="",job="kubelet"}`
	for _, m := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
		"container_spec_memory_limit_bytes", "container_oom_events_total"} {
		require.Equal(t, 13.0, r.value(t, `count(`+m+ctr+`)`, at), "%s: 8 ranks, 4 replicas and the notebook", m)
		require.Equal(t, 13.0, r.value(t, `count(`+m+`{container="",pod!=""})`, at), "%s: every pod's own cgroup", m)
	}
	// Only containers with a CPU limit have CFS series: not the ranks.
	require.Equal(t, 5.0, r.value(t, `count(container_cpu_cfs_periods_total`+ctr+`)`, at))
	require.Equal(t, 5.0, r.value(t, `count(container_cpu_cfs_throttled_periods_total`+ctr+`)`, at))
	require.Equal(t, 0.0, r.value(t, `max(container_spec_memory_limit_bytes{namespace="ml-train"})`, at), "no limit")
	require.Equal(t, float64(256<<30), r.value(t, `max(container_spec_memory_limit_bytes{namespace="inference"})`, at))
	lbl := r.instant(t, `container_memory_working_set_bytes{pod="llm-pretrain-worker-2",container="pytorch"}`, at, "id")
	require.Len(t, lbl, 1)
	for id := range lbl {
		require.Regexp(t, `^/kubepods\.slice/kubepods-burstable\.slice/kubepods-burstable-pod[0-9a-f_]{36}\.slice/cri-containerd-[0-9a-f]{64}\.scope$`, id)
	}
	require.Equal(t, 1.0, r.value(t, `count(container_memory_working_set_bytes{image="nvcr.io/nvidia/pytorch:24.09-py3",name=~"[0-9a-f]{64}",node="gpu-node-03"})`, at))
	// A rank uses tens of cores; the pod's cgroup counts what its
	// container does.
	cpu := r.value(t, `rate(container_cpu_usage_seconds_total{pod="llm-pretrain-worker-2",container="pytorch"}[2m])`, at)
	require.InDelta(t, 40, cpu, 4)
	require.InDelta(t, cpu, r.value(t, `rate(container_cpu_usage_seconds_total{pod="llm-pretrain-worker-2",container=""}[2m])`, at), 0.5)
	// The decoy: an OOM kill three days ago, in the pod's cgroup only.
	oom := r.sim.Decoys()[5]
	require.Equal(t, DecoyOldOOM, oom.Kind)
	require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`container_oom_events_total{pod=%q,container=""}`, oom.Entity["pod"]), at))
	require.Equal(t, 1.0, r.value(t, `sum(container_oom_events_total)`, at))
	require.Equal(t, 10.0, r.value(t, `count(up{job="kubelet",metrics_path="/metrics/cadvisor"} == 1)`, at))
}

// TestCAdvisorOOM: before the kill the container's working set climbs to
// its limit; at it the pod's cgroup counts an OOM event and a new
// container (new ID) starts from a low working set.
func TestCAdvisorOOM(t *testing.T) {
	r := simulateRun(t, "pod_oom_killed", 11, 0)
	f := r.truth(t)
	pod := fmt.Sprintf(`{pod=%q,container="vllm"}`, f.Entity["pod"])
	limit := r.value(t, `container_spec_memory_limit_bytes`+pod, f.Onset.Add(-time.Minute))
	ws := func(at time.Time) float64 {
		return r.value(t, `max(container_memory_working_set_bytes`+pod+`)`, at)
	}
	require.Less(t, ws(f.Onset.Add(-4*time.Minute)), 0.5*limit, "usual")
	require.Greater(t, ws(f.Onset.Add(-15*time.Second)), 0.95*limit, "at its limit before the kill")
	oom := fmt.Sprintf(`container_oom_events_total{pod=%q,container=""}`, f.Entity["pod"])
	require.Equal(t, 1.0, r.value(t, oom, r.end())-r.value(t, oom, f.Onset.Add(-time.Minute)))
	before := r.instant(t, `container_memory_working_set_bytes`+pod, f.Onset.Add(-time.Minute), "name")
	after := r.instant(t, `container_memory_working_set_bytes`+pod, f.Onset.Add(30*time.Second), "name")
	// (The killed container's series lingers in queries for the lookback:
	// it vanished without a staleness marker.)
	fresh := 0
	for name := range after {
		if _, ok := before[name]; ok {
			continue
		}
		fresh++
		require.Less(t, r.value(t, fmt.Sprintf(`container_memory_working_set_bytes{name=%q}`, name), f.Onset.Add(time.Minute)), 0.5*limit, "the new one starts low")
	}
	require.Equal(t, 1, fresh, "a restarted container has a new ID")
	// The peers' working sets do not move.
	require.Less(t, r.value(t, fmt.Sprintf(`max(max_over_time(container_memory_working_set_bytes{namespace="inference",container="vllm",pod!=%q}[14m]))`, f.Entity["pod"]), r.end()), 0.5*limit)
}

// TestCAdvisorMemoryPressure: the leak of node_memory_pressure is in the
// working set of the rank on that node.
func TestCAdvisorMemoryPressure(t *testing.T) {
	r := simulateRun(t, "node_memory_pressure", 11, 0)
	f := r.truth(t)
	byNode := r.instant(t, `container_memory_working_set_bytes{namespace="ml-train",container="pytorch"}`, r.end(), "node")
	require.Len(t, byNode, 8)
	for n, v := range byNode {
		if n != f.Entity["node"] {
			require.Greater(t, byNode[f.Entity["node"]], 2*v, n)
		}
	}
}
