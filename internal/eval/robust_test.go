package eval

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/robust"
	"github.com/vigil-obs/vigil/internal/sim"
)

// TestRobustCases runs robust cases end to end through the real engine.
// It asserts that they run and are scored, not how well the engine does.
func TestRobustCases(t *testing.T) {
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	cfg := sim.Config{Duration: 30 * time.Minute, Nodes: 4}
	cases := []Case{
		{Suite: SuiteRobust, Scenario: robust.HealthyScenario, Seed: RobustSeed, Config: cfg},
		{Suite: SuiteRobust, Scenario: "robust/gpu_thermal_throttle/double", Seed: RobustSeed, Config: cfg},
		{Suite: SuiteRobust, Scenario: "robust/pod_crash_loop/half", Seed: RobustSeed + 1, Config: cfg},
	}
	res, err := Run(t.Context(), cases, Options{Diagnose: eng.Diagnose, TempDir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, res.Cases, 3)
	require.Len(t, res.Suites, 1)
	tab := res.Suites[0]
	require.Equal(t, SuiteRobust, tab.Suite)
	require.Equal(t, 3, tab.Runs)
	require.Equal(t, 1, tab.Healthy.Runs)
	require.Equal(t, 2, tab.Overall.Faults)
	var kinds []string
	for _, k := range tab.Kinds {
		kinds = append(kinds, k.Kind)
	}
	require.Equal(t, []string{"gpu_thermal_throttle", "pod_crash_loop"}, kinds)
	for _, c := range res.Cases {
		require.Equal(t, Seconds(1800), c.Duration)
	}
	th := res.Cases[1]
	require.Equal(t, 2.0, th.FaultScale)
	require.Len(t, th.Faults, 1)
	f := th.Faults[0]
	require.Equal(t, robust.SizeDouble, f.Variant)
	require.NotEmpty(t, f.Entity["node"])
	require.NotEmpty(t, f.Entity["gpu"])
	cl := res.Cases[2].Faults[0]
	require.NotEmpty(t, cl.Entity["pod"])
	require.NotEmpty(t, cl.Entity["namespace"])

	var sb strings.Builder
	require.NoError(t, res.WriteText(&sb))
	require.Contains(t, sb.String(), "suite robust: 3 runs, 2 faults, 1 healthy")
	require.NotContains(t, DefaultBars().Exempt, SuiteRobust)
	require.True(t, slices.Contains(Suites(), SuiteRobust))
}

func TestRobustBars(t *testing.T) {
	tab := Table{Suite: SuiteRobust, Overall: KindScore{Kind: "overall", Faults: 10, AC1: 0.93, AC3: 1},
		Healthy: HealthyScore{Runs: 5, FalseAlarms: 1}}
	require.Equal(t, []string{
		"suite robust: AC@1 0.930 is below 0.95",
		"suite robust: 1 false alarms on 5 healthy runs (at most 0 allowed)",
	}, (&Result{Suites: []Table{tab}}).Check(DefaultBars()))
	tab.Overall.AC1, tab.Healthy.FalseAlarms = 0.95, 0
	tab.Kinds = []KindScore{{Kind: "gpu_lost", Faults: 2, AC1: 1, AC3: 1}}
	require.Empty(t, (&Result{Suites: []Table{tab}}).Check(DefaultBars()), "no time-to-detect bar on the robust suite")
	tab.Suite = SuiteMain
	require.Len(t, (&Result{Suites: []Table{tab}}).Check(DefaultBars()), 2, "main's: gpu_lost never ranked first")
}
