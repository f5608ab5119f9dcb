package diagnose

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBridged(t *testing.T) {
	nan := math.NaN()
	v := []float64{0, 9, 9, nan, 9, 0, nan, 9, nan, nan, 9, 9, nan}
	bad := bridged(v, func(i int) bool { return v[i] >= 5 })
	var got []bool
	for i := range v {
		got = append(got, bad(i))
	}
	// A gap between two bad readings is bad (3, 8, 9); one next to a good
	// reading (6) or at the end (12) is not.
	require.Equal(t, []bool{false, true, true, true, true, false, false, true, true, true, true, true, false}, got)
	require.Equal(t, []episode{{1, 4}, {7, 11}}, episodes(len(v), bad, 4))
}

// TestSidedBaseline: a series that spends a tenth of its history in a
// second mode (a rarely called service's latency quantile: 5 ms, or 28 s
// when one slow call lands in the minute) is not anomalous in that mode,
// and still is far beyond it; a series without such a tail keeps the
// middle's spread on both sides.
func TestSidedBaseline(t *testing.T) {
	var bimodal, plain []float64
	for i := range 100 {
		v := 0.005 + 0.0001*float64(i%3)
		if i%10 == 3 {
			v = 28.6
		}
		bimodal = append(bimodal, v)
		plain = append(plain, 10+float64(i%5)-2)
	}
	b := genericBaseline(bimodal)
	require.Less(t, b.Z(28.6), 2.0, "the mode it already visits")
	require.Greater(t, b.Baseline.Z(28.6), 1e4, "the middle's spread alone")
	require.Greater(t, b.Z(600), 30.0, "far beyond the mode")
	require.Less(t, b.Z(0.0049), 0.0, "below: the lower side's spread")

	p := genericBaseline(plain)
	require.Equal(t, p.Baseline.Z(20), p.Z(20), "no tail beyond the middle's spread")
	require.Equal(t, p.Baseline.Z(0), p.Z(0))
}

// TestLikeliestChangeLeavesRoom: in a short window the fallback onset
// leaves three readings before it and two after, even when the series
// change at their last reading.
func TestLikeliestChangeLeavesRoom(t *testing.T) {
	series := [][]float64{{1, 1, 1, 1, 1, 1, 1, 1, 9}, {2, 2.1, 2, 2.1, 2, 2.1, 2, 2.1, 7}}
	at, ok := likeliestChange(series)
	require.True(t, ok)
	require.GreaterOrEqual(t, at, 3)
	require.LessOrEqual(t, at, len(series[0])-3)
	_, ok = likeliestChange([][]float64{{1, 2, 3, 4}})
	require.False(t, ok, "no room at all")
}
