package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestSLOCheckWaitsForData: the SLO file's metrics are checked against the
// store once it holds ten minutes of data — at once after a restart, at
// the first evaluation ten minutes in on a fresh install (not before, when
// every SLO would look absent) — and once only.
func TestSLOCheckWaitsForData(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ec := config.EvaluationConfig{SLOFile: "../../examples/slo.yaml"}
	open := func(t *testing.T, dataSince time.Duration) *store.Embedded {
		st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		if dataSince > 0 {
			app := st.AppenderV2(t.Context())
			_, err := app.Append(0, labels.FromStrings("__name__", "up", "job", "vigil"), 0, now.Add(-dataSince).UnixMilli(), 1, nil, nil, storage.AOptions{})
			require.NoError(t, err)
			require.NoError(t, app.Commit())
		}
		return st
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	warnings := func() int { return strings.Count(logs.String(), "SLO check: ") }

	st0 := open(t, 0)
	groups, task, err := sloGroups(t.Context(), ec, st0, st0, now, logger)
	require.NoError(t, err)
	require.NotEmpty(t, groups)
	require.NotNil(t, task, "a fresh install checks later")
	require.Zero(t, warnings(), logs.String())
	require.Contains(t, logs.String(), "checked against the store once it holds data")
	require.NoError(t, task(t.Context(), now.Add(5*time.Minute)))
	require.Zero(t, warnings(), "not before ten minutes")
	require.NoError(t, task(t.Context(), now.Add(10*time.Minute)))
	n := warnings()
	require.Positive(t, n, "the example's metrics are not in the store: %s", logs.String())
	require.NoError(t, task(t.Context(), now.Add(11*time.Minute)))
	require.Equal(t, n, warnings(), "once only")

	logs.Reset()
	st1 := open(t, time.Hour)
	_, task, err = sloGroups(t.Context(), ec, st1, st1, now, logger)
	require.NoError(t, err)
	require.Nil(t, task, "a restart checks at once")
	require.Positive(t, warnings(), logs.String())
}

// TestShardLabels: an attached serve's alerts carry the equality matchers
// of its selector as external labels, unless alerting.external_labels
// names them; regular expressions and the metric name say nothing about
// every series, and an embedded serve adds only the section's own.
func TestShardLabels(t *testing.T) {
	cfg := config.Default()
	cfg.Alerting.ExternalLabels = map[string]string{"region": "eu", "cluster": "set-by-hand"}
	require.Equal(t, map[string]string{"region": "eu", "cluster": "set-by-hand"}, shardLabels(cfg))
	cfg.Source.URL = "http://mimir:8080/prometheus"
	cfg.Source.Selector = `{cluster="a", namespace=~"ml-.*", team="ml", __name__="x", zone=""}`
	require.Equal(t, map[string]string{"region": "eu", "cluster": "set-by-hand", "team": "ml"}, shardLabels(cfg))
	cfg.Alerting.ExternalLabels = nil
	require.Equal(t, map[string]string{"cluster": "a", "team": "ml"}, shardLabels(cfg))
	cfg.Source.Selector = ""
	require.Nil(t, shardLabels(cfg))
}
