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
// leaves a reading before it and two after, even when the series change
// at their last reading (where it cannot be told: it has no readings
// after it). Five rows hold an onset (PetShop's temporal issues: 5-minute
// rows with no normal period before them); three do not.
func TestLikeliestChangeLeavesRoom(t *testing.T) {
	series := [][]float64{{1, 1, 1, 1, 1, 1, 1, 1, 9}, {2, 2.1, 2, 2.1, 2, 2.1, 2, 2.1, 7}}
	at, ok := likeliestChange(series)
	require.True(t, ok)
	require.GreaterOrEqual(t, at, 1)
	require.LessOrEqual(t, at, len(series[0])-3)
	_, ok = likeliestChange([][]float64{{1, 2, 3}})
	require.False(t, ok, "no room at all")
	rows := [][]float64{{0.0068, 0.026, 0.051, 0.0094, 0.0066}, {0.097, 0.13, 0.17, 0.11, 0.099}, {0.023, 0.021, 0.024, 0.024, 0.023}}
	at, ok = likeliestChange(rows)
	require.True(t, ok)
	require.Contains(t, []int{1, 2}, at, "a reading before, two after")
}

// TestLikeliestChangeManySeries: past maxFallbackSeries the fallback
// onset reads an evenly spaced sample of the series rather than giving
// up: more data must not leave the layer with no onset. Decoy: when only
// a few of the many series change, the sample may miss them, but the
// onset it finds is still one of the steps with room around it.
func TestLikeliestChangeManySeries(t *testing.T) {
	f := func(n, changed int) (int, bool) {
		series := make([][]float64, n)
		for i := range series {
			xs := make([]float64, 12)
			for j := range xs {
				xs[j] = 1 + 0.01*float64((i+j)%3)
				if i < changed && j >= 6 {
					xs[j] += 5
				}
			}
			series[i] = xs
		}
		return likeliestChange(series)
	}
	for _, n := range []int{maxFallbackSeries / 2, maxFallbackSeries + 1, 3 * maxFallbackSeries} {
		at, ok := f(n, n)
		require.True(t, ok, "%d series", n)
		require.Equal(t, 6, at, "%d series, all changing at 6", n)
		at, ok = f(n, n/2)
		require.True(t, ok, "%d series, half of them changing", n)
		require.Equal(t, 6, at, "%d series, half of them changing at 6", n)
	}
	at, ok := f(3*maxFallbackSeries, 1)
	if ok {
		require.GreaterOrEqual(t, at, 1)
		require.LessOrEqual(t, at, 12-3)
	}
}

// TestCoveredSteps: a step the traces cover has a calls sample, or lies
// alone between two that have one (a flush a moment late); two or more
// missing steps running are a gap, and the steps past the last sample
// are not covered.
func TestCoveredSteps(t *testing.T) {
	f := func(fresh, want string) {
		t.Helper()
		in := make([]bool, len(fresh))
		for i, c := range fresh {
			in[i] = c == 'x'
		}
		var got []byte
		for _, ok := range coveredSteps(in) {
			if ok {
				got = append(got, 'x')
			} else {
				got = append(got, '.')
			}
		}
		require.Equal(t, want, string(got), "fresh %s", fresh)
	}
	f("xxxxxx", "xxxxxx")
	f("xxx.xx", "xxxxxx")
	f("xx..xx", "xx..xx")
	f("..xxx...", "..xxx...")
	f(".x.x.", ".xxx.")
	f("x", "x")
	f("", "")
}
