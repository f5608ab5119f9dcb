package drift_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/drift"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestMonitor stores a feature histogram of two models whose current hour
// shifts for one of them, runs the monitor, and reads back
// vigil_feature_drift for each model.
func TestMonitor(t *testing.T) {
	t0 := time.Date(2026, 11, 12, 0, 0, 0, 0, time.UTC)
	now := t0.Add(3 * time.Hour)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()

	bounds := []string{"10", "100", "1000", "+Inf"}
	// Per scrape, observations per bucket (not cumulative): the healthy
	// shape, and the shifted one (long prompts) in the last hour.
	healthy := []float64{5, 3, 1, 1}
	shifted := []float64{1, 2, 3, 4}
	cum := map[string][]float64{"a": make([]float64, 4), "b": make([]float64, 4)}
	app := st.AppenderV2(t.Context())
	for ts := t0; !ts.After(now); ts = ts.Add(time.Minute) {
		for _, m := range []string{"a", "b"} {
			inc := healthy
			if m == "b" && ts.After(now.Add(-time.Hour)) {
				inc = shifted
			}
			run := 0.0
			for i, le := range bounds {
				run += inc[i]
				cum[m][i] += run
				ls := labels.FromStrings("__name__", "prompt_tokens_bucket", "model_name", m, "le", le)
				_, err := app.Append(0, ls, 0, ts.UnixMilli(), cum[m][i], nil, nil, storage.AppendV2Options{})
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, app.Commit())

	var j drift.Job
	j.SetDefaults()
	j.Metric, j.ModelLabel, j.BaselineWindow = "prompt_tokens", "model_name", j.CurrentWindow*2
	mon, err := drift.NewMonitor([]drift.Job{j}, st, st, nil)
	require.NoError(t, err)
	require.NoError(t, mon.Evaluate(t.Context(), now))

	got := map[string]float64{}
	q, err := st.Querier(now.UnixMilli(), now.UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", drift.MetricName))
	for ss.Next() {
		s := ss.At()
		require.Equal(t, "prompt_tokens", s.Labels().Get("feature"))
		require.Equal(t, "psi", s.Labels().Get("method"))
		it := s.Iterator(nil)
		require.NotEqual(t, 0, it.Next())
		_, v := it.At()
		got[s.Labels().Get("model")] = v
	}
	require.NoError(t, ss.Err())
	require.Len(t, got, 2)
	require.Less(t, got["a"], 0.01, "no shift, no drift")
	require.Greater(t, got["b"], 0.25, "the shifted model drifts significantly")

	// Not due again within its interval: nothing new appended.
	require.NoError(t, mon.Evaluate(t.Context(), now.Add(time.Minute)))
}

func TestJobValidate(t *testing.T) {
	f := func(edit func(*drift.Job), want string) {
		t.Helper()
		var j drift.Job
		j.SetDefaults()
		j.Metric, j.Model = "prompt_tokens", "m"
		edit(&j)
		err := j.Validate()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, want)
	}
	f(func(*drift.Job) {}, "")
	f(func(j *drift.Job) { j.Metric = "a-b" }, "metric:")
	f(func(j *drift.Job) { j.Model = "" }, "model:")
	f(func(j *drift.Job) { j.ModelLabel = "x" }, "not both")
	f(func(j *drift.Job) { j.Method = "wasserstein" }, "needs the values")
	f(func(j *drift.Job) { j.By = []string{"le"} }, "by:")
	f(func(j *drift.Job) { j.CurrentWindow = 0 }, "current_window:")
}
