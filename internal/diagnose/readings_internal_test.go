package diagnose

import (
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/detect"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestOwnReadings: a series is read once a sample, whatever the step. Over
// ten minutes read every 15 s (41 steps), a gauge and a counter written
// every minute have one reading a minute: the steps that hold a sample
// over the lookback are no readings, and the counter's increase is the
// one from its previous sample at every reading (no zero at the steps in
// between). A series written every 15 s has a reading at every step.
// Decoys: a series written every 30 s with one scrape 10 s late, read
// every 30 s, is not coarser than the step (its late scrape's step still
// holds the sample before, as it did); the minute rows read every minute
// have a reading at every step.
func TestOwnReadings(t *testing.T) {
	start := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	end := start.Add(10 * time.Minute)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	app := st.AppenderV2(t.Context())
	add := func(name string, ts time.Time, v float64) {
		_, err := app.Append(0, labels.FromStrings("__name__", name, "service", "a"), 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	for s := 0; s <= 600; s += 15 {
		ts := start.Add(time.Duration(s) * time.Second)
		add("fine_gauge", ts, float64(s%45)) // every 15 s
		if s%60 == 0 {
			add("minute_gauge", ts, float64(s%180))
			add("minute_requests_total", ts, 10*float64(s/60)) // 10 a minute
		}
		switch {
		case s == 240: // a scrape 10 s late
			add("half_gauge", ts.Add(10*time.Second), 1)
		case s%30 == 0:
			add("half_gauge", ts, float64(s%90))
		}
	}
	require.NoError(t, app.Commit())

	read := func(t *testing.T, step time.Duration, metric string) (rawSeries, genericSeries) {
		t.Helper()
		e, err := New(Options{Step: step, Window: 10 * time.Minute})
		require.NoError(t, err)
		v, err := e.open(t.Context(), st, end)
		require.NoError(t, err)
		raw, err := v.fetch(t.Context(), metric)
		require.NoError(t, err)
		require.Len(t, raw, 1)
		keep := rawSeries{lset: raw[0].lset, v: append([]float64(nil), raw[0].v...), held: raw[0].held}
		gs := genericSeriesOf(raw, []string{"service"})
		require.Len(t, gs, 1)
		return keep, gs[0]
	}
	t.Run("a minute's rows read every 15 s: one reading a minute", func(t *testing.T) {
		raw, g := read(t, 15*time.Second, "minute_gauge")
		require.NotNil(t, raw.held)
		require.Equal(t, 41, detect.Valid(raw.v), "the lookback holds each row at four steps")
		require.Equal(t, 11, detect.Valid(g.v), "a reading a row")
		require.True(t, g.sparse)
		for i, x := range g.v {
			if i%4 == 0 {
				require.Equal(t, float64((i/4*60)%180), x, "step %d reads its row", i)
			} else {
				require.True(t, math.IsNaN(x), "step %d holds the row before: %v", i, x)
			}
		}
	})
	t.Run("a minute's counter read every 15 s: the increase from the sample before", func(t *testing.T) {
		_, g := read(t, 15*time.Second, "minute_requests_total")
		require.Equal(t, 10, detect.Valid(g.v), "the first row has no sample before it")
		for i, x := range g.v {
			if !math.IsNaN(x) {
				require.Equal(t, 10.0, x, "step %d", i)
			}
		}
	})
	t.Run("a 15 s series read every 15 s: a reading a step", func(t *testing.T) {
		raw, g := read(t, 15*time.Second, "fine_gauge")
		require.Nil(t, raw.held)
		require.Equal(t, 41, detect.Valid(g.v))
		require.False(t, g.sparse)
	})
	t.Run("decoy: a late scrape is no coarser series", func(t *testing.T) {
		raw, g := read(t, 30*time.Second, "half_gauge")
		require.Nil(t, raw.held)
		require.Equal(t, 21, detect.Valid(g.v), "the late scrape's step holds the sample before, as it did")
	})
	t.Run("decoy: a minute's rows read every minute", func(t *testing.T) {
		raw, g := read(t, time.Minute, "minute_gauge")
		require.Nil(t, raw.held)
		require.Equal(t, 11, detect.Valid(g.v))
	})
}

// TestPersistentMaxSparse: a change that holds for two readings of a
// series read once a sample holds whatever steps lie between them; one
// reading alone is a blip. A series read at every step still needs two
// steps running.
func TestPersistentMaxSparse(t *testing.T) {
	nan := math.NaN()
	b := genericBaseline([]float64{1, 1.1, 0.9, 1, 1.05, 0.95})
	held := []float64{1, nan, nan, nan, 9, nan, nan, nan, 9, nan, nan, nan}
	z, first, next := persistentMax(held, 1, b, true)
	require.Greater(t, z, 10.0)
	require.Equal(t, 4, first)
	require.Equal(t, 8, next)
	blip := []float64{1, nan, nan, nan, 9, nan, nan, nan, 1, nan, nan, nan}
	z, _, _ = persistentMax(blip, 1, b, true)
	require.Less(t, z, 1.0, "one reading is a blip")
	dense := []float64{1, 1, 9, nan, 9, 1}
	z, _, _ = persistentMax(dense, 1, b, false)
	require.Less(t, z, 1.0, "at every step, a gap breaks the run")
}

// TestHistoryCountsSamples: two services' latency over 20 minutes read
// every 15 s; from minute 14 busy's triples and rare's (a rarely called
// service's quantile) jumps a thousandfold. Written once a minute, rare's
// history before the onset is 14 readings, not the 56 steps the lookback
// holds them over, and its change is no surer than 14 readings allow
// (historyBound, 2.1 deviates) however far it moved: busy's tripling
// against 56 readings ranks first. Decoy: written every 15 s, rare's
// history is 56 readings as well, and its larger move ranks it first.
func TestHistoryCountsSamples(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rareEvery time.Duration
		first     string
		readings  int
	}{
		{"rare written every minute", time.Minute, "busy", 14},
		{"decoy: rare written every 15 s", 15 * time.Second, "rare", 56},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
			end := start.Add(20 * time.Minute)
			st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, slog.New(slog.DiscardHandler), nil)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			app := st.AppenderV2(t.Context())
			add := func(svc string, ts time.Time, v float64) {
				_, err := app.Append(0, labels.FromStrings("__name__", "app_latency_seconds", "service", svc), 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{})
				require.NoError(t, err)
			}
			for i := 0; !start.Add(time.Duration(i) * 15 * time.Second).After(end); i++ {
				off := time.Duration(i) * 15 * time.Second
				wiggle := 1 + 0.04*float64(i%5-2)
				busy, rare := 0.2*wiggle, 0.005*wiggle
				if off >= 14*time.Minute {
					busy, rare = 3*busy, 1000*rare
				}
				add("busy", start.Add(off), busy)
				if off%tc.rareEvery == 0 {
					add("rare", start.Add(off), rare)
				}
			}
			require.NoError(t, app.Commit())
			e, err := New(Options{Step: 15 * time.Second, Window: 20 * time.Minute})
			require.NoError(t, err)
			v, err := e.open(t.Context(), st, end)
			require.NoError(t, err)
			raw, err := v.fetch(t.Context(), "app_latency_seconds")
			require.NoError(t, err)
			series := genericSeriesOf(raw, []string{"service"})
			vals := make([][]float64, len(series))
			for i, s := range series {
				vals[i] = s.v
			}
			onset, ok := detect.CommonOnset(vals, detect.OnsetOptions{})
			require.True(t, ok)
			require.Equal(t, 56, onset, "minute 14")
			scores := scoreEntities(series, onset)
			require.Len(t, scores, 2)
			require.Equal(t, tc.first, scores[0].entity, "%+v", scores)
			for _, s := range scores {
				if s.entity == "rare" {
					require.Equal(t, historyBound(tc.readings), s.rank, "rare's change, bounded by its history")
					require.Greater(t, s.z, 100.0)
				}
			}
		})
	}
}
