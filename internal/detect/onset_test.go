package detect

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOnsetRelativeFloor(t *testing.T) {
	f := func(after float64, want bool) {
		t.Helper()
		xs := append(flat(60, 1000), flat(60, after)...)
		s, ok := Onset(xs, OnsetOptions{})
		require.Equal(t, want, ok, "1000 → %v", after)
		if want {
			require.Equal(t, Shift{Index: 60, Before: 1000, After: after, Z: (after - 1000) / 10}, s)
		}
	}
	f(1004, false) // 0.4%: 0.4 floored scales
	f(996, false)
	f(1100, true) // 10%: 10 floored scales
	f(900, true)
}

func TestOnsetStep(t *testing.T) {
	const n, at, seeds = 120, 60, 200
	for _, delta := range []float64{6, -6} {
		within := 0
		for seed := range uint64(seeds) {
			s, ok := Onset(step(seed, n, at, delta), OnsetOptions{})
			if ok && s.Index >= at-1 && s.Index <= at+1 {
				within++
				require.Equal(t, math.Signbit(delta), math.Signbit(s.Z), "seed %d", seed)
				require.InDelta(t, delta, s.After-s.Before, 1.5, "seed %d", seed)
			}
		}
		require.GreaterOrEqual(t, within, seeds*95/100, "shift %v: %d of %d within ±1", delta, within, seeds)
	}
}

func TestOnsetNoise(t *testing.T) {
	const seeds = 500
	found := 0
	for seed := range uint64(seeds) {
		if _, ok := Onset(noise(seed+1000, 240), OnsetOptions{}); ok {
			found++
		}
	}
	require.LessOrEqual(t, found, seeds/100, "%d of %d noise series have an onset", found, seeds)
}

func TestOnsetBlips(t *testing.T) {
	tests := []struct {
		name  string
		at    []int   // indices that get the spike
		size  float64 // in noise σ
		opt   OnsetOptions
		seeds uint64
	}{
		{"one point 50σ", []int{60}, 50, OnsetOptions{}, 50},
		{"one point -50σ", []int{60}, -50, OnsetOptions{}, 50},
		{"two points with MinRun 3", []int{60, 61}, 20, OnsetOptions{MinRun: 3}, 50},
		{"one point at the end", []int{119}, 50, OnsetOptions{}, 20},
		{"two points at the end with MinRun 3", []int{118, 119}, 50, OnsetOptions{}, 20},
		{"two points then one normal at the end", []int{116, 117}, 50, OnsetOptions{}, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range tt.seeds {
				xs := noise(seed, 120)
				for _, i := range tt.at {
					xs[i] += tt.size
				}
				s, ok := Onset(xs, tt.opt)
				require.False(t, ok, "seed %d: %+v", seed, s)
			}
		})
	}
	t.Run("three points with MinRun 3 at the end", func(t *testing.T) {
		xs := noise(1, 120)
		for i := 117; i < 120; i++ {
			xs[i] += 20
		}
		s, ok := Onset(xs, OnsetOptions{MinRun: 3})
		require.True(t, ok)
		require.Equal(t, 117, s.Index)
	})
}

func TestOnsetRamp(t *testing.T) {
	// A drift of 0.25σ per point from index 100: dated once it has risen by
	// about Threshold/2 scales, ten points or so later.
	const start, slope, seeds = 100, 0.25, 100
	near := 0
	for seed := range uint64(seeds) {
		xs := noise(seed, 240)
		for i := start; i < len(xs); i++ {
			xs[i] += slope * float64(i-start)
		}
		if s, ok := Onset(xs, OnsetOptions{}); ok && s.Index >= start && s.Index <= start+20 {
			near++
			require.Positive(t, s.Z)
		}
	}
	require.GreaterOrEqual(t, near, seeds*9/10, "%d of %d ramps dated within 20 points of the start", near, seeds)
}

func TestOnsetGaps(t *testing.T) {
	within := 0
	for seed := range uint64(100) {
		xs := step(seed, 120, 60, 6)
		for _, i := range []int{3, 20, 21, 22, 23, 24, 55, 56, 57, 58, 59, 61, 63, 90} {
			xs[i] = nan
		}
		xs[40] = math.Inf(1) // counts as no sample
		s, ok := Onset(xs, OnsetOptions{})
		if ok && (s.Index == 60 || s.Index == 54 || s.Index == 62) {
			within++ // ±1 valid point
		}
		if ok {
			require.False(t, math.IsNaN(xs[s.Index]), "seed %d: onset on a gap", seed)
		}
	}
	require.GreaterOrEqual(t, within, 95)
}

func TestOnsetDegenerate(t *testing.T) {
	f := func(name string, xs []float64, o OnsetOptions) {
		t.Helper()
		s, ok := Onset(xs, o)
		require.False(t, ok, "%s: %+v", name, s)
	}
	f("nil", nil, OnsetOptions{})
	f("all NaN", flat(100, nan), OnsetOptions{})
	f("all +Inf", flat(100, math.Inf(1)), OnsetOptions{})
	f("flat", flat(100, 3), OnsetOptions{})
	f("zeros", flat(100, 0), OnsetOptions{})
	// 5 reference points and MinRun 3 need 8 valid points: 7 are too few.
	f("too short", []float64{0, 0, 0, 0, 0, 9, 9}, OnsetOptions{})
	f("too short for the reference", append(flat(20, 0), flat(5, 9)...), OnsetOptions{Reference: 20, MinRun: 6})

	s, ok := Onset([]float64{0, 0, 0, 0, 0, 9, 9, 9}, OnsetOptions{})
	require.True(t, ok, "8 valid points are enough")
	require.Equal(t, 5, s.Index)
}

func TestOnsetOptions(t *testing.T) {
	xs := step(7, 120, 60, 6)
	t.Run("fixed reference", func(t *testing.T) {
		s, ok := Onset(xs, OnsetOptions{Reference: 30})
		require.True(t, ok)
		require.InDelta(t, 60, s.Index, 1)
		require.InDelta(t, Median(xs[:30]), s.Before, 1e-12)
	})
	t.Run("threshold above the shift", func(t *testing.T) {
		_, ok := Onset(xs, OnsetOptions{Threshold: 12})
		require.False(t, ok)
	})
	t.Run("longer MinRun", func(t *testing.T) {
		ys := append(noise(7, 100), flat(5, 20)...)
		_, ok := Onset(ys, OnsetOptions{MinRun: 6})
		require.False(t, ok, "5 points are not 6")
		s, ok := Onset(ys, OnsetOptions{MinRun: 5})
		require.True(t, ok)
		require.Equal(t, 100, s.Index)
	})
	t.Run("custom floor", func(t *testing.T) {
		ys := append(flat(60, 1000), flat(60, 1004)...)
		s, ok := Onset(ys, OnsetOptions{Floor: Floor{Rel: 0.0001}})
		require.True(t, ok, "0.4% is 40 scales of a 0.01% floor")
		require.Equal(t, 60, s.Index)
	})
	t.Run("nonsense options mean the defaults", func(t *testing.T) {
		s, ok := Onset(xs, OnsetOptions{Floor: Floor{Rel: nan, Abs: -1}, Threshold: nan, MinRun: -2, Reference: -5})
		require.True(t, ok)
		require.InDelta(t, 60, s.Index, 1)
	})
}

func TestPersistent(t *testing.T) {
	f := func(flags []bool, minRun int, want bool) {
		t.Helper()
		require.Equal(t, want, Persistent(flags, minRun), "Persistent(%v, %d)", flags, minRun)
	}
	const T, F = true, false
	f(nil, 1, false)
	f(nil, 0, false)
	f([]bool{T}, 1, true)
	f([]bool{T}, 0, true)
	f([]bool{T}, 2, false)
	f([]bool{F, T, T, T}, 3, true)
	f([]bool{T, T, T, F}, 3, false)
	f([]bool{T, F, T, T}, 3, false)
	f([]bool{T, F, T, T}, 2, true)
	f([]bool{T, T, T}, 3, true)
	f([]bool{T, T, T}, 4, false)
}
