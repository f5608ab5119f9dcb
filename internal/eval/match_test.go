package eval

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
)

func TestEntityMatch(t *testing.T) {
	f := func(truth, call map[string]string, want bool) {
		t.Helper()
		require.Equal(t, want, EntityMatch(truth, call), "truth %v, call %v", truth, call)
	}
	gpu := map[string]string{"node": "gpu-node-06", "gpu": "3"}
	f(gpu, map[string]string{"node": "gpu-node-06", "gpu": "3"}, true)
	f(gpu, map[string]string{"node": "gpu-node-06"}, true) // a node-level call of a GPU fault
	f(gpu, map[string]string{"node": "gpu-node-06", "gpu": "2"}, false)
	f(gpu, map[string]string{"node": "gpu-node-05", "gpu": "3"}, false)
	f(gpu, map[string]string{"gpu": "3"}, false) // no identifying key in common
	f(gpu, map[string]string{}, false)
	f(map[string]string{"node": "gpu-node-06"}, gpu, true) // a GPU call of a node fault

	pod := map[string]string{"namespace": "inference", "pod": "vllm-0"}
	f(pod, map[string]string{"namespace": "inference", "pod": "vllm-0", "node": "gpu-node-09"}, true)
	f(pod, map[string]string{"namespace": "ml-train", "pod": "vllm-0"}, false)
	f(pod, map[string]string{"node": "gpu-node-09"}, false)
	f(pod, map[string]string{"namespace": "inference"}, false) // namespace alone identifies nothing

	wl := map[string]string{"namespace": "ml-train", "workload": "llm-pretrain-worker"}
	f(wl, map[string]string{"namespace": "ml-train", "workload": "llm-pretrain-worker"}, true)
	f(wl, map[string]string{"namespace": "ml-train", "workload": "other"}, false)
	f(map[string]string{"namespace": "inference", "model": "m"}, map[string]string{"namespace": "inference", "model": "m"}, true)
	f(map[string]string{"service": "cart"}, map[string]string{"service": "cart"}, true)
	// Keys that are not canonical are not compared.
	f(map[string]string{"node": "n", "rack": "a"}, map[string]string{"node": "n", "rack": "b"}, true)
}

func TestMatches(t *testing.T) {
	truth := sim.Fault{Kind: "nvlink_degraded", Entity: map[string]string{"node": "gpu-node-06", "gpu": "3"}}
	f := func(kind string, entity diagnose.Entity, want bool) {
		t.Helper()
		require.Equal(t, want, matches(truth, diagnose.Cause{Kind: kind, Entity: entity}))
	}
	f("nvlink_degraded", diagnose.Entity{"node": "gpu-node-06", "gpu": "3"}, true)
	f("nvlink_degraded", diagnose.Entity{"node": "gpu-node-06"}, true)
	f("gpu_xid_error", diagnose.Entity{"node": "gpu-node-06", "gpu": "3"}, false)
	f("nvlink_degraded", diagnose.Entity{"node": "gpu-node-06", "gpu": "2"}, false)
}

// TestEffectiveRank: a run's other faults ranked before a fault do not
// push it down.
func TestEffectiveRank(t *testing.T) {
	a := sim.Fault{Kind: "gpu_thermal_throttle", Entity: map[string]string{"node": "gpu-node-02", "gpu": "1"}}
	b := sim.Fault{Kind: "inference_capacity_saturated", Entity: map[string]string{"namespace": "inference", "workload": "vllm"}}
	truth := []sim.Fault{a, b}
	ca := diagnose.Cause{Kind: a.Kind, Entity: a.Entity}
	cb := diagnose.Cause{Kind: b.Kind, Entity: b.Entity}
	other := diagnose.Cause{Kind: "straggler", Entity: diagnose.Entity{"node": "gpu-node-03"}}
	f := func(list []diagnose.Cause, wantA, wantB int) {
		t.Helper()
		require.Equal(t, wantA, effectiveRank(truth, 0, list), "a")
		require.Equal(t, wantB, effectiveRank(truth, 1, list), "b")
	}
	f([]diagnose.Cause{ca, cb}, 1, 1)
	f([]diagnose.Cause{cb, ca}, 1, 1)
	f([]diagnose.Cause{other, ca, cb}, 2, 2)
	f([]diagnose.Cause{ca, other, cb}, 1, 2)
	f([]diagnose.Cause{other}, 0, 0)
	f(nil, 0, 0)

	// Causes and findings are ranked apart; the better rank counts.
	rep := &diagnose.Report{Causes: []diagnose.Cause{other, ca}, Findings: []diagnose.Cause{ca}}
	require.Equal(t, 1, bestRank([]sim.Fault{a}, 0, rep))
	rep = &diagnose.Report{Causes: []diagnose.Cause{other, other, ca}}
	require.Equal(t, 3, bestRank([]sim.Fault{a}, 0, rep))
}

// TestTimeToDetect counts from the onset to the first report that ranks
// the fault first.
func TestTimeToDetect(t *testing.T) {
	onset := time.Date(2026, 11, 12, 2, 30, 10, 0, time.UTC)
	truth := []sim.Fault{{Kind: "gpu_lost", Entity: map[string]string{"node": "gpu-node-02", "gpu": "5"}, Onset: onset}}
	var asked []time.Duration
	fake := func(after time.Duration) DiagnoseFunc {
		asked = nil
		return func(_ context.Context, _ diagnose.Source, at time.Time) (*diagnose.Report, error) {
			asked = append(asked, at.Sub(onset))
			rep := &diagnose.Report{At: at, Healthy: true}
			if at.Sub(onset) >= after {
				rep.Healthy = false
				rep.Causes = []diagnose.Cause{{Rank: 1, Kind: "gpu_lost", Entity: diagnose.Entity{"node": "gpu-node-02"}, Confidence: 0.9}}
			}
			return rep, nil
		}
	}
	end := onset.Add(time.Hour)
	ttd, err := timeToDetect(t.Context(), nil, truth, 0, end, Options{Diagnose: fake(60 * time.Second)}.withDefaults())
	require.NoError(t, err)
	require.NotNil(t, ttd)
	require.Equal(t, 60*time.Second, ttd.Duration())
	require.Equal(t, []time.Duration{0, 30 * time.Second, 60 * time.Second}, asked, "every 30 s from the onset, stopping at the first match")

	ttd, err = timeToDetect(t.Context(), nil, truth, 0, end, Options{Diagnose: fake(11 * time.Minute)}.withDefaults())
	require.NoError(t, err)
	require.Nil(t, ttd, "not within 10m")
	require.Len(t, asked, 21, "onset to onset+10m inclusive")
	require.Equal(t, 10*time.Minute, asked[20])

	// Never past the end of the data.
	_, err = timeToDetect(t.Context(), nil, truth, 0, onset.Add(95*time.Second), Options{Diagnose: fake(time.Hour)}.withDefaults())
	require.NoError(t, err)
	require.Len(t, asked, 4)
}
