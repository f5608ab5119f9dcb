package eval

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/robust"
	"github.com/vigil-obs/vigil/internal/sim"
)

func TestSuites(t *testing.T) {
	count := func(cs []Case, scenario string) int {
		n := 0
		for _, c := range cs {
			if c.Scenario == scenario {
				n++
			}
		}
		return n
	}
	small, err := Suite(SuiteSmall, 5)
	require.NoError(t, err)
	require.Equal(t, 3, count(small, sim.Healthy))
	require.Equal(t, 1, count(small, "nvlink_degraded"))
	require.Equal(t, 1, count(small, "nvlink_degraded/node"), "named variants that are not subtle")
	require.Equal(t, 1, count(small, "nvlink_degraded+exporter_down"), "pairs")
	var smallRobust []Case
	small = slices.DeleteFunc(small, func(c Case) bool {
		if c.Suite == SuiteRobust {
			smallRobust = append(smallRobust, c)
			return true
		}
		return false
	})
	require.Equal(t, robustSmallHealthy, count(smallRobust, robust.HealthyScenario))
	require.Equal(t, robustSmallHealthy+2*len(robust.Kinds()), len(smallRobust), "every robust fault once")
	for _, c := range smallRobust {
		require.GreaterOrEqual(t, c.Seed, uint64(RobustSeed))
	}
	for _, c := range small {
		require.Equal(t, SuiteSmall, c.Suite)
		require.Equal(t, 30*time.Minute, c.Config.Duration)
		require.NotContains(t, c.Scenario, "subtle")
		for _, k := range laterKinds {
			require.NotContains(t, c.Scenario, k)
		}
		_, err := sim.ParseScenario(c.Scenario)
		require.NoError(t, err)
	}

	main, err := Suite(SuiteMain, 0)
	require.NoError(t, err)
	require.Equal(t, 9, count(main, sim.Healthy))
	require.Equal(t, 3, count(main, "gpu_lost"))
	require.Equal(t, time.Hour, main[0].Config.Duration)
	require.Equal(t, 3*len(small)-3*3+9, len(main))

	subtle, err := Suite(SuiteSubtle, 2)
	require.NoError(t, err)
	require.Equal(t, 2, count(subtle, "gpu_lost/subtle"))
	require.Equal(t, 2, count(subtle, "model_drift/subtle"))
	require.Zero(t, count(subtle, "tenant_failure/subtle"))
	for _, c := range subtle {
		require.True(t, strings.HasSuffix(c.Scenario, "/subtle"), c.Scenario)
	}

	unseen, err := Suite(SuiteUnseen, 1)
	require.NoError(t, err)
	scales := map[float64]bool{}
	for _, c := range unseen {
		require.GreaterOrEqual(t, c.Seed, uint64(UnseenSeed))
		for _, v := range []float64{c.Config.FaultScale, c.Config.NoiseScale} {
			require.GreaterOrEqual(t, v, 0.5)
			require.Less(t, v, 1.5)
			scales[v] = true
		}
	}
	require.Len(t, scales, 2*len(unseen), "drawn per case and per scale")
	again, err := Suite(SuiteUnseen, 1)
	require.NoError(t, err)
	require.Equal(t, unseen, again, "deterministic")

	later, err := Suite(SuiteLater, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"dependency_slow", "tenant_failure"}, []string{later[0].Scenario, later[1].Scenario})

	require.Equal(t, 3, count(later, sim.Healthy))
	for _, c := range later {
		require.Equal(t, c.Scenario != "dependency_slow" && c.Scenario != "tenant_failure", c.RequestPath, "%s: the others ask for their request path", c.Scenario)
	}

	generic, err := Suite(SuiteGeneric, 1)
	require.NoError(t, err)
	require.Equal(t, 4, count(generic, "metric_anomaly/memory"))
	require.Zero(t, count(generic, "metric_anomaly/subtle"))
	require.Zero(t, count(generic, "metric_anomaly/availability"), "the graph suite's")

	graph, err := Suite(SuiteGraph, 1)
	require.NoError(t, err)
	require.Equal(t, 8, count(graph, "metric_anomaly/availability"), "with the graph and without")
	walk := 0
	for _, c := range graph {
		require.True(t, c.Uninstrumented)
		require.Equal(t, c.Suite == SuiteGraph, c.RequestPath)
		if c.RequestPath {
			walk++
		}
	}
	require.Equal(t, len(graph)/2, walk)

	rob, err := Suite(SuiteRobust, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, count(rob, robust.HealthyScenario), 200, "at the default seeds")
	require.Equal(t, DefaultSeeds, count(rob, "robust/gpu_thermal_throttle/half"))
	require.Equal(t, DefaultSeeds, count(rob, "robust/inference_capacity_saturated/double"))
	require.Equal(t, 70*DefaultSeeds+2*len(robust.Kinds())*DefaultSeeds, len(rob))
	for _, c := range rob {
		require.Equal(t, SuiteRobust, c.Suite)
		require.GreaterOrEqual(t, c.Seed, uint64(RobustSeed))
		_, err := robust.ParseScenario(c.Scenario)
		require.NoError(t, err)
	}
	for _, c := range append(append(append(main, unseen...), later...), small...) {
		require.Less(t, c.Seed, uint64(RobustSeed), "the robust suite's seeds are its own")
		require.False(t, robust.IsScenario(c.Scenario), "no robust case in %s", c.Suite)
	}
	rob1, err := Suite(SuiteRobust, 1)
	require.NoError(t, err)

	all, err := Suite(SuiteAll, 1)
	require.NoError(t, err)
	m1, _ := Suite(SuiteMain, 1)
	require.Equal(t, len(m1)+len(subtle)/2+len(unseen)+len(later)+len(generic)+len(graph)+len(rob1), len(all))

	_, err = Suite("nope", 1)
	require.ErrorIs(t, err, ErrUnknownSuite)
	require.ErrorContains(t, err, `unknown suite "nope" (the suites are small, main, subtle, unseen, later, generic, graph, robust, all)`)
	_, err = Suite(SuiteMain, -1)
	require.Error(t, err)
}
