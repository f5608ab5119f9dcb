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
