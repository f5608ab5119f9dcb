package drift

import (
	"cmp"
	"math"
	"slices"
)

// SketchK is the number of values each level of the quantile sketch holds.
const SketchK = 1 << 13

// sample holds one feature's numeric values from one file: exactly up to
// limit values, then in a compactor sketch of bounded size.
type sample struct {
	limit int
	vals  []float64
	sk    *sketch
	n     int64
}

func (s *sample) add(x float64) {
	s.n++
	if s.sk != nil {
		s.sk.add(x)
		return
	}
	if len(s.vals) < s.limit {
		s.vals = append(s.vals, x)
		return
	}
	s.sk = &sketch{}
	for _, v := range s.vals {
		s.sk.add(v)
	}
	s.vals = nil
	s.sk.add(x)
}

// exact reports whether every value is held.
func (s *sample) exact() bool { return s.sk == nil }

// stored is how many values the sample holds, whatever it has seen.
func (s *sample) stored() int {
	if s.sk == nil {
		return len(s.vals)
	}
	n := 0
	for _, l := range s.sk.levels {
		n += len(l)
	}
	return n
}

// dist is a sorted sample: values in order with the number of rows each
// stands for (w nil: one each).
type dist struct {
	v, w []float64
}

func (d dist) weight(i int) float64 {
	if d.w == nil {
		return 1
	}
	return d.w[i]
}

func (d dist) total() float64 {
	if d.w == nil {
		return float64(len(d.v))
	}
	var s float64
	for _, x := range d.w {
		s += x
	}
	return s
}

// sorted returns the values in order with their weights. An exact sample is
// sorted in place.
func (s *sample) sorted() dist {
	if s.sk == nil {
		slices.Sort(s.vals)
		return dist{v: s.vals}
	}
	type vw struct{ v, w float64 }
	var all []vw
	for h, l := range s.sk.levels {
		w := math.Ldexp(1, h)
		for _, v := range l {
			all = append(all, vw{v, w})
		}
	}
	slices.SortFunc(all, func(a, b vw) int { return cmp.Compare(a.v, b.v) })
	d := dist{v: make([]float64, len(all)), w: make([]float64, len(all))}
	for i, x := range all {
		d.v[i], d.w[i] = x.v, x.w
	}
	return d
}

// rankError is the sketch's bound on the error of any rank, as a share of
// the rows: 0 while exact.
func (s *sample) rankError() float64 {
	if s.sk == nil || s.n == 0 {
		return 0
	}
	return float64(len(s.sk.levels)) / SketchK
}

// sketch is a deterministic compactor sketch: level h holds values of
// weight 2^h; a full level is sorted and every other value, starting at an
// alternating offset, moves up a level. Each compaction moves any rank by at
// most 2^h, and level h compacts at most n/(SketchK·2^h) times, so every
// level adds at most n/SketchK to a rank's error.
type sketch struct {
	levels [][]float64
	odd    []bool
}

func (s *sketch) add(x float64) {
	if len(s.levels) == 0 {
		s.levels = append(s.levels, make([]float64, 0, SketchK))
		s.odd = append(s.odd, false)
	}
	s.levels[0] = append(s.levels[0], x)
	for h := 0; h < len(s.levels) && len(s.levels[h]) >= SketchK; h++ {
		if h+1 == len(s.levels) {
			s.levels = append(s.levels, make([]float64, 0, SketchK))
			s.odd = append(s.odd, false)
		}
		l := s.levels[h]
		slices.Sort(l)
		off := 0
		if s.odd[h] {
			off = 1
		}
		s.odd[h] = !s.odd[h]
		for i := off; i < len(l); i += 2 {
			s.levels[h+1] = append(s.levels[h+1], l[i])
		}
		s.levels[h] = l[:0]
	}
}

// quantiles returns the values at the given cumulative shares of a sorted
// sample (the lower value at a share, as numpy's "inverted_cdf").
func quantiles(d dist, qs []float64) []float64 {
	total := d.total()
	out := make([]float64, len(qs))
	i := 0
	var cum float64
	for k, q := range qs {
		for i < len(d.v) && cum+d.weight(i) < q*total {
			cum += d.weight(i)
			i++
		}
		out[k] = d.v[min(i, len(d.v)-1)]
	}
	return out
}

// merge walks the distinct values of two sorted samples in order, calling
// fn with each value and both distribution functions just after it.
func merge(a, b dist, fn func(x, fa, fb float64)) {
	na, nb := a.total(), b.total()
	var ca, cb float64
	i, j := 0, 0
	for i < len(a.v) || j < len(b.v) {
		x := math.Inf(1)
		if i < len(a.v) {
			x = a.v[i]
		}
		if j < len(b.v) && b.v[j] < x {
			x = b.v[j]
		}
		for i < len(a.v) && a.v[i] == x {
			ca += a.weight(i)
			i++
		}
		for j < len(b.v) && b.v[j] == x {
			cb += b.weight(j)
			j++
		}
		fn(x, ca/na, cb/nb)
	}
}

// ksStat is the two-sample Kolmogorov–Smirnov statistic: the largest
// distance between the two empirical distribution functions.
func ksStat(a, b dist) float64 {
	var d float64
	merge(a, b, func(_, fa, fb float64) { d = max(d, math.Abs(fa-fb)) })
	return d
}

// wasserstein1 is the first Wasserstein distance of two sorted samples: the
// area between their distribution functions.
func wasserstein1(a, b dist) float64 {
	var area, prev, gap float64
	first := true
	merge(a, b, func(x, fa, fb float64) {
		if !first {
			area += gap * (x - prev)
		}
		first = false
		prev, gap = x, math.Abs(fa-fb)
	})
	return area
}

// moments accumulates count, mean and central moments (Welford, Terriberry)
// for the standard deviation and Doane's skewness.
type moments struct {
	n                  float64
	mean, m2, m3       float64
	minimum, maximum   float64
	distinct           []float64
	distinctOverflowed bool
}

func (m *moments) add(x float64) {
	if m.n == 0 {
		m.minimum, m.maximum = x, x
	}
	m.minimum, m.maximum = min(m.minimum, x), max(m.maximum, x)
	n1 := m.n
	m.n++
	delta := x - m.mean
	dn := delta / m.n
	term1 := delta * dn * n1
	m.mean += dn
	m.m3 += term1*dn*(m.n-2) - 3*dn*m.m2
	m.m2 += term1
	if !m.distinctOverflowed && !slices.Contains(m.distinct, x) {
		if len(m.distinct) == maxDiscrete {
			m.distinctOverflowed = true
			m.distinct = nil
		} else {
			m.distinct = append(m.distinct, x)
		}
	}
}

// std is the population standard deviation (numpy's default, which
// Evidently divides by).
func (m *moments) std() float64 {
	if m.n == 0 {
		return 0
	}
	return math.Sqrt(max(m.m2/m.n, 0))
}

// skew is the sample skewness g1.
func (m *moments) skew() float64 {
	if m.m2 == 0 {
		return 0
	}
	return math.Sqrt(m.n) * m.m3 / math.Pow(m.m2, 1.5)
}
