package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// checkBadRollout: the Deployment's generation goes up by one at the
// onset, a new ReplicaSet owns every replica by the end, the new replicas
// answer slower than the old ones did (twice; subtle: 10–30%) and abort
// more requests only after the onset (subtle: no more); the request path
// rolls out the same pods at the same times.
func checkBadRollout(t *testing.T, r *run, f Fault) {
	c := r.sim.c()
	s := c.serve
	require.Equal(t, map[string]string{"namespace": InferenceNamespace, "workload": s.name}, f.Entity)
	before, at := f.Onset.Add(-r.sim.Config().ScrapeInterval), r.end()
	require.Less(t, at.Sub(f.Onset), 10*time.Minute+time.Second)

	gen := fmt.Sprintf(`kube_deployment_status_observed_generation{deployment=%q}`, s.name)
	require.Equal(t, r.value(t, gen, before)+1, r.value(t, gen, at))
	meta := fmt.Sprintf(`kube_deployment_metadata_generation{deployment=%q}`, s.name)
	require.Equal(t, r.value(t, meta, before)+1, r.value(t, meta, f.Onset))

	owners := fmt.Sprintf(`kube_replicaset_owner{owner_kind="Deployment",owner_name=%q}`, s.name)
	require.Equal(t, []string{s.rs}, keys(r.instant(t, owners, before, "replicaset")))
	rsets := keys(r.instant(t, owners, at, "replicaset"))
	require.Len(t, rsets, 2, "the old ReplicaSet stays")
	newRS := rsets[0]
	if newRS == s.rs {
		newRS = rsets[1]
	}

	// Vanished series stay for Prometheus's lookback: count what was
	// scraped last.
	fresh := func(sel string) string { return `(timestamp(` + sel + `) > time() - 60)` }
	podOwners := fresh(fmt.Sprintf(`kube_pod_owner{namespace=%q,owner_kind="ReplicaSet"}`, InferenceNamespace))
	require.Equal(t, map[string]float64{s.rs: float64(len(s.replicas))},
		r.instant(t, `count by (owner_name) (`+podOwners+`)`, before, "owner_name"))
	require.Equal(t, map[string]float64{newRS: float64(len(s.replicas))},
		r.instant(t, `count by (owner_name) (`+podOwners+`)`, at, "owner_name"), "every replica is the new ReplicaSet's")
	require.Equal(t, float64(len(s.replicas)), r.value(t, `count(`+fresh(`up{job="vllm"}`)+` and on (pod) (up == 1))`, at))
	require.Equal(t, float64(len(s.replicas)),
		r.value(t, fmt.Sprintf(`min_over_time(kube_deployment_status_replicas_available{deployment=%q}[10m])`, s.name), at), "maxUnavailable 0")
	gpuPods := r.instant(t, fmt.Sprintf(`count by (pod) `+fresh(`DCGM_FI_DEV_GPU_UTIL{namespace=%q}`), InferenceNamespace), at, "pod")
	require.Len(t, gpuPods, len(s.replicas))
	for p := range gpuPods {
		require.Contains(t, p, newRS+"-", "dcgm-exporter attributes the GPUs to the new pods")
	}
	images := r.instant(t, fmt.Sprintf(`count by (image) `+fresh(`container_cpu_usage_seconds_total{namespace=%q,container="vllm"}`), InferenceNamespace), at, "image")
	require.Equal(t, []string{"docker.io/vllm/vllm-openai:" + rolloutVersion(r.sim.Config().Labels)}, keys(images))

	// The new replicas at the end against the old ones before the onset.
	ttft := func(rs string) string {
		return fmt.Sprintf(`avg(histogram_quantile(0.95, sum by (pod, le) (rate(vllm:time_to_first_token_seconds_bucket{pod=~%q}[3m]))))`, rs+"-.*")
	}
	ratio := r.value(t, ttft(newRS), at) / r.value(t, ttft(s.rs), before)
	// vLLM's buckets (0.1, 0.25, 0.5) are too coarse for a p95 to move
	// 15%: the subtle variant shows in the mean.
	mean := func(rs string) string {
		sel := fmt.Sprintf(`{pod=~%q}`, rs+"-.*")
		return `sum(rate(vllm:time_to_first_token_seconds_sum` + sel + `[3m])) / sum(rate(vllm:time_to_first_token_seconds_count` + sel + `[3m]))`
	}
	// Against the same moment of the healthy run of the seed: the load,
	// and with it the old version's time to first token, drifts by ~10%
	// in a few minutes.
	healthy := simulateRun(t, Healthy, r.sim.Config().Seed, r.sim.Config().Duration)
	meanRatio := r.value(t, mean(newRS), at) / healthy.value(t, mean(s.rs), at)
	aborts := func(rs string) string {
		return fmt.Sprintf(`sum(rate(vllm:request_success_total{finished_reason="abort",pod=~%[1]q}[3m])) / sum(rate(vllm:request_success_total{pod=~%[1]q}[3m]))`, rs+"-.*")
	}
	abortBefore, abortAfter := r.value(t, aborts(s.rs), before), r.value(t, aborts(newRS), at)
	t.Logf("TTFT p95 new/old %.3f, mean %.3f; abort share %.3f before, %.3f after", ratio, meanRatio, abortBefore, abortAfter)
	require.Less(t, abortBefore, 0.04)
	if f.Subtle {
		require.Greater(t, meanRatio, 1.1)
		require.Less(t, meanRatio, 1.3)
		require.Less(t, ratio, 1.3, "p95 within its bucket")
		require.Less(t, abortAfter, abortBefore+0.015, "no more aborts")
	} else {
		require.GreaterOrEqual(t, ratio, 1.7)
		require.Greater(t, meanRatio, 1.8)
		require.Greater(t, abortAfter, abortBefore+0.05)
	}

	rc := r.sim.RequestPath()
	require.Len(t, rc.Faults, 1)
	rf := rc.WithDefaults().Faults[0]
	require.Equal(t, f.Onset, rf.Onset)
	require.Equal(t, s.name, rf.Entity["service"])
	require.Equal(t, rolloutVersion(r.sim.Config().Labels), rf.Entity["version"])
	require.Len(t, rf.Rollout, len(s.replicas))
	for _, p := range rf.Rollout {
		require.Contains(t, p.Name, newRS+"-")
		require.True(t, r.empty(t, fmt.Sprintf(`up{job="vllm",pod=%q}`, p.Name), p.At.Add(-time.Second)), "%s serves from %s", p.Name, p.At)
		require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`up{job="vllm",pod=%q}`, p.Name), p.At))
	}
}

// TestBadRolloutDeterministic: a bad rollout writes the same bytes every
// time.
func TestBadRolloutDeterministic(t *testing.T) {
	a, b := simulate(t, "bad_rollout", 5, 20*time.Minute), simulate(t, "bad_rollout", 5, 20*time.Minute)
	require.Equal(t, a.om, b.om)
}
