package tenant

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// SampleBudget bounds the samples one request's reads may load, across
// every selector of its queries (a tenant's max_query_samples). Reads
// restricts the series it returns to the budget of its context: past it,
// their iterators stop with the budget's error, which the query fails
// with.
type SampleBudget struct {
	left atomic.Int64
	err  func() error
}

type budgetKey struct{}

// WithSampleBudget returns ctx whose reads may load at most n samples;
// past them they fail with err() (n ≤ 0: no budget).
func WithSampleBudget(ctx context.Context, n int64, err func() error) context.Context {
	if n <= 0 {
		return ctx
	}
	b := &SampleBudget{err: err}
	b.left.Store(n)
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetOf(ctx context.Context) *SampleBudget {
	b, _ := ctx.Value(budgetKey{}).(*SampleBudget)
	return b
}

// budgetSeriesSet charges its series' samples to a budget.
type budgetSeriesSet struct {
	storage.SeriesSet
	b *SampleBudget
}

func (s budgetSeriesSet) At() storage.Series { return budgetSeries{s.SeriesSet.At(), s.b} }

type budgetSeries struct {
	storage.Series
	b *SampleBudget
}

func (s budgetSeries) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	if it, ok := reuse.(*budgetIterator); ok {
		reuse = it.Iterator
	}
	return &budgetIterator{Iterator: s.Series.Iterator(reuse), b: s.b}
}

type budgetIterator struct {
	chunkenc.Iterator
	b   *SampleBudget
	err error
	// last is the time of the last sample charged (have: one was), so
	// that a sample read more than once is charged once.
	last int64
	have bool
}

// touch charges the sample the iterator is on, once. Past the budget it
// sets the error: Next then stops, and Err fails the query.
func (it *budgetIterator) touch() {
	if it.err != nil {
		return
	}
	if t := it.Iterator.AtT(); !it.have || t != it.last {
		it.last, it.have = t, true
		if it.b.left.Add(-1) < 0 {
			it.err = it.b.err()
		}
	}
}

func (it *budgetIterator) Next() chunkenc.ValueType {
	if it.err != nil {
		return chunkenc.ValNone
	}
	vt := it.Iterator.Next()
	if vt != chunkenc.ValNone {
		if it.touch(); it.err != nil {
			return chunkenc.ValNone
		}
	}
	return vt
}

// The reads: a sample a Seek reached is charged when it is read.
func (it *budgetIterator) AtT() int64 {
	it.touch()
	return it.Iterator.AtT()
}

func (it *budgetIterator) At() (int64, float64) {
	it.touch()
	return it.Iterator.At()
}

func (it *budgetIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	it.touch()
	return it.Iterator.AtHistogram(h)
}

func (it *budgetIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	it.touch()
	return it.Iterator.AtFloatHistogram(fh)
}

func (it *budgetIterator) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.Iterator.Err()
}
