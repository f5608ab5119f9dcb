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

// rng is the random stream of one concern, with the run's noise scale:
// gauss draws scale every noise amplitude by it.
type rng struct {
	*rand.Rand
	noise float64
}

// newRand returns the random stream of one concern: the config's seed and
// the parts (entity names) pick it; its noise scale is the config's.
func newRand(cfg Config, parts ...string) *rng {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	noise := cfg.NoiseScale
	if noise <= 0 {
		noise = 1
	}
	return &rng{Rand: rand.New(rand.NewPCG(cfg.Seed, h.Sum64())), noise: noise}
}

// gauss is a normal draw with mean 0 and standard deviation sd times the
// stream's noise scale, clipped to ±4 sd so that no single sample is a
// freak outlier.
func gauss(r *rng, sd float64) float64 {
	return r.noise * sd * max(-4, min(4, r.NormFloat64()))
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
func poisson(r *rng, lambda float64) int {
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
func hexID(r *rng, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}

// uuid returns a random version-4 UUID string.
func uuid(r *rng) string {
	s := hexID(r, 32)
	return s[0:8] + "-" + s[8:12] + "-4" + s[13:16] + "-" + "89ab"[r.IntN(4):][:1] + s[17:20] + "-" + s[20:32]
}

// podSuffix returns n characters of Kubernetes' generated-name alphabet.
func podSuffix(r *rng, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}
