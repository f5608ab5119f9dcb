package drift

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSortFloats: the radix sort orders every kind of float64 as
// slices.Sort does, short and long slices, with and without scratch.
func TestSortFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	special := []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 5e-324 * 3, 1e-310, -1e-310}
	gens := map[string]func() float64{
		"normal":   rng.NormFloat64,
		"rounded":  func() float64 { return math.Round(rng.NormFloat64()*100) / 100 },
		"integers": func() float64 { return float64(rng.IntN(7) - 3) },
		"constant": func() float64 { return 2.5 },
		"wide":     func() float64 { return math.Ldexp(rng.Float64()-0.5, rng.IntN(2000)-1000) },
		"special":  func() float64 { return special[rng.IntN(len(special))] },
	}
	var tmp []uint64
	for name, gen := range gens {
		for _, n := range []int{0, 1, 7, radixMin - 1, radixMin, 5000, 100_000} {
			v := make([]float64, n)
			for i := range v {
				v[i] = gen()
			}
			want := slices.Clone(v)
			slices.Sort(want)
			tmp = sortFloats(v, tmp)
			require.True(t, slices.IsSorted(v), "%s n=%d", name, n)
			// The same values in the same order (−0 and +0 compare equal).
			require.Equal(t, len(want), len(v))
			for i := range v {
				require.True(t, v[i] == want[i], "%s n=%d at %d: %v vs %v", name, n, i, v[i], want[i])
			}
		}
	}
}
