package drift

import (
	"fmt"
	"math"
)

// CompareCounts scores a current distribution against a reference one over
// the same bins given as counts — a histogram's per-bucket increases over two
// windows, as a model server exports a feature. Only the binned methods
// apply (psi, the default, kl, js, hellinger, linf, chisquare): ks and
// wasserstein need the values. threshold 0 is the method's default.
func CompareCounts(feature string, ref, cur []float64, m Method, threshold float64) (Result, error) {
	if m == "" {
		m = MethodPSI
	}
	if m.NeedsValues() {
		return Result{}, fmt.Errorf("%w: %s needs the values, not histogram buckets: use psi, kl, js, hellinger, linf or chisquare", ErrInput, m)
	}
	if len(ref) == 0 || len(ref) != len(cur) {
		return Result{}, fmt.Errorf("%w: %s: the baseline has %d bins and the current %d", ErrInput, feature, len(ref), len(cur))
	}
	var rt, ct float64
	for i := range ref {
		if ref[i] < 0 || cur[i] < 0 || math.IsNaN(ref[i]) || math.IsNaN(cur[i]) || math.IsInf(ref[i], 0) || math.IsInf(cur[i], 0) {
			return Result{}, fmt.Errorf("%w: %s: bin %d holds a count that is negative or not a number", ErrInput, feature, i)
		}
		rt += ref[i]
		ct += cur[i]
	}
	switch {
	case rt == 0:
		return Result{}, fmt.Errorf("%w: %s: no observation in the baseline window", ErrInput, feature)
	case ct == 0:
		return Result{}, fmt.Errorf("%w: %s: no observation in the current window", ErrInput, feature)
	}
	if threshold <= 0 {
		threshold = m.DefaultThreshold()
	}
	r := Result{Feature: feature, Method: m, Type: "histogram", Threshold: threshold,
		ReferenceRows: int64(math.Round(rt)), CurrentRows: int64(math.Round(ct)), Exact: true}
	p := scoreBinned(&r, m, ref, cur)
	if m.HasPValue() {
		r.PValue, r.Drift = &p, p < threshold
	} else {
		r.Drift = r.Score >= threshold
	}
	return r, nil
}

// scoreBinned scores counts per bin with a binned method into r (Score,
// and Level for PSI) and returns the p-value where the method has one.
func scoreBinned(r *Result, m Method, ref, cur []float64) (p float64) {
	rs, cs := shareOf(ref), shareOf(cur)
	switch m {
	case MethodPSI:
		r.Score = PSI(rs, cs)
		r.Level = "none"
		switch {
		case r.Score >= PSISignificant:
			r.Level = "significant"
		case r.Score >= PSIModerate:
			r.Level = "moderate"
		}
	case MethodKL:
		r.Score = KL(rs, cs)
	case MethodJS:
		r.Score = JS(rs, cs)
	case MethodHellinger:
		r.Score = Hellinger(rs, cs)
	case MethodLInf:
		r.Score = LInf(rs, cs)
	case MethodChiSquare:
		r.Score, p = ChiSquare(ref, cur)
	}
	return p
}
