package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// peerSeries are twelve entities' latency over 8 steps, each at a level
// of its own with 3% noise, readings from step 2 (two before an onset at
// 4); edit changes them.
func peerSeries(seed uint64, edit func(e, i int, x float64) float64) []genericSeries {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []genericSeries
	for e := range 12 {
		v := nanSeries(8)
		for i := 2; i < 8; i++ {
			v[i] = 0.01 * float64(1+e) * (1 + 0.03*rng.NormFloat64())
			if edit != nil {
				v[i] = edit(e, i, v[i])
			}
		}
		out = append(out, genericSeries{entity: fmt.Sprintf("e%02d", e), name: "lat", v: v})
	}
	return out
}

// TestPeerScores: with two readings before the onset, an entity whose
// latency tripled from it is judged by its eleven peers (bounded by
// peerBound(11)), on every seed; what its peers cannot tell from noise is
// not: a rise at the last step only (one reading after; a change holds
// for two), every entity's doubling (a load change), an entity that swung
// by a third between its two readings before and after (judged in its own
// swing, not its calmer peers'), an entity idle before (no level, no
// ratio: its duty cycle is unknown), an entity with three readings
// before (its own history judges it), and a counter's increases (events,
// whose spread is their own Poisson one).
func TestPeerScores(t *testing.T) {
	const onset = 4
	for seed := range uint64(20) {
		sc := peerScores(peerSeries(seed, func(e, i int, x float64) float64 {
			if e == 4 && i >= onset {
				return 3 * x
			}
			return x
		}), onset)
		best := ""
		for e, s := range sc {
			if best == "" || s.rank > sc[best].rank || s.rank == sc[best].rank && s.z > sc[best].z {
				best = e
			}
		}
		require.Equal(t, "e04", best, "seed %d", seed)
		require.Equal(t, 11, sc["e04"].peers)
		require.InDelta(t, peerBound(11), sc["e04"].rank, 1e-12)
		require.Greater(t, sc["e04"].held, 8.0, "seed %d: a tripling held among 3%% noise", seed)

		maxZ := func(sc map[string]genericScore) (string, float64) {
			e, z := "", 0.0
			for k, s := range sc {
				if s.z > z {
					e, z = k, s.z
				}
			}
			return e, z
		}
		last := peerScores(peerSeries(seed, func(e, i int, x float64) float64 {
			if e == 4 && i == 7 {
				return 3 * x
			}
			return x
		}), onset)
		if s, ok := last["e04"]; ok {
			require.Less(t, s.z, 4.0, "seed %d: one reading after", seed)
		}
		load := peerScores(peerSeries(seed, func(_, i int, x float64) float64 {
			if i >= onset {
				return 2 * x
			}
			return x
		}), onset)
		e, z := maxZ(load)
		require.Less(t, z, 4.0, "seed %d: every peer doubled, %s stands out", seed, e)
		noisy := peerScores(peerSeries(seed, func(e, i int, x float64) float64 {
			if e == 7 && i%2 == 1 {
				return 1.35 * x
			}
			return x
		}), onset)
		require.Less(t, noisy["e07"].z, 2.0, "seed %d: a noisy peer", seed)
	}

	idle := peerSeries(1, func(e, i int, x float64) float64 {
		if e == 4 && i < onset {
			return 0
		}
		return x
	})
	_, ok := peerScores(idle, onset)["e04"]
	require.False(t, ok, "idle before: no level to judge a ratio by")

	long := peerSeries(1, func(e, i int, x float64) float64 {
		if e == 4 && i >= onset {
			return 3 * x
		}
		return x
	})
	long[4].v[1] = 0.05
	_, ok = peerScores(long, onset)["e04"]
	require.False(t, ok, "three readings before: its own history judges it")
	counts := peerSeries(1, func(e, i int, x float64) float64 {
		if e == 4 && i >= onset {
			return 3 * x
		}
		return x
	})
	for i := range counts {
		counts[i].count = true
	}
	require.Empty(t, peerScores(counts, onset), "a counter's increases are events: their own Poisson spread, not their peers' ratios")
	require.Zero(t, peerBound(3), "three peers tell nothing")
	require.InDelta(t, upperDeviate(2/41.0), peerBound(40), 1e-12)
	require.True(t, math.IsNaN(peerChange(-1, 1)))
}
