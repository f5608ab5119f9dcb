package drift

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddAllMatchesAdd: adding runs of values leaves a sample exactly as
// adding them one by one does, through the switch to a sketch and many
// compactions.
func TestAddAllMatchesAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, limit := range []int{1, 1000, 50_000} {
		one, runs := sample{limit: limit}, sample{limit: limit}
		var tmp []uint64
		for range 300 {
			vs := make([]float64, rng.IntN(3*SketchK))
			for i := range vs {
				vs[i] = rng.NormFloat64()
			}
			for _, v := range vs {
				one.add(v)
			}
			runs.addAll(vs, &tmp)
			require.Equal(t, one.n, runs.n)
			require.Equal(t, one.vals, runs.vals)
			require.Equal(t, one.sk, runs.sk, "limit %d", limit)
		}
		require.False(t, runs.exact())
	}
}
