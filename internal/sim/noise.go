package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// Random streams. Every concern draws from its own stream, seeded by the
// Config's seed and the concern's name, so that a fault changes only what it
// touches: a healthy run and a faulty run of one seed share every other draw.
const (
	streamLabels uint64 = 0x6c6162656c73 // "labels"
)

// newRand returns the random stream of one concern: the seed and the parts
// (entity names) pick it.
func newRand(seed uint64, parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// gauss is a normal draw with mean 0 and standard deviation sd, clipped to
// ±4 sd so that no single sample is a freak outlier.
func gauss(r *rand.Rand, sd float64) float64 {
	return sd * max(-4, min(4, r.NormFloat64()))
}

// clamp bounds v to [lo, hi].
func clamp(v, lo, hi float64) float64 { return max(lo, min(hi, v)) }

// round rounds v to d decimals, as exporters print readings.
func round(v float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(v*p) / p
}

// poisson draws a Poisson count with mean lambda (normal approximation for
// large means).
func poisson(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda > 50 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// hexID returns n random lowercase hex digits.
func hexID(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}

// uuid returns a random version-4 UUID string.
func uuid(r *rand.Rand) string {
	s := hexID(r, 32)
	return s[0:8] + "-" + s[8:12] + "-4" + s[13:16] + "-" + "89ab"[r.IntN(4):][:1] + s[17:20] + "-" + s[20:32]
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
