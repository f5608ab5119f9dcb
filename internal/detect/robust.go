package detect

import (
	"math"
	"slices"
)

// iqrToSigma converts an interquartile range to the standard deviation of a
// normal distribution with that range.
const iqrToSigma = 1.349

// Floor bounds a robust scale from below: scale = max(IQR/1.349, Rel*|median|, Abs).
// Rel keeps a tiny relative move of a flat series from looking large; Abs
// keeps the scale of a series that sits at zero above zero.
type Floor struct{ Rel, Abs float64 }

// DefaultFloor is Rel 0.01, Abs 1e-9: a move must be a sizeable multiple of
// 1% of the level before it counts when the series itself does not vary.
var DefaultFloor = Floor{Rel: 0.01, Abs: 1e-9}

// scale applies the floor to a spread-based scale estimate and a median.
// Candidates that are NaN are ignored; the result is 0 only when every
// candidate is 0 or NaN.
func (f Floor) scale(spread, median float64) float64 {
	s := 0.0
	for _, c := range [...]float64{spread, f.Rel * math.Abs(median), f.Abs} {
		if c > s {
			s = c
		}
	}
	return s
}

// Median returns the median of the values of xs that are not NaN, or NaN when
// there is none. ±Inf counts as a value.
func Median(xs []float64) float64 {
	return Quantile(xs, 0.5)
}

// Quantile returns the q-quantile of the values of xs that are not NaN, by
// linear interpolation between order statistics (R's type 7, the default of
// R and NumPy). It returns NaN when there is no value or when q is outside
// [0, 1].
func Quantile(xs []float64, q float64) float64 {
	if !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	return quantileSorted(sortedValid(xs), q)
}

// Valid returns the number of values of xs that are not NaN.
func Valid(xs []float64) int {
	n := 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}

// Baseline is a robust location and scale: the median and the floored
// interquartile scale of the values it was built from.
type Baseline struct {
	// Median is the median of the values, NaN when there was none.
	Median float64
	// Scale is max(IQR/1.349, Floor.Rel*|Median|, Floor.Abs).
	Scale float64
	// N is the number of values the baseline was built from.
	N int
}

// NewBaseline builds the baseline of the values of xs that are not NaN, with
// the scale bounded below by f. With no value it returns N 0 and a NaN
// Median. A Floor of zeros on a constant series gives Scale 0.
func NewBaseline(xs []float64, f Floor) Baseline {
	return baselineSorted(sortedValid(xs), f)
}

// madToSigma converts a median absolute deviation to the standard
// deviation of a normal distribution with that deviation.
const madToSigma = 1.4826

// NewBaselineMAD is NewBaseline with the scale from the median absolute
// deviation instead of the interquartile range: its breakdown point is
// 50% where the IQR's is 25%, for sets where a quarter of the values or
// more may be the anomaly (a node's GPUs among a four-node job's).
func NewBaselineMAD(xs []float64, f Floor) Baseline {
	s := sortedValid(xs)
	if len(s) == 0 {
		return Baseline{Median: math.NaN(), Scale: f.scale(math.NaN(), math.NaN())}
	}
	med := quantileSorted(s, 0.5)
	return Baseline{Median: med, Scale: f.scale(madToSigma*medianDeviation(s, med), med), N: len(s)}
}

// NewBaselineMADInPlace is NewBaselineMAD on a scratch slice it sorts in
// place: for hot loops that build the values afresh each step. xs must
// hold no NaN.
func NewBaselineMADInPlace(xs []float64, f Floor) Baseline {
	if len(xs) == 0 {
		return Baseline{Median: math.NaN(), Scale: f.scale(math.NaN(), math.NaN()), N: 0}
	}
	slices.Sort(xs)
	med := quantileSorted(xs, 0.5)
	return Baseline{Median: med, Scale: f.scale(madToSigma*medianDeviation(xs, med), med), N: len(xs)}
}

// MedianInPlace is Median on a scratch slice it reorders (a selection, no
// sort); xs must hold no NaN.
func MedianInPlace(xs []float64) float64 { return medianInPlace(xs) }

// medianDeviation returns the median of |x - med| over s, sorted
// ascending: the deviations below med and above it are two sorted runs,
// merged up to the middle (linear, no second sort).
func medianDeviation(s []float64, med float64) float64 {
	n := len(s)
	// lo walks down from the last value ≤ med, hi up from the first > med.
	hi, _ := slices.BinarySearchFunc(s, med, func(x, t float64) int {
		if x <= t {
			return -1
		}
		return 1
	})
	lo := hi - 1
	next := func() float64 {
		switch {
		case lo < 0:
			hi++
			return s[hi-1] - med
		case hi >= n:
			lo--
			return med - s[lo+1]
		case med-s[lo] <= s[hi]-med:
			lo--
			return med - s[lo+1]
		default:
			hi++
			return s[hi-1] - med
		}
	}
	var a float64
	for range (n - 1) / 2 {
		next()
	}
	a = next()
	if n%2 == 1 {
		return a
	}
	return (a + next()) / 2
}

// baselineSorted builds a Baseline from values already sorted ascending.
func baselineSorted(s []float64, f Floor) Baseline {
	if len(s) == 0 {
		return Baseline{Median: math.NaN(), Scale: f.scale(math.NaN(), math.NaN())}
	}
	med := quantileSorted(s, 0.5)
	iqr := quantileSorted(s, 0.75) - quantileSorted(s, 0.25)
	return Baseline{Median: med, Scale: f.scale(iqr/iqrToSigma, med), N: len(s)}
}

// Z returns the robust z-score (x-Median)/Scale. It is NaN when x or Median
// is NaN, 0 when x equals Median, and ±Inf when the Scale is 0 and x differs.
func (b Baseline) Z(x float64) float64 {
	if math.IsNaN(x) || math.IsNaN(b.Median) {
		return math.NaN()
	}
	d := x - b.Median
	if d == 0 {
		return 0
	}
	return d / b.Scale
}

// sortedValid returns the values of xs that are not NaN, sorted ascending,
// in a new slice.
func sortedValid(xs []float64) []float64 {
	s := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	slices.Sort(s)
	return s
}

// quantileSorted is Quantile on values sorted ascending with no NaN.
func quantileSorted(s []float64, q float64) float64 {
	return quantileAt(len(s), q, func(i int) float64 { return s[i] })
}

// quantileAt is the type-7 quantile of n sorted values read through at.
func quantileAt(n int, q float64, at func(int) float64) float64 {
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int(h)
	if lo >= n-1 {
		return at(n - 1)
	}
	return lerp(at(lo), at(lo+1), h-float64(lo))
}

// lerp interpolates between a and b. The convex form cannot overflow for
// finite a and b, unlike a+t*(b-a).
func lerp(a, b, t float64) float64 {
	if t == 0 || a == b {
		return a
	}
	return (1-t)*a + t*b
}

// isFinite reports whether x is neither NaN nor ±Inf.
func isFinite(x float64) bool {
	return !math.IsNaN(x) && !math.IsInf(x, 0)
}
