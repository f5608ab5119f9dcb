package drift

import (
	"context"
	"fmt"
	"math"
	"slices"
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
	cats        [2]map[string]*int64
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
	var values []*sample
	for _, f := range feats {
		if !f.categorical && f.method.NeedsValues() {
			values = append(values, &f.vals[1])
		}
	}
	sortSamples(values)
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
			f.cats = [2]map[string]*int64{{}, {}}
		}
		feats = append(feats, f)
	}
	return feats, nil
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
	count := func(side int, k string) float64 {
		if c := f.cats[side][k]; c != nil {
			return float64(*c)
		}
		return 0
	}
	for _, k := range keys {
		ref = append(ref, count(0, k))
		cur = append(cur, count(1, k))
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
