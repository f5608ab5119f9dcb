package drift

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
)

// Options configures Compare. The zero value is the documented default.
type Options struct {
	// Method applies to every feature; empty picks one per feature.
	Method Method
	// Threshold overrides the method's default threshold when above 0.
	Threshold float64
	// Features to compare; empty means every column both files share.
	Features []string
	// Categorical names features to treat as categories; a feature is
	// categorical too when the reference has a non-numeric value in it.
	Categorical []string
	// Bins is the bin rule of numeric features; empty is BinsQuantile.
	Bins BinRule
	// QuantileBins is the number of quantile bins; 0 is 10.
	QuantileBins int
	// ExactValues is how many values one file's features keep exactly in
	// all before sketching; 0 is 4 Mi (32 MiB).
	ExactValues int
	// MaxCategories caps the categories of one feature; 0 is 10 000.
	MaxCategories int
}

const (
	defaultExactValues   = 1 << 22
	minExactPerFeature   = 1 << 16
	defaultMaxCategories = 10000
)

// Validate checks the options.
func (o Options) Validate() error {
	if _, err := ParseMethod(string(o.Method)); err != nil {
		return err
	}
	switch o.Bins {
	case "", BinsQuantile, BinsSturges, BinsDoane:
	default:
		return fmt.Errorf("%w: unknown bin rule %q (want quantile, sturges or doane)", ErrInput, o.Bins)
	}
	if o.QuantileBins < 0 || o.QuantileBins == 1 || o.ExactValues < 0 || o.MaxCategories < 0 || o.Threshold < 0 || math.IsNaN(o.Threshold) {
		return fmt.Errorf("%w: quantile bins must be 0 or at least 2, and thresholds and limits not negative", ErrInput)
	}
	return nil
}

// Result is one feature's drift.
type Result struct {
	Feature   string   `json:"feature"`
	Method    Method   `json:"method"`
	Type      string   `json:"type"`
	Score     float64  `json:"score"`
	PValue    *float64 `json:"p_value,omitempty"`
	Drift     bool     `json:"drift"`
	Threshold float64  `json:"threshold"`
	// Level is PSI's reading: none, moderate (≥ 0.1) or significant (≥ 0.25).
	Level            string `json:"level,omitempty"`
	ReferenceRows    int64  `json:"reference_rows"`
	CurrentRows      int64  `json:"current_rows"`
	MissingReference int64  `json:"missing_reference"`
	MissingCurrent   int64  `json:"missing_current"`
	// Exact is false when ks or wasserstein read a sketch.
	Exact bool   `json:"exact"`
	Note  string `json:"note,omitempty"`
}

// Report is the drift of every feature.
type Report struct {
	Features []Result `json:"features"`
	Drifted  int      `json:"drifted"`
	Total    int      `json:"total"`
}

// feature accumulates one feature over both files.
type feature struct {
	name        string
	col         [2]int // column index in reference and current
	categorical bool
	method      Method
	rows        [2]int64
	missing     [2]int64
	vals        [2]sample
	mom         moments
	cats        [2]map[string]int64
	edges       []float64
	bins        [2][]int64
	rescan      bool // reference pass 2: count bins or categories
}

// Compare streams the reference (once, or twice when it overflows the exact
// store or turns out categorical late) and the current sample once, and
// measures each feature's drift. Errors wrapping ErrInput are bad input.
func Compare(ctx context.Context, ref, cur Opener, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.fillDefaults()
	rs, err := ref()
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	defer rs.Close()
	cs, err := cur()
	if err != nil {
		return nil, fmt.Errorf("current: %w", err)
	}
	defer cs.Close()
	feats, err := pickFeatures(rs.Columns(), cs.Columns(), o)
	if err != nil {
		return nil, err
	}
	perFeature := max(minExactPerFeature, o.ExactValues/len(feats))
	for _, f := range feats {
		f.vals[0].limit, f.vals[1].limit = perFeature, perFeature
	}
	if err := readReference(ctx, rs, feats, o); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if slices.ContainsFunc(feats, func(f *feature) bool { return f.rescan }) {
		rs2, err := ref()
		if err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
		err = rescanReference(ctx, rs2, feats, o)
		rs2.Close()
		if err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
	}
	if err := readCurrent(ctx, cs, feats, o); err != nil {
		return nil, fmt.Errorf("current: %w", err)
	}
	rep := &Report{Features: []Result{}, Total: len(feats)}
	for _, f := range feats {
		r, err := f.result(o)
		if err != nil {
			return nil, fmt.Errorf("feature %q: %w", f.name, err)
		}
		if r.Drift {
			rep.Drifted++
		}
		rep.Features = append(rep.Features, r)
	}
	return rep, nil
}

func (o *Options) fillDefaults() {
	if o.Bins == "" {
		o.Bins = BinsQuantile
	}
	if o.QuantileBins == 0 {
		o.QuantileBins = DefaultQuantileBins
	}
	if o.ExactValues == 0 {
		o.ExactValues = defaultExactValues
	}
	if o.MaxCategories == 0 {
		o.MaxCategories = defaultMaxCategories
	}
}

func pickFeatures(refCols, curCols []string, o Options) ([]*feature, error) {
	names := o.Features
	if len(names) == 0 {
		for _, c := range refCols {
			if slices.Contains(curCols, c) {
				names = append(names, c)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: the files share no column", ErrInput)
		}
	}
	for _, c := range o.Categorical {
		if !slices.Contains(names, c) {
			return nil, fmt.Errorf("%w: categorical feature %q is not among the features compared", ErrInput, c)
		}
	}
	var feats []*feature
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		ri, ci := slices.Index(refCols, n), slices.Index(curCols, n)
		switch {
		case ri < 0:
			return nil, fmt.Errorf("%w: feature %q is not a column of the reference", ErrInput, n)
		case ci < 0:
			return nil, fmt.Errorf("%w: feature %q is not a column of the current file", ErrInput, n)
		}
		cat := slices.Contains(o.Categorical, n)
		f := &feature{name: n, col: [2]int{ri, ci}, categorical: cat}
		if cat {
			f.cats = [2]map[string]int64{{}, {}}
		}
		feats = append(feats, f)
	}
	return feats, nil
}

// textOf is a field as a category.
func textOf(fl Field) string {
	if fl.Kind == Number {
		return strconv.FormatFloat(fl.Num, 'g', -1, 64)
	}
	return fl.Text
}

// numberOf parses a field; ok is false for text that is no number. NaN is
// reported as missing by the caller.
func numberOf(fl Field) (float64, bool) {
	if fl.Kind == Number {
		return fl.Num, true
	}
	v, err := strconv.ParseFloat(fl.Text, 64)
	return v, err == nil
}

func (f *feature) addCategory(side int, s string, maxCats int) error {
	m := f.cats[side]
	if _, ok := m[s]; !ok && len(m) >= maxCats {
		return fmt.Errorf("%w: feature %q has more than %d categories (an identifier?)", ErrInput, f.name, maxCats)
	}
	m[s]++
	return nil
}

// batchRows is how many rows the reading goroutine hands over at a time.
const batchRows = 1024

// rowBatch is rows of fields read ahead, and the error that ended them.
type rowBatch struct {
	fields []Field
	n      int
	err    error
}

// eachRow calls fn for every row with its 1-based number. A goroutine reads
// and parses the rows a batch ahead, so that reading and counting use two
// cores; it has ended when eachRow returns.
func eachRow(ctx context.Context, s Source, fn func(row int64, fields []Field) error) (int64, error) {
	ncol := len(s.Columns())
	free, full := make(chan *rowBatch, 3), make(chan *rowBatch, 3)
	for range cap(free) {
		free <- &rowBatch{fields: make([]Field, batchRows*ncol)}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(full)
		for {
			var b *rowBatch
			select {
			case b = <-free:
			case <-done:
				return
			}
			b.n, b.err = 0, nil
			for b.n < batchRows {
				fields, err := s.Next()
				if err != nil {
					b.err = err
					break
				}
				copy(b.fields[b.n*ncol:(b.n+1)*ncol], fields)
				b.n++
			}
			select {
			case full <- b:
			case <-done:
				return
			}
			if b.err != nil {
				return
			}
		}
	})
	defer func() {
		close(done)
		wg.Wait()
	}()
	var row int64
	for b := range full {
		for i := range b.n {
			row++
			if err := fn(row, b.fields[i*ncol:(i+1)*ncol]); err != nil {
				return row, err
			}
		}
		switch {
		case errors.Is(b.err, io.EOF):
			return row, nil
		case b.err != nil:
			return row, b.err
		case ctx.Err() != nil:
			return row, ctx.Err()
		}
		free <- b
	}
	return row, nil
}

func readReference(ctx context.Context, s Source, feats []*feature, o Options) error {
	rows, err := eachRow(ctx, s, func(row int64, fields []Field) error {
		for _, f := range feats {
			fl := fields[f.col[0]]
			f.rows[0]++
			if f.categorical {
				if fl.Kind == Missing {
					f.missing[0]++
					continue
				}
				if !f.rescan {
					if err := f.addCategory(0, textOf(fl), o.MaxCategories); err != nil {
						return err
					}
				}
				continue
			}
			if fl.Kind == Missing {
				f.missing[0]++
				continue
			}
			v, ok := numberOf(fl)
			switch {
			case ok && math.IsNaN(v):
				f.missing[0]++
			case ok && math.IsInf(v, 0):
				return fmt.Errorf("%w: row %d: feature %q: value %q is infinite", ErrInput, row, f.name, fl.Text)
			case ok:
				f.mom.add(v)
				f.vals[0].add(v)
			default:
				// Non-numeric in the reference: categorical, counted
				// from the start on a second pass.
				f.categorical, f.rescan = true, true
				f.cats = [2]map[string]int64{{}, {}}
				f.vals[0] = sample{}
				f.mom = moments{}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if rows == 0 {
		return fmt.Errorf("%w: no rows", ErrInput)
	}
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
		for _, v := range f.vals[0].vals {
			f.bins[0][binOf(f.edges, v)]++
		}
		if !f.method.NeedsValues() {
			f.vals[0] = sample{}
		}
	}
	return nil
}

// rescanReference counts what the first pass could not: categories of
// features found categorical late, bins of features that overflowed.
func rescanReference(ctx context.Context, s Source, feats []*feature, o Options) error {
	_, err := eachRow(ctx, s, func(_ int64, fields []Field) error {
		for _, f := range feats {
			if !f.rescan {
				continue
			}
			fl := fields[f.col[0]]
			if fl.Kind == Missing {
				continue
			}
			if f.categorical {
				if err := f.addCategory(0, textOf(fl), o.MaxCategories); err != nil {
					return err
				}
				continue
			}
			if v, ok := numberOf(fl); ok && !math.IsNaN(v) {
				f.bins[0][binOf(f.edges, v)]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range feats {
		if f.rescan && f.categorical && len(f.cats[0]) == 0 {
			return fmt.Errorf("%w: feature %q has no values (all missing)", ErrInput, f.name)
		}
	}
	return nil
}

func readCurrent(ctx context.Context, s Source, feats []*feature, o Options) error {
	rows, err := eachRow(ctx, s, func(row int64, fields []Field) error {
		for _, f := range feats {
			fl := fields[f.col[1]]
			f.rows[1]++
			if fl.Kind == Missing {
				f.missing[1]++
				continue
			}
			if f.categorical {
				if err := f.addCategory(1, textOf(fl), o.MaxCategories); err != nil {
					return err
				}
				continue
			}
			v, ok := numberOf(fl)
			switch {
			case !ok:
				return fmt.Errorf("%w: row %d: feature %q: value %q is not a number (the reference's are)", ErrInput, row, f.name, fl.Text)
			case math.IsNaN(v):
				f.missing[1]++
				continue
			case math.IsInf(v, 0):
				return fmt.Errorf("%w: row %d: feature %q: value %q is infinite", ErrInput, row, f.name, fl.Text)
			}
			f.bins[1][binOf(f.edges, v)]++
			if f.method.NeedsValues() {
				f.vals[1].add(v)
			}
		}
		return nil
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

// counts returns the two samples' counts over the same bins.
func (f *feature) counts() (ref, cur []float64) {
	if !f.categorical {
		ref, cur = make([]float64, len(f.bins[0])), make([]float64, len(f.bins[1]))
		for i := range ref {
			ref[i], cur[i] = float64(f.bins[0][i]), float64(f.bins[1][i])
		}
		return ref, cur
	}
	keys := make([]string, 0, len(f.cats[0])+len(f.cats[1]))
	for k := range f.cats[0] {
		keys = append(keys, k)
	}
	for k := range f.cats[1] {
		if _, ok := f.cats[0][k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		ref = append(ref, float64(f.cats[0][k]))
		cur = append(cur, float64(f.cats[1][k]))
	}
	return ref, cur
}

func (f *feature) result(o Options) (Result, error) {
	r := Result{
		Feature: f.name, Method: f.method, Type: "numeric", Exact: true,
		ReferenceRows: f.rows[0], CurrentRows: f.rows[1],
		MissingReference: f.missing[0], MissingCurrent: f.missing[1],
		Threshold: f.method.DefaultThreshold(),
	}
	if o.Threshold > 0 {
		r.Threshold = o.Threshold
	}
	if f.categorical {
		r.Type = "categorical"
	}
	var p float64
	switch f.method {
	case MethodKS, MethodWasserstein:
		a, b := f.vals[0].sorted(), f.vals[1].sorted()
		r.Exact = f.vals[0].exact() && f.vals[1].exact()
		if !r.Exact {
			r.Note = fmt.Sprintf("from quantile sketches: rank error at most %.2g of the reference and %.2g of the current rows", f.vals[0].rankError(), f.vals[1].rankError())
		}
		if f.method == MethodKS {
			r.Score = ksStat(a, b)
			n, m := f.vals[0].n, f.vals[1].n
			if r.Exact && n*m <= 1_000_000 {
				p = ksExactP(int(n), int(m), int64(math.Round(r.Score*float64(n)*float64(m))))
			} else {
				// From sketches, D may be over by the two rank errors:
				// the p-value is taken at the smallest D they allow, so
				// that sketching never makes drift.
				d := max(0, r.Score-f.vals[0].rankError()-f.vals[1].rankError())
				en := float64(n) * float64(m) / float64(n+m)
				p = kolmogorovQ(math.Sqrt(en) * d)
			}
			break
		}
		w := wasserstein1(a, b)
		if sd := f.mom.std(); sd > 0 {
			r.Score = w / sd
		} else {
			r.Score = w
			r.Note = "the reference has zero variance: the score is the unnormalised Wasserstein distance and any distance above 0 is drift"
		}
	default:
		rc, cc := f.counts()
		p = scoreBinned(&r, f.method, rc, cc)
	}
	if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || math.IsNaN(p) {
		return r, fmt.Errorf("%s gave a non-finite score", f.method)
	}
	switch {
	case f.method.HasPValue():
		r.PValue = &p
		r.Drift = p < r.Threshold
	case f.method == MethodWasserstein && f.mom.std() == 0:
		r.Drift = r.Score > 0
	default:
		r.Drift = r.Score >= r.Threshold
	}
	return r, nil
}
