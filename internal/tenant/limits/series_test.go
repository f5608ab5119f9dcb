package limits

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestMaxActiveSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newClock()
	e := NewEnforcer(&static{defaults: Limits{MaxActiveSeries: 3}}, EnforcerOptions{Now: c.Now}, reg)
	now := c.Now()
	for h := range uint64(3) {
		require.NoError(t, e.SeriesSeen("a", "up", h, now))
	}
	err := e.SeriesSeen("a", "up", 3, now)
	le := limitError(t, err)
	require.Equal(t, MaxActiveSeries, le.Limit)
	require.EqualError(t, err, `tenant "a": active series limit (3) reached: a new series of metric "up" was not stored; see max_active_series in the limits file`)
	require.NoError(t, e.SeriesSeen("a", "up", 1, now), "an active series always passes")
	require.NoError(t, e.SeriesSeen("b", "up", 3, now), "each tenant has its own series")

	total, ofMetric := e.ActiveSeries("a", "up")
	require.Equal(t, 3, total)
	require.Equal(t, 3, ofMetric)
	require.Equal(t, 3.0, testutil.ToFloat64(e.m.active.WithLabelValues("a")))
	require.Equal(t, 1.0, testutil.ToFloat64(e.m.discardedSamples.WithLabelValues("a", MaxActiveSeries)))
}

func TestMaxSeriesPerMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newClock()
	e := NewEnforcer(&static{defaults: Limits{MaxSeriesPerMetric: 2, MaxActiveSeries: 10}}, EnforcerOptions{Now: c.Now}, reg)
	now := c.Now()
	require.NoError(t, e.SeriesSeen("a", "up", 1, now))
	require.NoError(t, e.SeriesSeen("a", "up", 2, now))
	err := e.SeriesSeen("a", "up", 3, now)
	require.Equal(t, MaxSeriesPerMetric, limitError(t, err).Limit)
	require.EqualError(t, err, `tenant "a": series per metric limit (2) reached for metric "up": a new series was not stored; see max_series_per_metric in the limits file`)
	require.NoError(t, e.SeriesSeen("a", "other", 3, now), "another metric has room")
	require.NoError(t, e.SeriesSeen("a", "up", 2, now))
	total, ofUp := e.ActiveSeries("a", "up")
	require.Equal(t, 3, total, "the refused series takes no slot")
	require.Equal(t, 2, ofUp)
	require.Equal(t, 1.0, testutil.ToFloat64(e.m.discardedSamples.WithLabelValues("a", MaxSeriesPerMetric)))
}

// Series not seen for the idle timeout stop counting, and make room for
// new ones; the gauge follows.
func TestIdleSeriesPurged(t *testing.T) {
	c := newClock()
	e := NewEnforcer(&static{defaults: Limits{MaxActiveSeries: 2, MaxSeriesPerMetric: 2}}, EnforcerOptions{Now: c.Now}, prometheus.NewRegistry())
	require.NoError(t, e.SeriesSeen("a", "up", 1, c.Now()))
	require.NoError(t, e.SeriesSeen("a", "up", 2, c.Now()))
	c.Advance(15 * time.Minute)
	require.NoError(t, e.SeriesSeen("a", "up", 2, c.Now()), "series 2 seen again")
	require.Error(t, e.SeriesSeen("a", "up", 3, c.Now()))

	c.Advance(6 * time.Minute)
	e.Purge(c.Now())
	total, ofUp := e.ActiveSeries("a", "up")
	require.Equal(t, 1, total, "series 1, idle 21 minutes, is gone; series 2, idle 6, stays")
	require.Equal(t, 1, ofUp)
	require.Equal(t, 1.0, testutil.ToFloat64(e.m.active.WithLabelValues("a")))
	require.NoError(t, e.SeriesSeen("a", "up", 3, c.Now()))
	require.Error(t, e.SeriesSeen("a", "up", 4, c.Now()))

	c.Advance(time.Hour)
	e.Purge(c.Now())
	total, _ = e.ActiveSeries("a", "up")
	require.Zero(t, total)
}

// A limit lowered below the series a tenant has refuses new series and
// keeps the existing ones; a limit set where there was none counts the
// series already seen.
func TestSeriesLimitChanged(t *testing.T) {
	src := &static{}
	e, c := newTestEnforcer(src)
	for h := range uint64(10) {
		require.NoError(t, e.SeriesSeen("a", "up", h, c.Now()))
	}
	src.set("a", Limits{MaxActiveSeries: 5})
	for h := range uint64(10) {
		require.NoError(t, e.SeriesSeen("a", "up", h, c.Now()))
	}
	require.Error(t, e.SeriesSeen("a", "up", 10, c.Now()))
}

// Metric names are interned: a name whose series all went is forgotten and
// its id reused; the caller's string is copied.
func TestMetricNames(t *testing.T) {
	var s seriesSet
	// The caller's name may point into a buffer it reuses.
	buf := []byte("up")
	name := unsafe.String(&buf[0], len(buf))
	created, why := s.seen(name, 1, 10, 0, 0)
	require.True(t, created)
	require.Equal(t, admitted, why)
	buf[0] = 'x'
	require.Equal(t, 1, s.count("up"))
	require.Equal(t, 1, s.purge(11))
	require.Zero(t, s.count("up"))
	require.Empty(t, s.names.ids)
	created, _ = s.seen("down", 2, 10, 0, 0)
	require.True(t, created)
	require.Len(t, s.names.names, 1, "the id of up is reused")
	require.True(t, s.forget(2))
	require.False(t, s.forget(2))
	require.Zero(t, s.total.Load())
}

// A shard's map is remade once most of its series have gone.
func TestPurgeShrinks(t *testing.T) {
	var s seriesSet
	for h := range uint64(seriesShards * 1000) {
		s.seen("m", h, 1, 0, 0)
	}
	for h := range uint64(seriesShards * 10) {
		s.seen("m", h, 5, 0, 0)
	}
	require.Equal(t, seriesShards*990, s.purge(2))
	for i := range s.shards {
		require.Equal(t, 10, s.shards[i].peak)
		require.Len(t, s.shards[i].m, 10)
	}
	require.Equal(t, 10*seriesShards, s.count("m"))
}

// Concurrent new series never exceed the limit.
func TestSeriesConcurrent(t *testing.T) {
	e, c := newTestEnforcer(&static{defaults: Limits{MaxActiveSeries: 500, MaxSeriesPerMetric: 300}})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				metric := "a"
				if i%2 == 0 {
					metric = "b"
				}
				_ = e.SeriesSeen("t", metric, uint64(w*1000+i), c.Now())
			}
		})
	}
	wg.Wait()
	total, ofA := e.ActiveSeries("t", "a")
	_, ofB := e.ActiveSeries("t", "b")
	require.Equal(t, 500, total)
	require.Equal(t, 500, ofA+ofB)
	require.LessOrEqual(t, ofA, 300)
	require.LessOrEqual(t, ofB, 300)
}
