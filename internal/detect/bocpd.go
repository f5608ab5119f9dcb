package detect

import (
	"math"
	"slices"
)

const (
	// DefaultHazardLambda is the expected segment length, in points, that
	// ChangeProb assumes when given none usable.
	DefaultHazardLambda = 250
	// MaxRunLength caps the run lengths ChangeProb tracks: runs at least
	// this long share one bucket, so the cost is O(n·MaxRunLength).
	MaxRunLength = 256
	// changeLag is how many later valid points ChangeProb looks at before
	// it judges whether a segment began at a point.
	changeLag = 5
	// diffToSigma turns the median absolute successive difference into the
	// standard deviation of Gaussian noise: median|N(0, 2σ²)| = 0.6745·√2·σ.
	diffToSigma = 0.6745 * math.Sqrt2
)

// The normal-gamma prior on a segment's mean and precision, for standardised
// values: mean 0 worth one observation, precision with shape 1 and rate 1.
const (
	priorMu, priorKappa, priorAlpha, priorBeta = 0, 1, 1, 1
)

// ChangeProb is Bayesian online change-point detection (Adams & MacKay 2007):
// Gaussian observations with unknown mean and variance under a normal-gamma
// prior, a constant hazard 1/hazardLambda, and run lengths truncated at
// MaxRunLength for O(n·MaxRunLength) cost. It returns, per index, the
// posterior probability that a new segment began there, as judged after up
// to 5 later valid values (fewer at the end of the series).
//
// ChangeProb standardises xs robustly itself, so one prior fits any unit: it
// subtracts the median and divides by the noise scale, estimated from the
// median absolute difference of successive valid values (which a level shift
// does not inflate) and bounded below by DefaultFloor. The predictive variance
// of a segment is kept at or above one such scale, so a move smaller than the
// floor is no change however quiet the series.
//
// NaN and ±Inf values are skipped and get probability 0, and so does the first
// valid value (a change there cannot be seen). The result has the length of
// xs and lies in [0, 1]. A hazardLambda that is not above 1 (or NaN or +Inf)
// means DefaultHazardLambda.
func ChangeProb(xs []float64, hazardLambda float64) []float64 {
	out := make([]float64, len(xs))
	if !(hazardLambda > 1) || math.IsInf(hazardLambda, 1) {
		hazardLambda = DefaultHazardLambda
	}
	pos := make([]int, 0, len(xs))
	for i, x := range xs {
		if isFinite(x) {
			pos = append(pos, i)
		}
	}
	if len(pos) < 2 {
		return out
	}
	z := standardise(xs, pos)
	b := newBOCPD(min(len(pos), MaxRunLength), len(pos), hazardLambda)
	for s, x := range z {
		b.observe(x)
		// A segment that began at s-changeLag now has run length changeLag.
		if s > changeLag {
			out[pos[s-changeLag]] = b.prob(changeLag)
		}
	}
	// The last points have fewer than changeLag later values: read them now.
	for s := max(1, len(z)-changeLag); s < len(z); s++ {
		out[pos[s]] = b.prob(len(z) - 1 - s)
	}
	return out
}

// standardise returns the valid values of xs at pos, centred on their median
// and divided by the floored noise scale, clipped to ±zClip.
func standardise(xs []float64, pos []int) []float64 {
	z := make([]float64, len(pos))
	d := make([]float64, 0, len(pos)-1)
	for j, i := range pos {
		z[j] = xs[i]
		if j > 0 {
			d = append(d, math.Abs(xs[i]-xs[pos[j-1]]))
		}
	}
	slices.Sort(d)
	noise := quantileSorted(d, 0.5) / diffToSigma
	med := Median(z)
	b := Baseline{Median: med, Scale: DefaultFloor.scale(noise, med)}
	for j, x := range z {
		z[j] = clipZ(b.Z(x))
	}
	return z
}

// bocpd is the run-length posterior of ChangeProb. Bucket r holds the run
// whose segment began r values ago (the last value included), as a
// probability, with its normal-gamma posterior (the shape α is 1 + cnt/2
// after cnt values); the last bucket also holds every longer run.
type bocpd struct {
	n       int // buckets in use
	h       float64
	g       []float64 // g[cnt] = lgamma(α+½) - lgamma(α) for α = 1 + cnt/2
	p, mu   []float64
	kappa   []float64
	beta    []float64
	cnt     []int
	lpred   []float64 // scratch: log predictive density per bucket
	np, nmu []float64 // scratch for the next step
	nkappa  []float64
	nbeta   []float64
	ncnt    []int
}

func newBOCPD(r, n int, lambda float64) *bocpd {
	buf := make([]float64, 9*r+n+1)
	cnt := make([]int, 2*r)
	b := &bocpd{h: 1 / lambda, g: buf[9*r:], cnt: cnt[:r:r], ncnt: cnt[r:]}
	for i, p := range []*[]float64{&b.p, &b.mu, &b.kappa, &b.beta, &b.lpred,
		&b.np, &b.nmu, &b.nkappa, &b.nbeta} {
		*p = buf[i*r : (i+1)*r : (i+1)*r]
	}
	// g(α+½) = log α - g(α), from Γ(α+1) = αΓ(α).
	la, _ := math.Lgamma(priorAlpha + 0.5)
	lb, _ := math.Lgamma(priorAlpha)
	b.g[0] = la - lb
	for c := 1; c < len(b.g); c++ {
		b.g[c] = math.Log(priorAlpha+float64(c-1)/2) - b.g[c-1]
	}
	return b
}

// logPred is the log Student-t predictive density of x under a normal-gamma
// posterior of shape α = 1 + cnt/2, with the predictive variance β(κ+1)/(ακ)
// kept at or above 1.
func (b *bocpd) logPred(x, mu, kappa, beta float64, cnt int) float64 {
	// With w = ν·s² = 2β(κ+1)/κ the density is
	// Γ(α+½)/Γ(α) · (πw)^-½ · (1+d²/w)^-(α+½).
	alpha := priorAlpha + float64(cnt)/2
	w := max(2*beta*(kappa+1)/kappa, 2*alpha)
	d := x - mu
	return b.g[cnt] - 0.5*math.Log(math.Pi*w) - (alpha+0.5)*math.Log1p(d*d/w)
}

// observe updates the run-length posterior with the next value.
func (b *bocpd) observe(x float64) {
	r := len(b.p)
	if b.n == 0 {
		b.n = 1
		b.p[0] = 1
		b.mu[0], b.kappa[0], b.beta[0] = update(priorMu, priorKappa, priorBeta, x)
		b.cnt[0] = 1
		return
	}
	// Densities relative to the largest, so that an outlier cannot
	// underflow them all.
	lprior := b.logPred(x, priorMu, priorKappa, priorBeta, 0)
	top := lprior
	for k := range b.n {
		b.lpred[k] = b.logPred(x, b.mu[k], b.kappa[k], b.beta[k], b.cnt[k])
		top = max(top, b.lpred[k])
	}
	next := min(b.n+1, r)
	b.np[0] = b.h * math.Exp(lprior-top)
	b.nmu[0], b.nkappa[0], b.nbeta[0] = update(priorMu, priorKappa, priorBeta, x)
	b.ncnt[0] = 1
	total := b.np[0]
	for k := range b.n {
		q := b.p[k] * (1 - b.h) * math.Exp(b.lpred[k]-top)
		d := min(k+1, r-1)
		// The last bucket keeps the statistics of its most probable member.
		if d < r-1 || k == r-2 || q > b.np[d] {
			b.nmu[d], b.nkappa[d], b.nbeta[d] = update(b.mu[k], b.kappa[k], b.beta[k], x)
			b.ncnt[d] = b.cnt[k] + 1
		}
		if k == r-1 {
			b.np[d] += q
		} else {
			b.np[d] = q
		}
		total += q
	}
	b.n = next
	if !(total > 0) || math.IsInf(total, 0) {
		// Nothing explains x: start afresh with a certain change.
		clear(b.np[1:next])
		b.np[0], total = 1, 1
	}
	for k := range next {
		b.np[k] /= total
	}
	b.p, b.np = b.np, b.p
	b.mu, b.nmu = b.nmu, b.mu
	b.kappa, b.nkappa = b.nkappa, b.kappa
	b.beta, b.nbeta = b.nbeta, b.beta
	b.cnt, b.ncnt = b.ncnt, b.cnt
}

// prob is the posterior probability of run length k, in [0, 1].
func (b *bocpd) prob(k int) float64 {
	if k >= b.n {
		return 0
	}
	return min(1, max(0, b.p[k]))
}

// update returns the normal-gamma posterior mean, κ and β after one more
// value x; the shape α grows by ½.
func update(mu, kappa, beta, x float64) (float64, float64, float64) {
	d := x - mu
	return (kappa*mu + x) / (kappa + 1), kappa + 1, beta + kappa*d*d/(2*(kappa+1))
}
