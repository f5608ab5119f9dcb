package store

import (
	"context"
	"errors"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Settled reads a store whose data no longer change (the files a replay
// imported) through a cache: each selector's latest answer is kept
// (sampleCache), a window that slides on reads only what lies past the
// kept answer's end, and a narrower window of the same selector (a rule's
// 5 minutes in the diagnosis's hour) reads nothing. A replay's cycles ask
// for the same hour each 30 s later: with the store's chunks decoded once,
// not 120 times, a later cycle reads 30 s of them.
//
// A Select is cached where the answer's order and range are those of a
// window: sorted series (what a merge asks for), and no hints beyond the
// range (no series-only reads, limits, shards or untrimmed chunks);
// others, and answers holding histogram samples or warnings, go to the
// store as they are. Its methods are safe for concurrent use.
type Settled struct {
	src   storage.Queryable
	cache *sampleCache
}

// NewSettled returns src read through a cache of at most limit samples.
func NewSettled(src storage.Queryable, limit int64) *Settled {
	return &Settled{src: src, cache: newSampleCache(limit)}
}

// Querier implements storage.Queryable.
func (s *Settled) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := s.src.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return &settledQuerier{Querier: q, s: s, mint: mint, maxt: maxt}, nil
}

type settledQuerier struct {
	storage.Querier // the labels, Close, and what is not cached
	s               *Settled
	mint, maxt      int64
}

// Select implements storage.Querier.
func (q *settledQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		if hints.Func == "series" || hints.Limit > 0 || hints.ShardCount > 0 || hints.DisableTrimming {
			return q.Querier.Select(ctx, sortSeries, hints, ms...)
		}
		// A TSDB reads the hints' range.
		mint, maxt = hints.Start, hints.End
	}
	if !sortSeries || maxt < mint {
		return q.Querier.Select(ctx, sortSeries, hints, ms...)
	}
	series, err := q.s.cache.read(selector(ms), mint, maxt, settledRead, func(from int64) ([]cachedSeries, error) {
		return q.read(ctx, hints, from, maxt, ms)
	})
	switch {
	case errors.Is(err, errNotCached):
		return q.Querier.Select(ctx, sortSeries, hints, ms...)
	case err != nil:
		return storage.ErrSeriesSet(err)
	}
	return cachedSet(series, nil)
}

// errNotCached says that an answer is the store's to give: it holds
// samples other than floats, or warnings.
var errNotCached = errors.New("not cached")

// read returns the float samples of ms in [from, maxt], series sorted by
// labels, or errNotCached.
func (q *settledQuerier) read(ctx context.Context, hints *storage.SelectHints, from, maxt int64, ms []*labels.Matcher) ([]cachedSeries, error) {
	sub, err := q.s.src.Querier(from, maxt)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	var h *storage.SelectHints
	if hints != nil {
		c := *hints
		c.Start, c.End = from, maxt
		h = &c
	}
	ss := sub.Select(ctx, true, h, ms...)
	var out []cachedSeries
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		var pts fsamples
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				return nil, errNotCached
			}
			t, f := it.At()
			if t < from || t > maxt {
				continue
			}
			pts = append(pts, fsample{t: t, f: f})
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
		if len(pts) > 0 {
			out = append(out, cachedSeries{lset: s.Labels(), pts: slices.Clip(pts)})
		}
	}
	if err := ss.Err(); err != nil {
		return nil, err
	}
	if len(ss.Warnings()) > 0 {
		// The store says them again.
		return nil, errNotCached
	}
	return out, nil
}
