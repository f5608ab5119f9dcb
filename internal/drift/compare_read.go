package drift

import (
	"context"
	"fmt"
	"math"
)

// The passes over the files take a batch of rows at a time, feature by
// feature, in tight loops over a column; a batch whose cells are all finite
// numbers skips every per-cell check. When several features fail in one
// batch, the error of the first row (then of the first feature) wins, as
// when reading row by row.

// rowErr is the error of the earliest row.
type rowErr struct {
	row int64
	err error
}

func (e *rowErr) keep(row int64, err error) {
	if e.err == nil || row < e.row {
		e.row, e.err = row, err
	}
}

// addCategory counts a category of one side.
func (f *feature) addCategory(side int, s []byte, maxCats int) error {
	m := f.cats[side]
	if c := m[string(s)]; c != nil {
		*c++
		return nil
	}
	if len(m) >= maxCats {
		return fmt.Errorf("%w: feature %q has more than %d categories (an identifier?)", ErrInput, f.name, maxCats)
	}
	one := int64(1)
	m[string(s)] = &one
	return nil
}

func readReference(ctx context.Context, s Source, feats []*feature, o Options) error {
	slots := make([]slot, len(feats))
	for k, f := range feats {
		slots[k] = slot{col: f.col[0], text: f.categorical}
	}
	var tmp []uint64
	rows, err := eachBatch(ctx, s, slots, func(first int64, b *colBatch) error {
		var e rowErr
		for k, f := range feats {
			f.vals[0].reserve(b.hint)
			f.refCells(first, &b.cols[k], b.n, o.MaxCategories, &e, &tmp)
		}
		return e.err
	})
	if err != nil {
		return err
	}
	if rows == 0 {
		return fmt.Errorf("%w: no rows", ErrInput)
	}
	var exact []*sample
	for _, f := range feats {
		if !f.categorical && f.vals[0].exact() {
			exact = append(exact, &f.vals[0])
		}
	}
	sortSamples(exact)
	for _, f := range feats {
		if f.rows[0] == f.missing[0] && !f.rescan {
			return fmt.Errorf("%w: feature %q has no values (all missing)", ErrInput, f.name)
		}
		f.method = o.Method
		if f.method == "" {
			f.method = defaultMethod(f.categorical, !f.categorical && !f.mom.distinctOverflowed, f.rows[0]-f.missing[0])
		}
		if f.categorical && f.method.NeedsValues() {
			return fmt.Errorf("%w: feature %q is categorical: method %s needs numbers", ErrInput, f.name, f.method)
		}
		if f.categorical {
			continue
		}
		f.edges = binEdges(o.Bins, o.QuantileBins, &f.mom, f.vals[0].sorted)
		f.bins = [2][]int64{make([]int64, len(f.edges)+1), make([]int64, len(f.edges)+1)}
		if !f.vals[0].exact() {
			f.rescan = true
			continue
		}
		countSorted(f.edges, f.vals[0].vals, f.bins[0])
		if !f.method.NeedsValues() {
			f.vals[0] = sample{}
		}
	}
	return nil
}

// refCells takes a column of the reference's first pass.
func (f *feature) refCells(first int64, c *cells, n, maxCats int, e *rowErr, tmp *[]uint64) {
	f.rows[0] += int64(n)
	if !f.categorical && c.plain {
		for _, v := range c.num[:n] {
			f.mom.add(v)
		}
		f.vals[0].addAll(c.num[:n], tmp)
		return
	}
	for i := range n {
		if c.kind[i] == Missing {
			f.missing[0]++
			continue
		}
		if f.categorical {
			if !f.rescan {
				if err := f.addCategory(0, c.text[i], maxCats); err != nil {
					e.keep(first+int64(i)+1, err)
					return
				}
			}
			continue
		}
		if c.kind[i] == Text {
			// Non-numeric in the reference: categorical, counted from
			// the start on a second pass.
			f.categorical, f.rescan = true, true
			f.cats = [2]map[string]*int64{{}, {}}
			f.vals[0] = sample{}
			f.mom = moments{}
			continue
		}
		switch v := c.num[i]; {
		case math.IsNaN(v):
			f.missing[0]++
		case math.IsInf(v, 0):
			row := first + int64(i) + 1
			e.keep(row, fmt.Errorf("%w: row %d: feature %q: value %q is infinite", ErrInput, row, f.name, c.textAt(i)))
			return
		default:
			f.mom.add(v)
			f.vals[0].add(v)
		}
	}
}

// rescanReference counts what the first pass could not: categories of
// features found categorical late, bins of features that overflowed.
func rescanReference(ctx context.Context, s Source, feats []*feature, o Options) error {
	var again []*feature
	var slots []slot
	for _, f := range feats {
		if f.rescan {
			again = append(again, f)
			slots = append(slots, slot{col: f.col[0], text: f.categorical})
		}
	}
	_, err := eachBatch(ctx, s, slots, func(first int64, b *colBatch) error {
		var e rowErr
		for k, f := range again {
			f.rescanCells(first, &b.cols[k], b.n, o.MaxCategories, &e)
		}
		return e.err
	})
	if err != nil {
		return err
	}
	for _, f := range again {
		if f.categorical && len(f.cats[0]) == 0 {
			return fmt.Errorf("%w: feature %q has no values (all missing)", ErrInput, f.name)
		}
	}
	return nil
}

// rescanCells takes a column of the reference's second pass.
func (f *feature) rescanCells(first int64, c *cells, n, maxCats int, e *rowErr) {
	switch {
	case f.categorical:
		for i := range n {
			if c.kind[i] == Missing {
				continue
			}
			if err := f.addCategory(0, c.text[i], maxCats); err != nil {
				e.keep(first+int64(i)+1, err)
				return
			}
		}
	case c.plain:
		for _, v := range c.num[:n] {
			f.bins[0][searchEdges(f.edges, v)]++
		}
	default:
		for i := range n {
			if v := c.num[i]; c.kind[i] == Number && !math.IsNaN(v) {
				f.bins[0][searchEdges(f.edges, v)]++
			}
		}
	}
}

func readCurrent(ctx context.Context, s Source, feats []*feature, o Options) error {
	slots := make([]slot, len(feats))
	for k, f := range feats {
		slots[k] = slot{col: f.col[1], text: f.categorical}
	}
	var tmp []uint64
	rows, err := eachBatch(ctx, s, slots, func(first int64, b *colBatch) error {
		var e rowErr
		for k, f := range feats {
			if f.method.NeedsValues() {
				f.vals[1].reserve(b.hint)
			}
			f.curCells(first, &b.cols[k], b.n, o.MaxCategories, &e, &tmp)
		}
		return e.err
	})
	if err != nil {
		return err
	}
	if rows == 0 {
		return fmt.Errorf("%w: no rows", ErrInput)
	}
	for _, f := range feats {
		if f.rows[1] == f.missing[1] {
			return fmt.Errorf("%w: feature %q has no values (all missing)", ErrInput, f.name)
		}
	}
	return nil
}

// curCells takes a column of the current file.
func (f *feature) curCells(first int64, c *cells, n, maxCats int, e *rowErr, tmp *[]uint64) {
	f.rows[1] += int64(n)
	needs := f.method.NeedsValues()
	if !f.categorical && c.plain {
		for _, v := range c.num[:n] {
			f.bins[1][searchEdges(f.edges, v)]++
		}
		if needs {
			f.vals[1].addAll(c.num[:n], tmp)
		}
		return
	}
	for i := range n {
		row := first + int64(i) + 1
		if c.kind[i] == Missing {
			f.missing[1]++
			continue
		}
		if f.categorical {
			if err := f.addCategory(1, c.text[i], maxCats); err != nil {
				e.keep(row, err)
				return
			}
			continue
		}
		v := c.num[i]
		switch {
		case c.kind[i] == Text:
			e.keep(row, fmt.Errorf("%w: row %d: feature %q: value %q is not a number (the reference's are)", ErrInput, row, f.name, c.textAt(i)))
			return
		case math.IsNaN(v):
			f.missing[1]++
			continue
		case math.IsInf(v, 0):
			e.keep(row, fmt.Errorf("%w: row %d: feature %q: value %q is infinite", ErrInput, row, f.name, c.textAt(i)))
			return
		}
		f.bins[1][searchEdges(f.edges, v)]++
		if needs {
			f.vals[1].add(v)
		}
	}
}

// reserve sizes an empty exact sample for the rows a source is expected
// to have (up to its limit), so that it is not grown value by value.
func (s *sample) reserve(rows int64) {
	if rows > 0 && s.sk == nil && cap(s.vals) == 0 && s.limit > 0 {
		s.vals = make([]float64, 0, min(rows, int64(s.limit)))
	}
}

// searchEdges is binOf: the index of the first edge at or above x.
func searchEdges(edges []float64, x float64) int {
	lo, hi := 0, len(edges)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if edges[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// countSorted adds sorted values to their bins.
func countSorted(edges, sorted []float64, bins []int64) {
	i := 0
	for _, v := range sorted {
		for i < len(edges) && edges[i] < v {
			i++
		}
		bins[i]++
	}
}
