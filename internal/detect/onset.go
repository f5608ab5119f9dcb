package detect

import (
	"math"
	"slices"
)

const (
	// defaultThreshold is OnsetOptions.Threshold's default.
	defaultThreshold = 4
	// defaultMinRun is OnsetOptions.MinRun's default.
	defaultMinRun = 3
	// minReference is the fewest valid points a default reference holds.
	minReference = 5
	// cusumDrift is the CUSUM allowance k, in reference scales.
	cusumDrift = 0.5
	// zClip bounds standardised values so that sums never overflow.
	zClip = 1e6
)

// Shift is a persistent change of level.
type Shift struct {
	// Index is the first index (into the series given) of the new level.
	Index int
	// Before is the median before Index: the reference level.
	Before float64
	// After is the median from Index on.
	After float64
	// Z is (After-Before)/scale of the reference, signed. It is ±Inf only
	// when the two levels differ by more than about 1e300.
	Z float64
}

// OnsetOptions tune Onset and CommonOnset. The zero value means the defaults.
type OnsetOptions struct {
	// Floor bounds the reference scale from below. The zero value means
	// DefaultFloor; an Abs that is not positive is raised to DefaultFloor.Abs
	// so that no scale is ever 0.
	Floor Floor
	// Threshold is the |z| a shift must reach, in reference scales; default 4.
	Threshold float64
	// MinRun is the persistence: the new level must hold for at least MinRun
	// valid points; default 3.
	MinRun int
	// Reference, when > 0, is how many leading valid points form the
	// reference. By default the reference is every valid point before the
	// candidate onset, at least 5.
	Reference int
}

// withDefaults returns o with every unset or unusable field at its default.
func (o OnsetOptions) withDefaults() OnsetOptions {
	if o.Floor == (Floor{}) {
		o.Floor = DefaultFloor
	}
	if !(o.Floor.Abs > 0) {
		o.Floor.Abs = DefaultFloor.Abs
	}
	if !(o.Floor.Rel >= 0) {
		o.Floor.Rel = 0
	}
	if !(o.Threshold > 0) {
		o.Threshold = defaultThreshold
	}
	if o.MinRun <= 0 {
		o.MinRun = defaultMinRun
	}
	if o.Reference < 0 {
		o.Reference = 0
	}
	return o
}

// Onset finds the earliest persistent shift in xs.
//
// It runs a two-sided CUSUM (allowance 0.5, decision interval Threshold) on
// the series standardised against the reference. On an alarm it estimates
// the change point as the last time the alarming CUSUM statistic left zero,
// refines it to the split between there and the alarm that best separates
// the old level from the new one in L1 (so that a noise excursion just
// before a step does not pull the estimate early), and confirms it: each of
// the first MinRun valid points from Index on deviates by at least
// Threshold/2 reference scales, and the median of all points from Index on
// by at least Threshold, in the same direction. An alarm that is not
// confirmed (a blip, a transient that went back, noise) is dropped and the
// search goes on.
//
// With the default reference, the reference grows by every point once both
// CUSUM statistics are back at zero, so it follows the series while nothing
// happens; a candidate is checked against all valid points before it. A
// fixed Reference uses its leading points only. Either way the reference
// scale is also bounded below by the noise of the whole series, estimated
// from the median absolute difference of successive points (which a level
// shift does not inflate), because the IQR of a few points is unreliable.
//
// A step is dated to within a point or so. A ramp is dated once it has
// risen by about Threshold/2 noise scales: a drift of 0.25σ per point about
// ten points after it starts.
//
// NaN and ±Inf count as no sample and are skipped: Reference and MinRun count
// valid points, and Index is an index into xs. It returns ok=false when there
// is no persistent shift: on a single-point blip, on noise, and on a series
// with fewer than Reference+MinRun valid points (5+MinRun by default). It
// costs O(n²) in the worst case, from keeping the reference sorted: tens of
// microseconds for a few hundred points.
func Onset(xs []float64, o OnsetOptions) (Shift, bool) {
	o = o.withDefaults()
	idx := make([]int, 0, len(xs))
	for i, x := range xs {
		if isFinite(x) {
			idx = append(idx, i)
		}
	}
	ref := o.Reference
	if ref == 0 {
		ref = minReference
	}
	if len(idx) < ref+o.MinRun {
		return Shift{}, false
	}
	var d detector
	d.init(xs, idx, ref, o)
	for t := ref; t < len(d.v); t++ {
		if s, ok := d.step(t); ok {
			s.Index = idx[s.Index]
			return s, true
		}
	}
	return Shift{}, false
}

// detector is the state of one Onset run over the valid values v.
type detector struct {
	o       OnsetOptions // with defaults, and Floor.Abs raised to the noise
	v       []float64
	sorted  []float64 // the running reference, ascending, in sorted[:n]
	n       int       // kept apart from sorted to spare write barriers
	refBuf  []float64 // the reference of a candidate
	scratch []float64
	base    Baseline // of sorted
	sp, sn  float64  // the upper and lower CUSUM statistics
	// startP and startN are where sp and sn last left zero; points before
	// added are in sorted.
	startP, startN, added int
}

// init copies the valid values of xs (at idx) and sets up the reference
// from the first ref of them.
func (d *detector) init(xs []float64, idx []int, ref int, o OnsetOptions) {
	m := len(idx)
	// One allocation for the values, the running reference, the reference
	// of a candidate and scratch.
	buf := make([]float64, 4*m)
	*d = detector{
		o: o, v: buf[:m], sorted: buf[m : 2*m : 2*m],
		refBuf: buf[2*m : 2*m : 3*m], scratch: buf[3*m:],
		startP: ref, startN: ref, added: ref,
	}
	for j, i := range idx {
		d.v[j] = xs[i]
	}
	diffs := d.scratch[:m-1]
	for j := range diffs {
		diffs[j] = math.Abs(d.v[j+1] - d.v[j])
	}
	d.o.Floor.Abs = max(o.Floor.Abs, medianInPlace(diffs)/diffToSigma)
	d.n = copy(d.sorted[:ref], d.v[:ref])
	slices.Sort(d.sorted[:ref])
	d.base = baselineSorted(d.sorted[:ref], d.o.Floor)
}

// step feeds the CUSUM the valid value at t and returns a confirmed shift
// (with Index into v) when t raises an alarm that holds.
func (d *detector) step(t int) (Shift, bool) {
	z := clipZ(d.base.Z(d.v[t]))
	d.sp = max(0, d.sp+z-cusumDrift)
	d.sn = max(0, d.sn-z-cusumDrift)
	if d.sp == 0 {
		d.startP = t + 1
	}
	if d.sn == 0 {
		d.startN = t + 1
	}
	if h := d.o.Threshold; d.sp > h || d.sn > h {
		c, up := d.startP, true
		if d.sn > h && (d.sp <= h || d.startN < d.startP) {
			c, up = d.startN, false
		}
		c = refine(d.v, c, t, d.base, up, d.o.MinRun)
		ref := d.sorted[:d.n]
		if d.o.Reference == 0 && d.added < c {
			ref = append(d.refBuf[:0], ref...)
			for _, x := range d.v[d.added:c] {
				ref = insertSorted(ref, x)
			}
		}
		if s, ok := confirm(d.v, c, ref, d.o, d.scratch); ok {
			return s, true
		}
		// A blip, a transient or noise: start again from here.
		d.sp, d.sn = 0, 0
		d.startP, d.startN = t+1, t+1
	}
	if d.o.Reference == 0 && d.sp == 0 && d.sn == 0 {
		for ; d.added <= t; d.added++ {
			insertSorted(d.sorted[:d.n], d.v[d.added])
			d.n++
		}
		d.base = baselineSorted(d.sorted[:d.n], d.o.Floor)
	}
	return Shift{}, false
}

// refine moves the change point c of an alarm raised at t to the split in
// [c, t] that best fits "old level before, new level from here" in L1: the
// old level is the reference median (z 0), the new one the median z from the
// alarm on, over MinRun points. Ties go to the earliest split.
func refine(v []float64, c, t int, base Baseline, up bool, minRun int) int {
	if c >= t {
		return c
	}
	end := min(len(v), t+minRun)
	var zs [64]float64
	after := zs[:0]
	for i := t; i < end; i++ {
		after = append(after, clipZ(base.Z(v[i])))
	}
	slices.Sort(after)
	za := quantileSorted(after, 0.5)
	if up != (za > 0) {
		return c
	}
	// cost(j) = sum_{c<=i<j} |z_i| + sum_{j<=i<=t} |z_i - za|; start at j=c.
	cost := 0.0
	for i := c; i <= t; i++ {
		cost += math.Abs(clipZ(base.Z(v[i])) - za)
	}
	best, bestCost := c, cost
	for j := c; j < t; j++ {
		z := clipZ(base.Z(v[j]))
		cost += math.Abs(z) - math.Abs(z-za)
		if cost < bestCost {
			best, bestCost = j+1, cost
		}
	}
	return best
}

// confirm checks a candidate onset at c (an index into the valid values v)
// against the sorted reference values ref. It returns the shift with Index c
// when each of the first MinRun points from c on deviates by at least half
// of Threshold reference scales and the median from c on by at least
// Threshold, in the same direction. scratch holds len(v) values.
func confirm(v []float64, c int, ref []float64, o OnsetOptions, scratch []float64) (Shift, bool) {
	after := v[c:]
	if len(ref) < minReference && o.Reference == 0 || len(after) < o.MinRun {
		return Shift{}, false
	}
	base := baselineSorted(ref, o.Floor)
	// The cheap test first: most alarms on noise fail it.
	half := math.Copysign(o.Threshold/2, base.Z(after[0]))
	for _, x := range after[:o.MinRun] {
		if !(base.Z(x)*half >= half*half) {
			return Shift{}, false
		}
	}
	med := medianInPlace(append(scratch[:0], after...))
	z := base.Z(med)
	if !(math.Abs(z) >= o.Threshold) || z*half < 0 {
		return Shift{}, false
	}
	return Shift{Index: c, Before: base.Median, After: med, Z: z}, true
}

// insertSorted inserts x, which is not NaN, into the ascending slice s,
// which has spare capacity.
func insertSorted(s []float64, x float64) []float64 {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s[mid] < x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	s = s[:len(s)+1]
	copy(s[lo+1:], s[lo:])
	s[lo] = x
	return s
}

// clipZ bounds a standardised value to ±zClip and maps NaN to 0.
func clipZ(z float64) float64 {
	switch {
	case z > zClip:
		return zClip
	case z < -zClip:
		return -zClip
	case z == z:
		return z
	}
	return 0
}

// Persistent reports whether flags hold true for at least minRun consecutive
// entries ending at the last one: "still going on now". A minRun below 1 is
// taken as 1, so an empty flags is never persistent.
func Persistent(flags []bool, minRun int) bool {
	minRun = max(minRun, 1)
	if len(flags) < minRun {
		return false
	}
	for _, f := range flags[len(flags)-minRun:] {
		if !f {
			return false
		}
	}
	return true
}

// medianInPlace returns the type-7 median of a, which holds no NaN, in O(n)
// time. It reorders a.
func medianInPlace(a []float64) float64 {
	n := len(a)
	if n == 0 {
		return math.NaN()
	}
	k := (n - 1) / 2
	x := nthElement(a, k)
	if n%2 == 1 {
		return x
	}
	return lerp(x, slices.Min(a[k+1:]), 0.5)
}

// nthElement reorders a, which holds no NaN, so that a[k] is the value it
// would have sorted, with no larger value before it and no smaller after it
// (Hoare's selection), and returns a[k].
func nthElement(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		p := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < p {
				i++
			}
			for a[j] > p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}
