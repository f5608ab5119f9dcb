package eval

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestRunLogsXIDWithoutField: with a dcgm-exporter that exports no XID
// field, an XID fault is still diagnosed first as its kind on its GPU,
// with the kernel log's vigil_log_xid_total as evidence: every run feeds
// its logs through log-derived signals. Without its logs, a GPU that
// raised XID 119 and stopped (nothing but the XID says why) is not
// named at all.
func TestRunLogsXIDWithoutField(t *testing.T) {
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	for _, scenario := range []string{"gpu_xid_error", "gpu_xid_error/109", "gpu_memory_errors", "gpu_lost"} {
		t.Run(scenario, func(t *testing.T) {
			cfg := sim.Config{Duration: 30 * time.Minute, Labels: sim.Labels{XIDField: sim.Off}}
			c := Case{Suite: "test", Scenario: scenario, Seed: 11, Config: cfg}
			var end *diagnose.Report
			d := func(ctx context.Context, src diagnose.Source, at time.Time) (*diagnose.Report, error) {
				rep, err := eng.Diagnose(ctx, src, at)
				if end == nil {
					end = rep // the first call is at the run's end
				}
				return rep, err
			}
			res, err := Run(t.Context(), []Case{c}, Options{Diagnose: d, TempDir: t.TempDir()})
			require.NoError(t, err)
			require.Len(t, res.Cases, 1)
			f := res.Cases[0].Faults[0]
			require.Equal(t, 1, f.Rank, "%s ranked first", scenario)
			require.NotNil(t, f.TTD)
			require.NotEmpty(t, end.Causes)
			top := end.Causes[0]
			truth := truthOf(t, c)
			require.Equal(t, truth.Kind, top.Kind)
			require.Equal(t, truth.Entity["node"], top.Entity["node"])
			require.Equal(t, truth.Entity["gpu"], top.Entity["gpu"])
			require.True(t, slices.ContainsFunc(top.Evidence, func(e diagnose.Evidence) bool { return e.Signal == "vigil_log_xid_total" }),
				"evidence: %+v", top.Evidence)

			if truth.Kind != "gpu_xid_error" {
				return // ECC counters or the GPU's vanishing series name the others too
			}
			rep := diagnoseWithoutLogs(t, eng, c)
			require.False(t, slices.ContainsFunc(rep.Causes, func(cs diagnose.Cause) bool {
				return cs.Kind == truth.Kind && cs.Entity["gpu"] == truth.Entity["gpu"] && cs.Entity["node"] == truth.Entity["node"]
			}), "without logs: %+v", rep.Causes)
		})
	}
}

func truthOf(t *testing.T, c Case) sim.Fault {
	t.Helper()
	sc, err := sim.ParseScenario(c.Scenario)
	require.NoError(t, err)
	cfg := c.Config
	cfg.Seed = c.Seed
	s, err := sim.New(cfg, sc)
	require.NoError(t, err)
	return s.Truth()[0]
}

// diagnoseWithoutLogs runs a case's metrics alone into a store and
// diagnoses its end.
func diagnoseWithoutLogs(t *testing.T, eng *diagnose.Engine, c Case) *diagnose.Report {
	t.Helper()
	sc, err := sim.ParseScenario(c.Scenario)
	require.NoError(t, err)
	cfg := c.Config
	cfg.Seed = c.Seed
	s, err := sim.New(cfg, sc)
	require.NoError(t, err)
	clock := sim.NewClock(s.Config().Start)
	scfg := store.DefaultEmbeddedConfig(t.TempDir())
	st, err := store.OpenEmbedded(scfg, clock.Now, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	require.NoError(t, s.Run(t.Context(), st, sim.RunOptions{Clock: clock}))
	rep, err := eng.Diagnose(t.Context(), st, clock.Now())
	require.NoError(t, err)
	return rep
}
