package microsvc

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// newRand returns the random stream of one concern: the seed and the parts
// (a concern and an entity name) pick it, as in internal/sim.
func newRand(seed uint64, parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// clip4 bounds a standard normal draw to ±4, so that no single sample is a
// freak outlier.
func clip4(z float64) float64 { return max(-4, min(4, z)) }

// round rounds v to d decimals, as exporters print readings.
func round(v float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(v*p) / p
}

// podSuffix returns n characters of Kubernetes' generated-name alphabet.
func podSuffix(r *rand.Rand, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// robustScale is the interquartile range of xs over 1.349: the standard
// deviation of normal data, unmoved by outliers. xs is sorted in place.
func robustScale(xs []float64) float64 {
	if len(xs) < 4 {
		return 0
	}
	slices.Sort(xs)
	return (quantile(xs, 0.75) - quantile(xs, 0.25)) / 1.349
}

// quantile of sorted xs, linearly interpolated.
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}
