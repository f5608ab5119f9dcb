package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

// countingQueryable records the range of every Select a store is asked.
type countingQueryable struct {
	storage.Queryable
	mu    sync.Mutex
	asked [][2]int64
}

func (c *countingQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := c.Queryable.Querier(mint, maxt)
	return &countingQuerier{Querier: q, c: c, mint: mint, maxt: maxt}, err
}

func (c *countingQueryable) take() [][2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.asked
	c.asked = nil
	return a
}

type countingQuerier struct {
	storage.Querier
	c          *countingQueryable
	mint, maxt int64
}

func (q *countingQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = hints.Start, hints.End
	}
	q.c.mu.Lock()
	q.c.asked = append(q.c.asked, [2]int64{mint, maxt})
	q.c.mu.Unlock()
	return q.Querier.Select(ctx, sortSeries, hints, ms...)
}

// samplesOf returns each series of a sorted Select of name over [mint,
// maxt] (hints, if any) as its labels and samples.
func samplesOf(t *testing.T, src storage.Queryable, name string, mint, maxt int64, hints *storage.SelectHints) map[string][][2]float64 {
	t.Helper()
	q, err := src.Querier(mint, maxt)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), true, hints, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	out := map[string][][2]float64{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		pts := [][2]float64{}
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				pts = append(pts, [2]float64{float64(ts), v})
			default:
				ts, h := it.AtHistogram(nil)
				pts = append(pts, [2]float64{float64(ts), h.Sum})
			}
		}
		require.NoError(t, it.Err())
		out[s.Labels().String()] = pts
	}
	require.NoError(t, ss.Err())
	return out
}

// TestSettled: a window of an hour sliding on by 30 s over a settled
// store reads, through Settled, the whole hour once and then only what
// lies past the previous answer, and gives every time what the store
// gives: a series that stopped keeps its older samples, a window that
// moves back reads afresh, the engine's hinted ranges are kept apart
// from the plain ones, and series-only reads and native histograms go to
// the store as they are.
func TestSettled(t *testing.T) {
	s := openEmbedded(t, store.DefaultEmbeddedConfig(t.TempDir()))
	var ts []time.Time
	var vs []float64
	for at := base; !at.After(base.Add(2 * time.Hour)); at = at.Add(15 * time.Second) {
		ts, vs = append(ts, at), append(vs, float64(at.Unix()))
	}
	for _, inst := range []string{"a", "b"} {
		appendAll(t, s, labels.FromStrings("__name__", "up", "instance", inst), ts, vs)
	}
	half := len(ts) / 2
	appendAll(t, s, labels.FromStrings("__name__", "gone"), ts[:half], vs[:half])
	app := s.AppenderV2(t.Context())
	for _, at := range ts {
		h := &histogram.Histogram{Count: 1, Sum: float64(at.Unix()), PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}
		_, err := app.Append(0, labels.FromStrings("__name__", "latency"), 0, at.UnixMilli(), 0, h, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())

	counted := &countingQueryable{Queryable: s}
	cached := store.NewSettled(counted, 1<<20)
	hour := time.Hour.Milliseconds()
	for i := range 10 {
		maxt := base.Add(75*time.Minute + time.Duration(i)*30*time.Second).UnixMilli()
		for _, name := range []string{"up", "gone"} {
			got := samplesOf(t, cached, name, maxt-hour, maxt, nil)
			require.Equal(t, samplesOf(t, s, name, maxt-hour, maxt, nil), got, "%s at step %d", name, i)
			asked := counted.take()
			require.Len(t, asked, 1, "%s at step %d", name, i)
			want := [2]int64{maxt - hour, maxt}
			if i > 0 {
				want[0] = maxt - 30_000 + 1
			}
			require.Equal(t, want, asked[0], "%s at step %d: only what is new", name, i)

			// The engine's hints, 5 minutes of the same selector: their
			// own range, cut from the hour, nothing read.
			h := &storage.SelectHints{Start: maxt - 5*60_000, End: maxt, Step: 30_000, Func: "rate", Range: 5 * 60_000}
			require.Equal(t, samplesOf(t, s, name, maxt-hour, maxt, h), samplesOf(t, cached, name, maxt-hour, maxt, h), "%s hinted at step %d", name, i)
			require.Empty(t, counted.take(), "%s hinted at step %d", name, i)
			// Half an hour, ending a minute behind: cut from the hour.
			require.Equal(t, samplesOf(t, s, name, maxt-30*60_000, maxt-60_000, nil), samplesOf(t, cached, name, maxt-30*60_000, maxt-60_000, nil), "%s inside at step %d", name, i)
			require.Empty(t, counted.take(), "%s inside at step %d", name, i)
			// An hour ending a minute behind: not all in the kept hour.
			require.Equal(t, samplesOf(t, s, name, maxt-hour-60_000, maxt-60_000, nil), samplesOf(t, cached, name, maxt-hour-60_000, maxt-60_000, nil), "%s behind at step %d", name, i)
			require.Equal(t, [][2]int64{{maxt - hour - 60_000, maxt - 60_000}}, counted.take(), "%s behind at step %d: starts before the kept hour, read whole", name, i)
		}
		// The same window again: nothing read.
		samplesOf(t, cached, "up", maxt-hour, maxt, nil)
		require.Empty(t, counted.take())
		// Series only, and histograms: the store's answer, read whole.
		h := &storage.SelectHints{Start: maxt - hour, End: maxt, Func: "series"}
		require.Equal(t, samplesOf(t, s, "up", maxt-hour, maxt, h), samplesOf(t, cached, "up", maxt-hour, maxt, h))
		require.Equal(t, [][2]int64{{maxt - hour, maxt}}, counted.take())
		require.Equal(t, samplesOf(t, s, "latency", maxt-hour, maxt, nil), samplesOf(t, cached, "latency", maxt-hour, maxt, nil))
		counted.take()
	}
	// Back in time: read afresh, the same answer.
	maxt := base.Add(70 * time.Minute).UnixMilli()
	require.Equal(t, samplesOf(t, s, "up", maxt-hour, maxt, nil), samplesOf(t, cached, "up", maxt-hour, maxt, nil))
	require.Equal(t, [][2]int64{{maxt - hour, maxt}}, counted.take())
}
