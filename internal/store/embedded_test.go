package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

// base is the time of the first sample in these tests.
var base = time.Date(2026, 11, 12, 1, 0, 0, 0, time.UTC)

func openEmbedded(t *testing.T, cfg store.EmbeddedConfig) *store.Embedded {
	t.Helper()
	s, err := store.OpenEmbedded(cfg, func() time.Time { return base }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// appendAll appends samples in one commit.
func appendAll(t *testing.T, s storage.AppendableV2, lset labels.Labels, ts []time.Time, vs []float64) {
	t.Helper()
	app := s.AppenderV2(t.Context())
	for i := range ts {
		_, err := app.Append(0, lset, 0, ts[i].UnixMilli(), vs[i], nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
}

// appendOne appends one sample in its own commit and returns the error.
func appendOne(t *testing.T, s storage.AppendableV2, lset labels.Labels, ts time.Time, v float64) error {
	t.Helper()
	app := s.AppenderV2(t.Context())
	if _, err := app.Append(0, lset, 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{}); err != nil {
		require.NoError(t, app.Rollback())
		return err
	}
	return app.Commit()
}

// byLabel evaluates q at ts and returns the values keyed by label key.
func byLabel(t *testing.T, s store.Store, q string, ts time.Time, key string) map[string]float64 {
	t.Helper()
	v, _, err := store.Query(t.Context(), s, q, ts)
	require.NoError(t, err)
	vec, ok := v.(promql.Vector)
	require.True(t, ok, "%s is not a vector: %v", q, v)
	out := make(map[string]float64, len(vec))
	for _, smp := range vec {
		out[smp.Metric.Get(key)] = smp.F
	}
	return out
}

func TestEmbeddedReopenReplaysWAL(t *testing.T) {
	dir := t.TempDir()
	cfg := store.DefaultEmbeddedConfig(dir)
	s, err := store.OpenEmbedded(cfg, nil, nil, nil)
	require.NoError(t, err)

	var ts []time.Time
	for i := range 300 {
		ts = append(ts, base.Add(time.Duration(i)*15*time.Second))
	}
	for g := range 3 {
		vs := make([]float64, len(ts))
		for i := range vs {
			vs[i] = float64(g*1000+i) + 0.125
		}
		appendAll(t, s, labels.FromStrings("__name__", "temp", "gpu", fmt.Sprint(g)), ts, vs)
	}
	special := labels.FromStrings("__name__", "special")
	appendAll(t, s, special, ts[:3], []float64{math.NaN(), math.Inf(1), math.Inf(-1)})
	// A rolled-back sample must not come back.
	app := s.AppenderV2(t.Context())
	_, err = app.Append(0, labels.FromStrings("__name__", "rolled_back"), 0, base.UnixMilli(), 1, nil, nil, storage.AOptions{})
	require.NoError(t, err)
	require.NoError(t, app.Rollback())
	require.NoError(t, s.Close())

	s = openEmbedded(t, cfg)
	st, err := s.WALReplayStatus()
	require.NoError(t, err)
	require.Equal(t, st.Current, st.Max, "replay finished")
	last := ts[len(ts)-1]
	require.Equal(t, map[string]float64{"0": 299.125, "1": 1299.125, "2": 2299.125}, byLabel(t, s, "temp", last, "gpu"))
	require.Equal(t, map[string]float64{"0": 300, "1": 300, "2": 300}, byLabel(t, s, "count_over_time(temp[2h])", last, "gpu"))
	require.Equal(t, map[string]float64{"0": 150.125}, byLabel(t, s, `temp{gpu="0"}`, base.Add(150*15*time.Second+7*time.Second), "gpu"))
	require.Empty(t, byLabel(t, s, "rolled_back", base, "gpu"))

	v, _, err := store.QueryRange(t.Context(), s, "special", ts[0], ts[2], 15*time.Second)
	require.NoError(t, err)
	m := v.(promql.Matrix)
	require.Len(t, m, 1)
	require.Len(t, m[0].Floats, 3)
	require.True(t, math.IsNaN(m[0].Floats[0].F))
	require.True(t, math.IsInf(m[0].Floats[1].F, 1))
	require.True(t, math.IsInf(m[0].Floats[2].F, -1))
	require.Equal(t, base, s.Now())
}

func TestEmbeddedOutOfOrder(t *testing.T) {
	lset := labels.FromStrings("__name__", "g")
	tests := []struct {
		name   string
		window time.Duration
		behind time.Duration
		want   error
	}{
		{"inside the window", time.Hour, 30 * time.Minute, nil},
		{"just inside the window", time.Hour, 59 * time.Minute, nil},
		{"older than the window", time.Hour, 3 * time.Hour, storage.ErrTooOldSample},
		{"far older than the window", time.Hour, 30 * 24 * time.Hour, storage.ErrTooOldSample},
		{"no window, slightly behind", 0, time.Minute, storage.ErrOutOfOrderSample},
		{"no window, far behind", 0, 3 * time.Hour, storage.ErrOutOfBounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := store.DefaultEmbeddedConfig(t.TempDir())
			cfg.OutOfOrderWindow = tt.window
			s := openEmbedded(t, cfg)
			head := base.Add(10 * time.Hour)
			require.NoError(t, appendOne(t, s, lset, head, 1))
			err := appendOne(t, s, lset, head.Add(-tt.behind), 2)
			if tt.want == nil {
				require.NoError(t, err)
				require.Equal(t, map[string]float64{"": 2}, byLabel(t, s, "g", head.Add(-tt.behind), "x"))
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// writeBlock writes one sample of g{at} per minute over [from, from+n min)
// as a block in dir.
func writeBlock(t *testing.T, dir string, from time.Time, n int) {
	t.Helper()
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, 2*tsdb.DefaultBlockDuration)
	require.NoError(t, err)
	app := w.AppenderV2(t.Context())
	lset := labels.FromStrings("__name__", "g", "at", from.Format(time.DateOnly))
	for i := range n {
		_, err := app.Append(0, lset, 0, from.Add(time.Duration(i)*time.Minute).UnixMilli(), float64(i), nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	_, err = w.Flush(t.Context())
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

func TestEmbeddedRetention(t *testing.T) {
	dir := t.TempDir()
	newest := base.Add(-24 * time.Hour)
	old := newest.Add(-30 * 24 * time.Hour)
	writeBlock(t, dir, old, 60)
	writeBlock(t, dir, newest.Add(-3*24*time.Hour), 60)
	writeBlock(t, dir, newest, 60)

	cfg := store.DefaultEmbeddedConfig(dir)
	cfg.Retention = 7 * 24 * time.Hour
	s := openEmbedded(t, cfg)
	metas, err := s.BlockMetas()
	require.NoError(t, err)
	require.Len(t, metas, 2, "the block 30 days older than the newest is gone")
	for _, m := range metas {
		require.GreaterOrEqual(t, m.MinTime, newest.Add(-7*24*time.Hour).UnixMilli())
	}
	got := byLabel(t, s, "last_over_time(g[60d])", base, "at")
	require.Equal(t, map[string]float64{
		newest.Format(time.DateOnly):                          59,
		newest.Add(-3 * 24 * time.Hour).Format(time.DateOnly): 59,
	}, got)
}

func TestEmbeddedLocked(t *testing.T) {
	dir := t.TempDir()
	cfg := store.DefaultEmbeddedConfig(dir)
	first, err := store.OpenEmbedded(cfg, nil, nil, nil)
	require.NoError(t, err)

	_, err = store.OpenEmbedded(cfg, nil, nil, nil)
	require.ErrorIs(t, err, store.ErrLocked)
	require.ErrorContains(t, err, "open data directory "+dir)
	_, err = store.LockDir(dir, nil)
	require.ErrorIs(t, err, store.ErrLocked)
	require.ErrorContains(t, err, dir)

	require.NoError(t, first.Close())
	release, err := store.LockDir(dir, nil)
	require.NoError(t, err)
	// The import holds the lock: a server cannot open the directory.
	_, err = store.OpenEmbedded(cfg, nil, nil, nil)
	require.ErrorIs(t, err, store.ErrLocked)
	require.NoError(t, release())

	again, err := store.OpenEmbedded(cfg, nil, nil, nil)
	require.NoError(t, err)
	require.NoError(t, again.Close())
}

func TestLockDir(t *testing.T) {
	t.Run("creates a missing directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new")
		release, err := store.LockDir(dir, nil)
		require.NoError(t, err)
		require.DirExists(t, dir)
		require.NoError(t, release())
	})
	t.Run("a path under a file is not a lock held by someone", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o644))
		_, err := store.LockDir(filepath.Join(file, "data"), nil)
		require.ErrorContains(t, err, "lock data directory")
		require.ErrorIs(t, err, syscall.ENOTDIR)
		require.NotErrorIs(t, err, store.ErrLocked)
	})
}

func TestOpenEmbeddedNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(file), nil, nil, nil)
	require.ErrorContains(t, err, "create data directory")
}

// loadHeavy appends 20 series of one sample every 15 s for 6 hours.
func loadHeavy(t *testing.T, s storage.AppendableV2) (end time.Time) {
	t.Helper()
	app := s.AppenderV2(t.Context())
	const n = 6 * 60 * 4
	for i := range n {
		ts := base.Add(time.Duration(i) * 15 * time.Second)
		for k := range 20 {
			_, err := app.Append(0, labels.FromStrings("__name__", "heavy", "k", fmt.Sprint(k)), 0, ts.UnixMilli(), float64(i), nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	return base.Add(n * 15 * time.Second)
}

func TestEngineLimits(t *testing.T) {
	t.Run("max samples", func(t *testing.T) {
		cfg := store.DefaultEmbeddedConfig(t.TempDir())
		cfg.Engine.MaxSamples = 100
		s := openEmbedded(t, cfg)
		end := loadHeavy(t, s)
		_, _, err := store.Query(t.Context(), s, "sum(heavy)", end)
		require.NoError(t, err, "20 samples are within the limit")
		_, _, err = store.Query(t.Context(), s, "sum_over_time(heavy[1h])", end)
		var tooMany promql.ErrTooManySamples
		require.ErrorAs(t, err, &tooMany)
		_, _, err = store.QueryRange(t.Context(), s, "heavy", end.Add(-time.Hour), end, time.Minute)
		require.ErrorAs(t, err, &tooMany)
	})
	t.Run("timeout", func(t *testing.T) {
		cfg := store.DefaultEmbeddedConfig(t.TempDir())
		cfg.Engine.Timeout = time.Microsecond
		s := openEmbedded(t, cfg)
		end := loadHeavy(t, s)
		_, _, err := store.QueryRange(t.Context(), s, "quantile_over_time(0.5, heavy[6h])", base, end, 15*time.Second)
		// The engine says ErrQueryTimeout when it notices the deadline
		// itself and passes on the context's error when the storage does.
		var timeout promql.ErrQueryTimeout
		require.True(t, errors.As(err, &timeout) || errors.Is(err, context.DeadlineExceeded), "%v", err)
	})
	t.Run("cancelled", func(t *testing.T) {
		s := openEmbedded(t, store.DefaultEmbeddedConfig(t.TempDir()))
		end := loadHeavy(t, s)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, _, err := store.Query(ctx, s, "sum(heavy)", end)
		var canceled promql.ErrQueryCanceled
		require.True(t, errors.As(err, &canceled) || errors.Is(err, context.Canceled), "%v", err)
	})
	t.Run("lookback delta", func(t *testing.T) {
		cfg := store.DefaultEmbeddedConfig(t.TempDir())
		cfg.Engine.LookbackDelta = time.Minute
		s := openEmbedded(t, cfg)
		lset := labels.FromStrings("__name__", "g")
		require.NoError(t, appendOne(t, s, lset, base, 1))
		require.Len(t, byLabel(t, s, "g", base.Add(59*time.Second), ""), 1)
		require.Empty(t, byLabel(t, s, "g", base.Add(61*time.Second), ""))
	})
	t.Run("bad query", func(t *testing.T) {
		s := openEmbedded(t, store.DefaultEmbeddedConfig(t.TempDir()))
		_, _, err := store.Query(t.Context(), s, "sum(", base)
		var perr parser.ParseErrors
		require.ErrorAs(t, err, &perr)
		_, _, err = store.QueryRange(t.Context(), s, "rate(", base, base.Add(time.Minute), time.Second)
		require.ErrorAs(t, err, &perr)
	})
}

func TestEmbeddedAdmin(t *testing.T) {
	s := openEmbedded(t, store.DefaultEmbeddedConfig(t.TempDir()))
	lset := labels.FromStrings("__name__", "g", "k", "a")
	appendAll(t, s, lset, []time.Time{base, base.Add(time.Minute)}, []float64{1, 2})
	appendAll(t, s, labels.FromStrings("__name__", "g", "k", "b"), []time.Time{base}, []float64{3})

	stats, err := s.Stats(model.MetricNameLabel, 10)
	require.NoError(t, err)
	require.Equal(t, uint64(2), stats.NumSeries)

	snap := t.TempDir()
	require.NoError(t, s.Snapshot(snap, true))
	entries, err := os.ReadDir(snap)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the snapshot holds the head as a block")

	require.NoError(t, s.Delete(t.Context(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "k", "a")))
	require.NoError(t, s.CleanTombstones())
	require.Equal(t, map[string]float64{"b": 3}, byLabel(t, s, "g", base.Add(2*time.Minute), "k"))
}

// TestQueryResultOutlivesNextQuery checks that a result stays as it was
// when later queries run: the engine hands the memory of a closed query to
// the next one.
func TestQueryResultOutlivesNextQuery(t *testing.T) {
	s := openEmbedded(t, store.DefaultEmbeddedConfig(t.TempDir()))
	var ts []time.Time
	for i := range 60 {
		ts = append(ts, base.Add(time.Duration(i)*time.Minute))
	}
	for k, name := range []string{"a", "b"} {
		for g := range 3 {
			vs := make([]float64, len(ts))
			for i := range vs {
				vs[i] = float64(k*1000 + g*100 + i)
			}
			appendAll(t, s, labels.FromStrings("__name__", name, "g", fmt.Sprint(g)), ts, vs)
		}
	}
	end := ts[len(ts)-1]
	first, _, err := store.QueryRange(t.Context(), s, "a", base, end, time.Minute)
	require.NoError(t, err)
	vec, _, err := store.Query(t.Context(), s, "a", end)
	require.NoError(t, err)
	wantMatrix, wantVector := first.String(), vec.String()
	for range 3 {
		_, _, err := store.QueryRange(t.Context(), s, "b * 2", base, end, time.Minute)
		require.NoError(t, err)
		_, _, err = store.Query(t.Context(), s, "b", end)
		require.NoError(t, err)
	}
	require.Equal(t, wantMatrix, first.String())
	require.Equal(t, wantVector, vec.String())
}
