package detect

import (
	"math/rand/v2"
)

// noise returns n draws of N(0, 1) from a generator seeded with seed.
func noise(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 0))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = r.NormFloat64()
	}
	return xs
}

// step returns noise(seed, n) with delta added from index at on.
func step(seed uint64, n, at int, delta float64) []float64 {
	xs := noise(seed, n)
	for i := at; i < n; i++ {
		xs[i] += delta
	}
	return xs
}

// flat returns n copies of v.
func flat(n int, v float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}
