package detect

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

var nan = math.NaN()

func TestMedian(t *testing.T) {
	f := func(xs []float64, want float64) {
		t.Helper()
		got := Median(xs)
		if math.IsNaN(want) {
			require.True(t, math.IsNaN(got), "Median(%v) = %v, want NaN", xs, got)
			return
		}
		require.InDelta(t, want, got, 1e-12, "Median(%v)", xs)
	}
	f(nil, nan)
	f([]float64{}, nan)
	f([]float64{nan, nan}, nan)
	f([]float64{7}, 7)
	f([]float64{3, 1, 2}, 2)
	f([]float64{4, 1, 3, 2}, 2.5)
	f([]float64{nan, 5, nan}, 5)
	f([]float64{1, nan, 3}, 2)
	f([]float64{-1e308, 1e308}, 0) // no overflow
	f([]float64{1, 2, math.Inf(1)}, 2)
}

func TestQuantile(t *testing.T) {
	f := func(xs []float64, q, want float64) {
		t.Helper()
		got := Quantile(xs, q)
		if math.IsNaN(want) {
			require.True(t, math.IsNaN(got), "Quantile(%v, %v) = %v, want NaN", xs, q, got)
			return
		}
		require.InDelta(t, want, got, 1e-12, "Quantile(%v, %v)", xs, q)
	}
	five := []float64{5, 3, 1, 4, 2}
	f(five, 0, 1)
	f(five, 0.25, 2)
	f(five, 0.5, 3)
	f(five, 1, 5)
	f([]float64{1, 2, 3, 4}, 0.25, 1.75) // h = 0.75
	f([]float64{1, 2, 3, 4}, 0.75, 3.25)
	f([]float64{10, 20, 30, 40}, 0.9, 37) // h = 2.7
	f([]float64{nan, 10, 20, nan, 30, 40}, 0.9, 37)
	f([]float64{42}, 0.3, 42)
	f(nil, 0.5, nan)
	f([]float64{nan}, 0.5, nan)
	f(five, -0.1, nan)
	f(five, 1.1, nan)
	f(five, nan, nan)
}

func TestValid(t *testing.T) {
	require.Equal(t, 0, Valid(nil))
	require.Equal(t, 0, Valid([]float64{nan}))
	require.Equal(t, 3, Valid([]float64{1, nan, math.Inf(1), 0}))
}

func TestNewBaseline(t *testing.T) {
	tests := []struct {
		name       string
		xs         []float64
		f          Floor
		med, scale float64
		n          int
	}{
		{"iqr wins", []float64{9, 1, 2, 3, 4, 5, 6, 7, 8}, DefaultFloor, 5, 4 / 1.349, 9},
		{"nan ignored", []float64{nan, 1, 2, 3, 4, 5, 6, 7, 8, 9, nan}, DefaultFloor, 5, 4 / 1.349, 9},
		{"relative floor", []float64{1000, 1000, 1000, 1000}, DefaultFloor, 1000, 10, 4},
		{"relative floor of a negative level", []float64{-200, -200, -200}, DefaultFloor, -200, 2, 3},
		{"absolute floor", []float64{0, 0, 0}, DefaultFloor, 0, 1e-9, 3},
		{"custom floor", []float64{1, 2, 3, 4, 5}, Floor{Rel: 0.5, Abs: 0}, 3, 1.5, 5},
		{"zero floor", []float64{3, 3, 3}, Floor{}, 3, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBaseline(tt.xs, tt.f)
			require.InDelta(t, tt.med, b.Median, 1e-12)
			require.InDelta(t, tt.scale, b.Scale, 1e-12)
			require.Equal(t, tt.n, b.N)
		})
	}
	t.Run("empty", func(t *testing.T) {
		for _, xs := range [][]float64{nil, {nan, nan}} {
			b := NewBaseline(xs, DefaultFloor)
			require.Equal(t, 0, b.N)
			require.True(t, math.IsNaN(b.Median))
			require.True(t, math.IsNaN(b.Z(1)))
		}
	})
}

func TestBaselineZ(t *testing.T) {
	f := func(b Baseline, x, want float64) {
		t.Helper()
		got := b.Z(x)
		if math.IsNaN(want) {
			require.True(t, math.IsNaN(got), "Z(%v) = %v, want NaN", x, got)
			return
		}
		require.Equal(t, want, got, "%+v.Z(%v)", b, x)
	}
	b := Baseline{Median: 5, Scale: 2, N: 10}
	f(b, 9, 2)
	f(b, 1, -2)
	f(b, 5, 0)
	f(b, nan, nan)
	f(Baseline{Median: nan, Scale: 1}, 3, nan)
	f(Baseline{Median: 3, Scale: 0}, 3, 0)
	f(Baseline{Median: 3, Scale: 0}, 4, math.Inf(1))
	f(Baseline{Median: 3, Scale: 0}, 2, math.Inf(-1))

	// A 0.4% move of a flat series is 0.4 floored scales; a 10% move is 10.
	flatB := NewBaseline(flat(20, 1000), DefaultFloor)
	f(flatB, 1004, 0.4)
	f(flatB, 1100, 10)
}

// TestMedianInPlace checks the O(n) selection against sorting.
func TestMedianInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 0))
	require.True(t, math.IsNaN(medianInPlace(nil)))
	for range 500 {
		xs := make([]float64, 1+r.IntN(50))
		for i := range xs {
			xs[i] = float64(r.IntN(8)) // many ties
			if r.IntN(2) == 0 {
				xs[i] = r.NormFloat64()
			}
		}
		want := Median(xs)
		require.Equal(t, want, medianInPlace(slices.Clone(xs)), "%v", xs)
		k := r.IntN(len(xs))
		sorted := slices.Sorted(slices.Values(xs))
		require.Equal(t, sorted[k], nthElement(slices.Clone(xs), k), "%v k %d", xs, k)
	}
}

// TestInPlace: the in-place forms agree with the copying ones.
func TestInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 0))
	require.True(t, math.IsNaN(MedianInPlace(nil)))
	require.True(t, math.IsNaN(NewBaselineMADInPlace(nil, Floor{}).Median))
	for range 300 {
		xs := make([]float64, 1+r.IntN(40))
		for i := range xs {
			xs[i] = float64(r.IntN(6)) + r.NormFloat64()*float64(r.IntN(2))
		}
		require.Equal(t, Median(xs), MedianInPlace(slices.Clone(xs)), "%v", xs)
		f := Floor{Rel: 0.01, Abs: 1e-9}
		require.Equal(t, NewBaselineMAD(xs, f), NewBaselineMADInPlace(slices.Clone(xs), f), "%v", xs)
	}
}

func TestNewBaselineMAD(t *testing.T) {
	// A quarter of the values far off: the IQR scale takes them in, the
	// MAD's does not.
	xs := []float64{1, 1.02, 0.98, 1.01, 0.99, 1, 1.03, 0.97, 1, 1.01, 0.99, 1, 0.3, 0.32, 0.31, 0.33}
	iqr, mad := NewBaseline(xs, Floor{}), NewBaselineMAD(xs, Floor{})
	if !(mad.Scale < iqr.Scale/5) {
		t.Fatalf("MAD scale %v, IQR scale %v: want the MAD's far smaller", mad.Scale, iqr.Scale)
	}
	if mad.Z(0.3) > -10 {
		t.Fatalf("z of 0.3 = %v, want far below", mad.Z(0.3))
	}
	// On normal-ish data both estimate the same sigma.
	ys := []float64{-1.5, -1, -0.7, -0.4, -0.2, 0, 0.2, 0.4, 0.7, 1, 1.5}
	a, b := NewBaseline(ys, Floor{}).Scale, NewBaselineMAD(ys, Floor{}).Scale
	if math.Abs(a-b) > 0.3*a {
		t.Fatalf("IQR scale %v and MAD scale %v differ on symmetric data", a, b)
	}
	if got := NewBaselineMAD(nil, Floor{Abs: 2}); got.N != 0 || !math.IsNaN(got.Median) || got.Scale != 2 {
		t.Fatalf("empty: %+v", got)
	}
}

func TestMedianDeviationMatchesSort(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for seed := range 5 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64((i*7919+seed*104729)%97) / 7
			}
			slices.Sort(xs)
			med := quantileSorted(xs, 0.5)
			dev := make([]float64, n)
			for i, x := range xs {
				dev[i] = math.Abs(x - med)
			}
			slices.Sort(dev)
			if got, want := medianDeviation(xs, med), quantileSorted(dev, 0.5); math.Abs(got-want) > 1e-12 {
				t.Fatalf("n=%d seed=%d: medianDeviation %v, sorted %v", n, seed, got, want)
			}
		}
	}
}
