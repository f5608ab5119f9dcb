package limits

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

type tenantKey struct{}

func withTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

func tenantOf(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok
}

// memStore keeps the samples of committed appenders.
type memStore struct {
	committed  []labels.Labels
	exemplars  int
	rollbacks  int
	failCommit error
	withEx     bool
}

func (s *memStore) AppenderV2(context.Context) storage.AppenderV2 {
	a := &memApp{s: s}
	if s.withEx {
		return &memExApp{a}
	}
	return a
}

type memApp struct {
	s       *memStore
	pending []labels.Labels
	ex      int
}

// Append refuses series with an "ooo" label as out of order.
func (a *memApp) Append(_ storage.SeriesRef, ls labels.Labels, _, _ int64, _ float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	if ls.Has("ooo") {
		return 0, storage.ErrOutOfOrderSample
	}
	a.pending = append(a.pending, ls)
	return 1, nil
}

func (a *memApp) Commit() error {
	if a.s.failCommit != nil {
		a.pending = nil
		return a.s.failCommit
	}
	a.s.committed = append(a.s.committed, a.pending...)
	a.s.exemplars += a.ex
	return nil
}

func (a *memApp) Rollback() error {
	a.pending = nil
	a.s.rollbacks++
	return nil
}

type memExApp struct{ *memApp }

func (a *memExApp) AppendExemplars(_ storage.SeriesRef, _ labels.Labels, es []exemplar.Exemplar) (storage.SeriesRef, error) {
	a.ex += len(es)
	return 1, nil
}

func series(metric string, i int) labels.Labels {
	return labels.FromStrings("__name__", metric, "i", fmt.Sprint(i))
}

// appendAll appends one sample per series and returns the errors Append
// gave, by series index.
func appendAll(t *testing.T, app storage.AppenderV2, ls []labels.Labels) map[int]error {
	t.Helper()
	errs := map[int]error{}
	for i, l := range ls {
		if _, err := app.Append(0, l, 0, 1000, 1, nil, nil, storage.AOptions{}); err != nil {
			errs[i] = err
		}
	}
	return errs
}

func TestAppendableCommits(t *testing.T) {
	store := &memStore{}
	e, _ := newTestEnforcer(&static{defaults: Limits{IngestionRate: 10, IngestionBurstSize: 10, MaxActiveSeries: 100}})
	app := Appendable(store, e, tenantOf).AppenderV2(withTenant(t.Context(), "a"))
	var ls []labels.Labels
	for i := range 10 {
		ls = append(ls, series("up", i))
	}
	require.Empty(t, appendAll(t, app, ls))
	require.NoError(t, app.Commit())
	require.Len(t, store.committed, 10)
	total, _ := e.ActiveSeries("a", "up")
	require.Equal(t, 10, total)
}

// Over the rate the whole request is rolled back, its new series forgotten,
// and Commit returns the LimitError.
func TestAppendableOverRate(t *testing.T) {
	store := &memStore{}
	e, c := newTestEnforcer(&static{defaults: Limits{IngestionRate: 10, IngestionBurstSize: 10}})
	ap := Appendable(store, e, tenantOf)
	ctx := withTenant(t.Context(), "a")

	app := ap.AppenderV2(ctx)
	require.Empty(t, appendAll(t, app, []labels.Labels{series("up", 0), series("up", 1)}))
	require.NoError(t, app.Commit())

	app = ap.AppenderV2(ctx)
	var ls []labels.Labels
	for i := range 9 {
		ls = append(ls, series("up", i))
	}
	require.Empty(t, appendAll(t, app, ls))
	err := app.Commit()
	le := limitError(t, err)
	require.Equal(t, IngestionRate, le.Limit)
	require.Contains(t, err.Error(), "exceeded while adding 9 samples")
	require.Len(t, store.committed, 2, "nothing of the refused request is stored")
	require.Equal(t, 1, store.rollbacks)
	total, _ := e.ActiveSeries("a", "up")
	require.Equal(t, 2, total, "the refused request's new series are not active")

	c.Advance(time.Second)
	app = ap.AppenderV2(ctx)
	require.Empty(t, appendAll(t, app, ls))
	require.NoError(t, app.Commit(), "the same request fits a second later")
	require.Len(t, store.committed, 11)
}

// A new series over the series limits is refused at Append; the others are
// stored (a partial write), and the refused ones count as discarded.
func TestAppendablePartial(t *testing.T) {
	store := &memStore{}
	e, _ := newTestEnforcer(&static{defaults: Limits{MaxActiveSeries: 5, MaxSeriesPerMetric: 2}})
	app := Appendable(store, e, tenantOf).AppenderV2(withTenant(t.Context(), "a"))
	ls := []labels.Labels{
		series("up", 0), series("up", 1), series("up", 2), // the third of up is over max_series_per_metric
		series("down", 0), series("down", 1),
		labels.FromStrings("__name__", "late", "ooo", "1"), // the fifth series, refused by the storage
		series("other", 0), // the sixth is over max_active_series
		series("up", 0),    // an active series passes
	}
	errs := appendAll(t, app, ls)
	require.Len(t, errs, 3)
	require.Equal(t, MaxSeriesPerMetric, limitError(t, errs[2]).Limit)
	require.ErrorIs(t, errs[5], storage.ErrOutOfOrderSample)
	require.Equal(t, MaxActiveSeries, limitError(t, errs[6]).Limit)
	require.NoError(t, app.Commit())
	require.Len(t, store.committed, 5)
	require.Equal(t, 1.0, counterValue(t, e, "a", MaxSeriesPerMetric))
	require.Equal(t, 1.0, counterValue(t, e, "a", MaxActiveSeries))
}

func counterValue(t *testing.T, e *Enforcer, tenant, reason string) float64 {
	t.Helper()
	m := (*e.tenants.Load())[tenant].m
	switch reason {
	case MaxSeriesPerMetric:
		return metricValue(t, m.discardedPerMetric)
	case MaxActiveSeries:
		return metricValue(t, m.discardedActive)
	}
	return metricValue(t, m.discardedRate)
}

// A rollback, or a commit that fails, leaves no series active.
func TestAppendableRollback(t *testing.T) {
	store := &memStore{}
	e, _ := newTestEnforcer(&static{defaults: Limits{MaxActiveSeries: 2}})
	ap := Appendable(store, e, tenantOf)
	ctx := withTenant(t.Context(), "a")
	for range 3 {
		app := ap.AppenderV2(ctx)
		require.Empty(t, appendAll(t, app, []labels.Labels{series("up", 0), series("up", 1)}))
		require.NoError(t, app.Rollback())
	}
	total, _ := e.ActiveSeries("a", "up")
	require.Zero(t, total)

	store.failCommit = errors.New("disk full")
	app := ap.AppenderV2(ctx)
	require.Empty(t, appendAll(t, app, []labels.Labels{series("up", 0), series("up", 1)}))
	require.EqualError(t, app.Commit(), "disk full")
	total, _ = e.ActiveSeries("a", "up")
	require.Zero(t, total)
}

// Without a tenant in the context the appender is next's, untouched.
func TestAppendableTenancyOff(t *testing.T) {
	store := &memStore{}
	e, _ := newTestEnforcer(&static{defaults: Limits{IngestionRate: 1, IngestionBurstSize: 1, MaxActiveSeries: 1}})
	app := Appendable(store, e, tenantOf).AppenderV2(t.Context())
	require.IsType(t, &memApp{}, app)
	require.Empty(t, appendAll(t, app, []labels.Labels{series("up", 0), series("up", 1), series("up", 2)}))
	require.NoError(t, app.Commit())
	require.Len(t, store.committed, 3)
	require.Empty(t, tenantNames(e))
}

// An inner appender that appends exemplars separately stays one.
func TestAppendableExemplars(t *testing.T) {
	store := &memStore{withEx: true}
	e, _ := newTestEnforcer(&static{defaults: Limits{IngestionRate: 100, IngestionBurstSize: 100}})
	app := Appendable(store, e, tenantOf).AppenderV2(withTenant(t.Context(), "a"))
	ex, ok := app.(storage.ExemplarAppenderV2)
	require.True(t, ok)
	ref, err := ex.Append(0, series("up", 0), 0, 1000, 1, nil, nil, storage.AOptions{})
	require.NoError(t, err)
	_, err = ex.AppendExemplars(ref, series("up", 0), []exemplar.Exemplar{{Value: 1, Ts: 1000}, {Value: 2, Ts: 1001}})
	require.NoError(t, err)
	require.NoError(t, ex.Commit())
	require.Equal(t, 2, store.exemplars)
	require.Len(t, store.committed, 1)

	store.withEx = false
	_, ok = Appendable(store, e, tenantOf).AppenderV2(withTenant(t.Context(), "a")).(storage.ExemplarAppenderV2)
	require.False(t, ok)
}

// Reserve takes a request's samples before it appends any: over the rate
// it is refused at once, nothing appended; within it, Commit charges only
// what was appended beyond the reservation.
func TestAppendableReserve(t *testing.T) {
	store := &memStore{}
	e, c := newTestEnforcer(&static{defaults: Limits{IngestionRate: 10, IngestionBurstSize: 10}})
	ap := Appendable(store, e, tenantOf)
	ctx := withTenant(t.Context(), "a")
	type reserver interface{ Reserve(int) error }

	app := ap.AppenderV2(ctx)
	require.NoError(t, app.(reserver).Reserve(8))
	require.Empty(t, appendAll(t, app, []labels.Labels{series("up", 0), series("up", 1)}))
	require.NoError(t, app.Commit(), "2 appended of 8 reserved: nothing more to take")

	app = ap.AppenderV2(ctx)
	le := limitError(t, app.(reserver).Reserve(5))
	require.Equal(t, IngestionRate, le.Limit, "2 tokens left, 5 asked")
	require.NoError(t, app.Rollback())
	require.Len(t, store.committed, 2)

	c.Advance(time.Second)
	app = ap.AppenderV2(ctx)
	require.NoError(t, app.(reserver).Reserve(1))
	var ls []labels.Labels
	for i := range 4 {
		ls = append(ls, series("up", i))
	}
	require.Empty(t, appendAll(t, app, ls))
	require.NoError(t, app.Commit(), "1 reserved, 3 more charged at Commit")
	require.Error(t, ap.AppenderV2(ctx).(reserver).Reserve(7), "10 − 1 − 3 = 6 left")
}

// SamplesExhausted refuses while the bucket holds less than one sample,
// and lets writes in again once it refilled.
func TestSamplesExhausted(t *testing.T) {
	e, c := newTestEnforcer(&static{defaults: Limits{IngestionRate: 10, IngestionBurstSize: 10}})
	require.NoError(t, e.SamplesExhausted("a"))
	require.NoError(t, e.AllowSamples("a", 10))
	le := limitError(t, e.SamplesExhausted("a"))
	require.Equal(t, IngestionRate, le.Limit)
	require.Equal(t, 100*time.Millisecond, le.RetryAfter)
	require.NoError(t, e.SamplesExhausted("b"), "another tenant's bucket")
	c.Advance(100 * time.Millisecond)
	require.NoError(t, e.SamplesExhausted("a"))
	e2, _ := newTestEnforcer(&static{})
	require.NoError(t, e2.SamplesExhausted("a"), "no rate")
}
