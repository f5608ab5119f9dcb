package diagnose_test

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestDiagnosePushedDrift: vigil_feature_drift gauges as `vigil drift
// --push` leaves them (job and model from the push group) crossing their
// method's threshold are a model_drift finding; scores under it are not.
func TestDiagnosePushedDrift(t *testing.T) {
	start := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	end := start.Add(30 * time.Minute)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, nil, nil)
	require.NoError(t, err)
	defer st.Close()
	app := st.AppenderV2(t.Context())
	series := func(feature string) labels.Labels {
		return labels.FromStrings("__name__", "vigil_feature_drift", "job", "vigil-drift", "model", "fraud-v2",
			"feature", feature, "method", "psi")
	}
	for ts := start; !ts.After(end); ts = ts.Add(15 * time.Second) {
		shifted := 0.05
		if ts.Sub(start) >= 20*time.Minute {
			shifted = 0.41
		}
		for feature, v := range map[string]float64{"amount": shifted, "country": 0.02} {
			_, err := app.Append(0, series(feature), 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())

	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	rep, err := eng.Diagnose(t.Context(), st, end)
	require.NoError(t, err)
	require.False(t, rep.Healthy)
	require.Len(t, rep.Findings, 1)
	f := rep.Findings[0]
	require.Equal(t, diagnose.KindModelDrift, f.Kind)
	require.Equal(t, "fraud-v2", f.Entity["model"])
	require.GreaterOrEqual(t, f.Confidence, 0.5)
	require.Equal(t, start.Add(20*time.Minute), f.Since.UTC())
	require.Contains(t, f.Evidence[0].Summary, "feature amount: psi 0.410")

	rep, err = eng.Diagnose(t.Context(), st, start.Add(19*time.Minute))
	require.NoError(t, err)
	require.True(t, rep.Healthy, "no score over its threshold yet")
}
