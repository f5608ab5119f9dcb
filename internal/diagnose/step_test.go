package diagnose_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestCoarseAggregates: data aggregated every 5 minutes (as public RCA
// data sets are) is diagnosed at a 5m step whose grid is 2 minutes off the
// samples': the lookback grows with the step (three steps), so every step
// still sees the sample before it, which a 90 s lookback would miss; the
// generic layer names the faulty service first.
func TestCoarseAggregates(t *testing.T) {
	spec, err := microsvc.ParseScenario("metric_anomaly/latency")
	require.NoError(t, err)
	g, err := microsvc.New(microsvc.Config{Seed: 2, Duration: 4 * time.Hour, Step: 5 * time.Minute}, spec)
	require.NoError(t, err)
	c := g.Config()
	now := c.Start
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	require.NoError(t, g.Run(t.Context(), st, microsvc.RunOptions{}))
	end := c.Start.Add(c.Duration).Add(2 * time.Minute)
	eng, err := diagnose.New(diagnose.Options{EntityLabel: microsvc.EntityLabel, Step: 5 * time.Minute, Window: 4 * time.Hour})
	require.NoError(t, err)
	rep, err := eng.Diagnose(t.Context(), st, end)
	require.NoError(t, err)
	truth := g.Truth()
	require.Len(t, truth, 1)
	require.NotEmpty(t, rep.Causes, "no cause at a 5m step")
	require.Equal(t, truth[0].Entity[microsvc.EntityLabel], rep.Causes[0].Entity[microsvc.EntityLabel], "rank 1: %+v", rep.Causes[0])
}
