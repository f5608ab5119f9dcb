package drift

import (
	"math"
)

// emptyShare is Evidently's share for an empty bin.
const emptyShare = 0.0001

// shareOf turns counts into shares; a zero total gives zeros.
func shareOf(counts []float64) []float64 {
	var total float64
	for _, c := range counts {
		total += c
	}
	out := make([]float64, len(counts))
	if total == 0 {
		return out
	}
	for i, c := range counts {
		out[i] = c / total
	}
	return out
}

// fillEmpty applies Evidently's empty-bin rule: a zero share becomes 0.0001,
// or the smallest non-zero share / 10⁶ when that share is below 0.0001.
func fillEmpty(p []float64) []float64 {
	minNZ := math.Inf(1)
	for _, v := range p {
		if v > 0 && v < minNZ {
			minNZ = v
		}
	}
	eps := emptyShare
	if minNZ < emptyShare {
		eps = minNZ / 1e6
	}
	out := make([]float64, len(p))
	for i, v := range p {
		if v == 0 {
			v = eps
		}
		out[i] = v
	}
	return out
}

// normalise scales p to sum to one, as scipy's entropy and jensenshannon do.
func normalise(p []float64) []float64 {
	var s float64
	for _, v := range p {
		s += v
	}
	out := make([]float64, len(p))
	for i, v := range p {
		out[i] = v / s
	}
	return out
}

// PSI is the population stability index of current shares c against
// reference shares r, after the empty-bin rule.
func PSI(r, c []float64) float64 {
	r, c = fillEmpty(r), fillEmpty(c)
	var s float64
	for i := range r {
		s += (c[i] - r[i]) * math.Log(c[i]/r[i])
	}
	return s
}

// KL is the Kullback–Leibler divergence KL(r‖c) in nats, after the empty-bin
// rule and normalisation.
func KL(r, c []float64) float64 {
	r, c = normalise(fillEmpty(r)), normalise(fillEmpty(c))
	var s float64
	for i := range r {
		s += r[i] * math.Log(r[i]/c[i])
	}
	return max(s, 0)
}

// JS is the Jensen–Shannon distance (the square root of the divergence, in
// nats), after the empty-bin rule and normalisation.
func JS(r, c []float64) float64 {
	r, c = normalise(fillEmpty(r)), normalise(fillEmpty(c))
	var s float64
	for i := range r {
		m := (r[i] + c[i]) / 2
		s += r[i]*math.Log(r[i]/m) + c[i]*math.Log(c[i]/m)
	}
	return math.Sqrt(max(s/2, 0))
}

// Hellinger is the Hellinger distance ‖√r−√c‖₂/√2 of two share vectors; it
// lies in [0, 1].
func Hellinger(r, c []float64) float64 {
	var s float64
	for i := range r {
		d := math.Sqrt(r[i]) - math.Sqrt(c[i])
		s += d * d
	}
	return math.Sqrt(s) / math.Sqrt2
}

// LInf is the largest absolute difference of two share vectors.
func LInf(r, c []float64) float64 {
	var m float64
	for i := range r {
		m = max(m, math.Abs(r[i]-c[i]))
	}
	return m
}

// ChiSquare is the goodness-of-fit test of observed current counts against
// the reference's shares scaled to the current total (empty reference bins
// get the empty-bin rule). It returns the statistic and its p-value with
// len(cur)−1 degrees of freedom.
func ChiSquare(refCounts, curCounts []float64) (stat, p float64) {
	exp := fillEmpty(shareOf(refCounts))
	var curTotal, expTotal float64
	for i := range curCounts {
		curTotal += curCounts[i]
		expTotal += exp[i]
	}
	for i, o := range curCounts {
		e := exp[i] / expTotal * curTotal
		stat += (o - e) * (o - e) / e
	}
	df := float64(len(curCounts) - 1)
	if df < 1 {
		return 0, 1
	}
	return stat, gammaQ(df/2, stat/2)
}

// gammaQ is the upper regularised incomplete gamma function Q(a, x), by its
// series for x < a+1 and its continued fraction otherwise (Numerical Recipes
// §6.2).
func gammaQ(a, x float64) float64 {
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	if x < a+1 {
		// Series for P(a, x).
		ap, sum := a, 1/a
		del := sum
		for range 1000 {
			ap++
			del *= x / ap
			sum += del
			if math.Abs(del) < math.Abs(sum)*1e-15 {
				break
			}
		}
		return max(0, 1-sum*math.Exp(-x+a*math.Log(x)-lg))
	}
	// Lentz's continued fraction for Q(a, x).
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return math.Min(1, math.Exp(-x+a*math.Log(x)-lg)*h)
}

// kolmogorovQ is the survival function of the Kolmogorov distribution,
// P(K > λ) (scipy's kstwobign.sf).
func kolmogorovQ(lambda float64) float64 {
	switch {
	case lambda <= 0:
		return 1
	case lambda < 1.18:
		// 1 − √(2π)/λ Σ exp(−(2k−1)²π²/(8λ²)), which converges fast here.
		var s float64
		for k := 1; k <= 20; k++ {
			t := float64(2*k - 1)
			s += math.Exp(-t * t * math.Pi * math.Pi / (8 * lambda * lambda))
		}
		return min(1, max(0, 1-math.Sqrt(2*math.Pi)/lambda*s))
	}
	var s float64
	sign := 1.0
	for k := 1; k <= 100; k++ {
		term := math.Exp(-2 * float64(k*k) * lambda * lambda)
		s += sign * term
		if term < 1e-17 {
			break
		}
		sign = -sign
	}
	return min(1, max(0, 2*s))
}

// ksExactP is P(D ≥ d) for two samples of sizes n and m with no ties in
// the null distribution, counting lattice paths that stay strictly inside
// |i/n − j/m| < d; dnm is d·n·m, an integer because d is observed.
func ksExactP(n, m int, dnm int64) float64 {
	if dnm <= 0 {
		return 1
	}
	inside := func(i, j int) bool {
		v := int64(i)*int64(m) - int64(j)*int64(n)
		return v < dnm && -v < dnm
	}
	// u[j] is the share of paths to (i, j) that stayed inside.
	u := make([]float64, m+1)
	u[0] = 1
	for j := 1; j <= m; j++ {
		if inside(0, j) {
			u[j] = u[j-1]
		}
	}
	for i := 1; i <= n; i++ {
		if inside(i, 0) {
			// u[0] keeps its value: one path.
		} else {
			u[0] = 0
		}
		for j := 1; j <= m; j++ {
			if !inside(i, j) {
				u[j] = 0
				continue
			}
			fi, fj := float64(i), float64(j)
			u[j] = (fi*u[j] + fj*u[j-1]) / (fi + fj)
		}
	}
	return min(1, max(0, 1-u[m]))
}
