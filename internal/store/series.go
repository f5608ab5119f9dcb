package store

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/index"
)

// NumSeries returns the number of active series: those in the in-memory head.
func (e *Embedded) NumSeries() uint64 { return e.db.Head().NumSeries() }

// SeriesExists reports whether the head holds a series with exactly lset.
// It reads the head index, so it costs a postings intersection: call it only
// when a limit is near.
func (e *Embedded) SeriesExists(ctx context.Context, lset labels.Labels) (bool, error) {
	ir, err := e.db.Head().Index()
	if err != nil {
		return false, fmt.Errorf("head index: %w", err)
	}
	defer ir.Close()
	its := make([]index.Postings, 0, lset.Len())
	var perr error
	lset.Range(func(l labels.Label) {
		if perr != nil {
			return
		}
		p, err := ir.Postings(ctx, l.Name, l.Value)
		if err != nil {
			perr = err
			return
		}
		its = append(its, p)
	})
	if perr != nil {
		return false, fmt.Errorf("head postings: %w", perr)
	}
	p := index.Intersect(its...)
	var b labels.ScratchBuilder
	for p.Next() {
		if err := ir.Series(p.At(), &b, nil); err != nil {
			continue // the series went away in head GC
		}
		if labels.Equal(b.Labels(), lset) {
			return true, nil
		}
	}
	return false, p.Err()
}
