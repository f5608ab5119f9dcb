package robust

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"
)

// rng is a seeded random stream. Every part of the cluster draws from its
// own stream (named after the part), so that a fault changes nothing of
// what the healthy twin of its run draws elsewhere.
type rng struct{ r *rand.Rand }

// newRNG returns the stream named name of a seed.
func newRNG(seed uint64, name string) *rng {
	h := fnv.New64a()
	h.Write([]byte(name))
	return &rng{rand.New(rand.NewPCG(seed, h.Sum64()))}
}

// float is uniform in [0, 1).
func (r *rng) float() float64 { return r.r.Float64() }

// uniform is uniform in [lo, hi).
func (r *rng) uniform(lo, hi float64) float64 { return lo + (hi-lo)*r.r.Float64() }

// between is uniform among the integers lo..hi, both included.
func (r *rng) between(lo, hi int) int { return lo + r.r.IntN(hi-lo+1) }

// intn is uniform in [0, n).
func (r *rng) intn(n int) int { return r.r.IntN(n) }

// chance is true with probability p.
func (r *rng) chance(p float64) bool { return r.r.Float64() < p }

// normal is Gaussian.
func (r *rng) normal(mean, sd float64) float64 { return mean + sd*r.r.NormFloat64() }

// lognormal has the given median and log-space spread.
func (r *rng) lognormal(median, sigma float64) float64 {
	return median * math.Exp(sigma*r.r.NormFloat64())
}

// duration is uniform in [lo, hi), to the second.
func (r *rng) duration(lo, hi time.Duration) time.Duration {
	return time.Duration(r.uniform(lo.Seconds(), hi.Seconds())) * time.Second
}

// poisson draws a Poisson count (Knuth's method for small means, a rounded
// Gaussian for large ones).
func (r *rng) poisson(mean float64) int {
	switch {
	case mean <= 0:
		return 0
	case mean > 50:
		return max(0, int(math.Round(r.normal(mean, math.Sqrt(mean)))))
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= r.r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// hex returns n random lowercase hexadecimal digits.
func (r *rng) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.r.IntN(16)]
	}
	return string(b)
}

// suffix returns n random characters of the alphabet Kubernetes uses for
// generated names (no vowels, no look-alikes).
func (r *rng) suffix(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.r.IntN(len(alphabet))]
	}
	return string(b)
}

// pick returns a random element of xs.
func pick[T any](r *rng, xs []T) T { return xs[r.r.IntN(len(xs))] }

// ou is a mean-reverting (Ornstein–Uhlenbeck) wander around 0 with
// stationary spread sd and time constant tau.
type ou struct {
	x, sd float64
	tau   time.Duration
}

// step advances the wander by dt.
func (o *ou) step(r *rng, dt time.Duration) float64 {
	a := math.Exp(-dt.Seconds() / o.tau.Seconds())
	o.x = a*o.x + o.sd*math.Sqrt(1-a*a)*r.r.NormFloat64()
	return o.x
}

// lag moves x toward target with a first-order lag of time constant tau
// over dt.
func lag(x, target float64, dt, tau time.Duration) float64 {
	return target + (x-target)*math.Exp(-dt.Seconds()/tau.Seconds())
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
