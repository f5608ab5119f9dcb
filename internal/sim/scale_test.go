package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

// simulateScaled runs a scenario like simulateRun at the given fault and
// noise scales.
func simulateScaled(t testing.TB, name string, seed uint64, faultScale, noiseScale float64) *run {
	t.Helper()
	sc, err := ParseScenario(name)
	require.NoError(t, err)
	for i := range sc.Faults {
		sc.Faults[i].After = faultAfter
	}
	s, err := New(Config{Seed: seed, Duration: faultRun, Labels: testLabels, FaultScale: faultScale, NoiseScale: noiseScale}, sc)
	require.NoError(t, err)
	clock := NewClock(s.Config().Start)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clock.Now, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, s.Run(context.Background(), st, RunOptions{Clock: clock}))
	return &run{sim: s, store: st}
}

// TestFaultScale: a fault at scale 0.5 moves its signal less than at 1.5,
// and its truth's severity says so.
func TestFaultScale(t *testing.T) {
	// effect measures the fault's effect in a run: larger is a bigger
	// effect.
	effect := map[string]func(t *testing.T, r *run, f Fault) float64{
		"nvlink_degraded/subtle": func(t *testing.T, r *run, f Fault) float64 {
			at := r.end()
			peer := r.value(t, `quantile(0.5, avg_over_time(`+peers("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", f.Entity["node"])+`[3m]))`, at)
			return 1 - r.value(t, `avg_over_time(`+onGPU("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", f.Entity)+`[3m])`, at)/peer
		},
		"gpu_power_throttle": func(t *testing.T, r *run, f Fault) float64 {
			return -r.value(t, `avg_over_time(`+onGPU("DCGM_FI_DEV_POWER_USAGE", f.Entity)+`[3m])`, r.end())
		},
		"node_cpu_saturated/subtle": func(t *testing.T, r *run, f Fault) float64 {
			return r.value(t, fmt.Sprintf(`1 - avg(rate(node_cpu_seconds_total{mode="idle",instance=%q}[3m]))`, f.Entity["node"]+":9100"), r.end())
		},
		"straggler": func(t *testing.T, r *run, f Fault) float64 {
			return -peersTensor(t, r, f.Entity["node"], r.end())
		},
		"kv_cache_exhausted/subtle": func(t *testing.T, r *run, f Fault) float64 {
			return r.value(t, fmt.Sprintf(`avg_over_time(vllm:kv_cache_usage_perc{pod=%q}[3m])`, f.Entity["pod"]), r.end())
		},
	}
	for _, name := range keys(effect) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seed := quietSeed(t, name)
			lo, hi := simulateScaled(t, name, seed, 0.5, 1), simulateScaled(t, name, seed, 1.5, 1)
			flo, fhi := lo.truth(t), hi.truth(t)
			require.Equal(t, flo.Entity, fhi.Entity)
			require.Less(t, flo.Severity, fhi.Severity, "severity follows the scale")
			elo, ehi := effect[name](t, lo, flo), effect[name](t, hi, fhi)
			t.Logf("effect at 0.5: %.4g, at 1.5: %.4g", elo, ehi)
			require.Less(t, elo, ehi)
		})
	}
	t.Run("request path", func(t *testing.T) {
		for _, kind := range []string{"dependency_slow", "tenant_failure", "bad_rollout"} {
			sc, err := ParseScenario(kind)
			require.NoError(t, err)
			sev := func(scale float64) float64 {
				s, err := New(Config{Seed: 1, Duration: faultRun, FaultScale: scale}, sc)
				require.NoError(t, err)
				return s.RequestPath().Faults[0].Severity
			}
			require.Less(t, sev(0.5), sev(1), kind)
			require.Less(t, sev(1), sev(1.5), kind)
		}
	})
}

// TestNoiseScale: the healthy peers' spread grows with the noise scale,
// and the run is otherwise the same cluster.
func TestNoiseScale(t *testing.T) {
	spread := func(r *run) float64 {
		return r.value(t, `avg_over_time(stddev(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{namespace="ml-train"})[5m:30s])`, r.end())
	}
	lo, hi := simulateScaled(t, Healthy, 11, 1, 0.5), simulateScaled(t, Healthy, 11, 1, 1.5)
	slo, shi := spread(lo), spread(hi)
	t.Logf("tensor activity spread at noise 0.5: %.4g, at 1.5: %.4g", slo, shi)
	require.Greater(t, shi, 2*slo)
	mean := `avg(avg_over_time(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{namespace="ml-train"}[5m]))`
	require.InDelta(t, lo.value(t, mean, lo.end()), hi.value(t, mean, hi.end()), 0.02, "the same work")
	cpu := `avg(stddev by (instance) (rate(node_cpu_seconds_total{mode="user"}[1m])))`
	require.Greater(t, hi.value(t, cpu, hi.end()), 1.5*lo.value(t, cpu, lo.end()))
}

// TestScaleValidate: scales outside (0, 4] are refused; 0 is 1.
func TestScaleValidate(t *testing.T) {
	c := Config{Seed: 1}.Resolve()
	require.Equal(t, 1.0, c.FaultScale)
	require.Equal(t, 1.0, c.NoiseScale)
	for _, bad := range []Config{{FaultScale: -1}, {NoiseScale: 5}, {FaultScale: 1e9}} {
		_, err := New(bad, Scenario{Name: Healthy})
		require.ErrorIs(t, err, ErrInvalidConfig)
	}
}
