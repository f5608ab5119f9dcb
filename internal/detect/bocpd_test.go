package detect

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// argmax returns the first index of the largest value.
func argmax(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

func requireProbs(t *testing.T, xs, p []float64) {
	t.Helper()
	require.Len(t, p, len(xs))
	for i, v := range p {
		require.True(t, v >= 0 && v <= 1, "p[%d] = %v", i, v)
		if !isFinite(xs[i]) {
			require.Zero(t, v, "p[%d] of a missing value", i)
		}
	}
}

func TestChangeProbStep(t *testing.T) {
	for seed := range uint64(50) {
		for _, delta := range []float64{6, -6} {
			xs := step(seed, 120, 60, delta)
			p := ChangeProb(xs, 0)
			requireProbs(t, xs, p)
			require.InDelta(t, 60, argmax(p), 2, "seed %d shift %v", seed, delta)
			require.Greater(t, p[argmax(p)], 0.5, "seed %d shift %v", seed, delta)
		}
	}
}

func TestChangeProbUnits(t *testing.T) {
	// The same shape in any unit gives the same probabilities.
	xs := step(3, 120, 80, 6)
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 5e4 + 1e3*x // the noise, not the 1% floor, sets the scale
	}
	p, q := ChangeProb(xs, 100), ChangeProb(ys, 100)
	require.Equal(t, argmax(p), argmax(q))
	require.InDelta(t, p[80], q[80], 1e-6)
}

func TestChangeProbFloor(t *testing.T) {
	// A 0.4% move of a flat series is no change; a 10% move is.
	xs := append(flat(60, 1000), flat(60, 1004)...)
	p := ChangeProb(xs, 0)
	requireProbs(t, xs, p)
	require.Less(t, slices.Max(p), 0.5)
	xs = append(flat(60, 1000), flat(60, 1100)...)
	p = ChangeProb(xs, 0)
	require.Equal(t, 60, argmax(p))
	require.Greater(t, p[60], 0.9)
}

func TestChangeProbNoise(t *testing.T) {
	for seed := range uint64(20) {
		xs := noise(seed, 240)
		p := ChangeProb(xs, 0)
		requireProbs(t, xs, p)
		require.Less(t, slices.Max(p), 0.5, "seed %d", seed)
	}
}

func TestChangeProbMissing(t *testing.T) {
	xs := step(5, 120, 60, 8)
	for _, i := range []int{0, 10, 11, 12, 58, 59, 61, 119} {
		xs[i] = nan
	}
	xs[30] = math.Inf(-1)
	p := ChangeProb(xs, 0)
	requireProbs(t, xs, p)
	require.Equal(t, 60, argmax(p))
	require.Zero(t, p[1], "the first valid value")

	for _, xs := range [][]float64{nil, {1}, flat(10, nan), {nan, 1, nan}} {
		p := ChangeProb(xs, 0)
		requireProbs(t, xs, p)
		require.Zero(t, slices.Max(append(p, 0)))
	}
}

func TestChangeProbLong(t *testing.T) {
	// Longer than MaxRunLength: the truncation keeps the cost bounded and
	// still finds a change well past it.
	xs := step(9, 4*MaxRunLength, 3*MaxRunLength, 6)
	p := ChangeProb(xs, 1000)
	requireProbs(t, xs, p)
	require.InDelta(t, 3*MaxRunLength, argmax(p), 2)
}

func TestChangeProbHazard(t *testing.T) {
	xs := step(11, 120, 60, 6)
	def := ChangeProb(xs, DefaultHazardLambda)
	for _, lambda := range []float64{0, 1, -3, nan, math.Inf(1)} {
		require.Equal(t, def, ChangeProb(xs, lambda), "lambda %v", lambda)
	}
	require.NotEqual(t, def, ChangeProb(xs, 10))
}
