package tenant

import (
	"context"
	"sync/atomic"

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
	// that a Seek that stays on a sample does not charge it again.
	last int64
	have bool
}

// charge charges the sample the iterator moved to, once.
func (it *budgetIterator) charge(vt chunkenc.ValueType) chunkenc.ValueType {
	if it.err != nil {
		return chunkenc.ValNone
	}
	if vt == chunkenc.ValNone {
		return vt
	}
	if t := it.Iterator.AtT(); !it.have || t != it.last {
		it.last, it.have = t, true
		if it.b.left.Add(-1) < 0 {
			it.err = it.b.err()
			return chunkenc.ValNone
		}
	}
	return vt
}

func (it *budgetIterator) Next() chunkenc.ValueType { return it.charge(it.Iterator.Next()) }

func (it *budgetIterator) Seek(t int64) chunkenc.ValueType { return it.charge(it.Iterator.Seek(t)) }

func (it *budgetIterator) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.Iterator.Err()
}
