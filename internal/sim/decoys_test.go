package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHealthyHoldsDecoys: a healthy run holds every decoy, benign as it
// should be, and nothing else goes wrong.
func TestHealthyHoldsDecoys(t *testing.T) {
	r := simulateRun(t, Healthy, 21, 30*time.Minute)
	require.Empty(t, r.sim.Truth())
	c, end := r.sim.Config(), r.end()
	ds := map[string]Decoy{}
	for _, d := range r.sim.Decoys() {
		ds[d.Kind] = d
	}
	require.Len(t, ds, 6)
	spec := r.sim.c().spec

	t.Run(DecoyWarmGPU, func(t *testing.T) {
		e := ds[DecoyWarmGPU].Entity
		temp := r.value(t, `max_over_time(`+onGPU("DCGM_FI_DEV_GPU_TEMP", e)+`[5m])`, end)
		others := r.value(t, fmt.Sprintf(`max(max_over_time(DCGM_FI_DEV_GPU_TEMP{namespace="ml-train",UUID!=%q}[5m]))`, r.uuid(t, e)), end)
		require.Greater(t, temp, others+2, "warmer than every peer")
		require.Less(t, temp, spec.SlowdownTemp, "inside its limits")
		require.Equal(t, 0.0, r.value(t, `max_over_time(`+onGPU("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", e)+`[30m])`, end), "never throttled")
	})
	t.Run(DecoyRowRemap, func(t *testing.T) {
		d := ds[DecoyRowRemap]
		rows := onGPU("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", d.Entity)
		require.Equal(t, 0.0, r.value(t, rows, d.At.Add(-30*time.Second)))
		require.Equal(t, 1.0, r.value(t, rows, end))
		require.Equal(t, 63.0, xidOf(t, r, d.Entity, end))
	})
	t.Run(DecoyPCIeBlip, func(t *testing.T) {
		d := ds[DecoyPCIeBlip]
		replays := onGPU("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", d.Entity)
		require.Equal(t, decoyReplays, r.value(t, replays, end)-r.value(t, replays, d.At.Add(-30*time.Second)))
		require.Equal(t, r.value(t, replays, end), r.value(t, replays, d.At.Add(30*time.Second)), "once")
	})
	t.Run(DecoySpike, func(t *testing.T) {
		d := ds[DecoySpike]
		served := `sum(increase(vllm:request_success_total[75s]))`
		require.Greater(t, r.value(t, served, d.At.Add(decoySpikeFor)), 1.4*r.value(t, served, d.At))
		require.Less(t, r.value(t, `sum(vllm:num_requests_waiting)`, d.At.Add(decoySpikeFor)), 5.0, "absorbed")
	})
	t.Run(DecoyOldXID, func(t *testing.T) {
		e := ds[DecoyOldXID].Entity
		require.Equal(t, decoyOldXID, xidOf(t, r, e, c.Start))
		require.Equal(t, 0.0, r.value(t, `changes(`+onGPU("DCGM_FI_DEV_XID_ERRORS", e)+`[30m])`, end), "it never changes")
	})
	t.Run(DecoyOldOOM, func(t *testing.T) {
		pod := ds[DecoyOldOOM].Entity["pod"]
		require.Equal(t, 1.0, r.value(t, fmt.Sprintf(`kube_pod_container_status_last_terminated_reason{pod=%q,reason="OOMKilled"}`, pod), end))
		require.Equal(t, float64(c.Start.Add(-decoyOOMAge).Unix()), r.value(t, fmt.Sprintf(`kube_pod_container_status_last_terminated_timestamp{pod=%q}`, pod), end))
		require.Equal(t, 0.0, r.value(t, fmt.Sprintf(`changes(kube_pod_container_status_restarts_total{pod=%q}[30m])`, pod), end))
	})
	t.Run("nothing else", func(t *testing.T) {
		require.Equal(t, 0.0, r.value(t, `count(max_over_time(up[30m]) == 0 or min_over_time(up[30m]) == 0) or vector(0)`, end))
		require.Equal(t, 0.0, r.value(t, `count(DCGM_FI_DEV_XID_ERRORS != 0 and DCGM_FI_DEV_XID_ERRORS != 13 and DCGM_FI_DEV_XID_ERRORS != 63) or vector(0)`, end))
		require.Equal(t, 0.0, r.value(t, `sum(increase(kube_pod_container_status_restarts_total[30m]))`, end))
		requireRuns(t, r, "", end)
	})
	t.Run("checkpoints", func(t *testing.T) {
		// Every rank dips at once: whenever the job's mean GPU_UTIL dips,
		// every rank's does.
		avg := r.series(t, `avg(DCGM_FI_DEV_GPU_UTIL{namespace="ml-train"})`, c.DCGMInterval, "")[""]
		maxU := r.series(t, `max(DCGM_FI_DEV_GPU_UTIL{namespace="ml-train"})`, c.DCGMInterval, "")[""]
		dips := 0
		for i, p := range avg {
			if p.F < 50 {
				dips++
				require.Less(t, maxU[i].F, 50.0, "every rank at %s", time.UnixMilli(p.T).UTC())
			}
		}
		require.GreaterOrEqual(t, dips, 1, "a checkpoint every %s", c.CheckpointEvery)
	})
}

// TestDecoysInEveryRun: a faulty run holds its seed's healthy decoys.
func TestDecoysInEveryRun(t *testing.T) {
	healthy, err := New(Config{Seed: 3}, Scenario{Name: Healthy})
	require.NoError(t, err)
	for _, name := range []string{"nvlink_degraded", "inference_capacity_saturated+gpu_idle"} {
		sc, err := ParseScenario(name)
		require.NoError(t, err)
		faulty, err := New(Config{Seed: 3}, sc)
		require.NoError(t, err)
		require.Equal(t, healthy.Decoys(), faulty.Decoys(), name)
	}
}

// uuid is a GPU's UUID label.
func (r *run) uuid(t testing.TB, e map[string]string) string {
	t.Helper()
	m := r.instant(t, onGPU("DCGM_FI_DEV_GPU_TEMP", e), r.end(), "UUID")
	require.Len(t, m, 1)
	return keys(m)[0]
}
