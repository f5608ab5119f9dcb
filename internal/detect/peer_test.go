package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPeerZOneOff(t *testing.T) {
	// Seven peers around 50 with IQR 1.5 (scale 1.5/1.349), and one ten
	// scales above.
	scale := 1.5 / 1.349
	vals := []float64{50, 49, 51, 48, 52, 50 + 10*scale, 49.5, 50.5}
	z := PeerZ(vals, DefaultFloor)
	require.Len(t, z, len(vals))
	for i, v := range z {
		if i == 5 {
			require.InDelta(t, 10, v, 1e-9)
			continue
		}
		require.Less(t, math.Abs(v), 3.0, "peer %d", i)
		require.Less(t, math.Abs(v), math.Abs(z[5]))
	}
}

func TestPeerZFloor(t *testing.T) {
	// Identical peers: one 0.4% off is 0.4 floored scales, below any threshold.
	vals := []float64{1000, 1000, 1000, 1000, 1004, 1000, 1000, 1000}
	for i, v := range PeerZ(vals, DefaultFloor) {
		want := 0.0
		if i == 4 {
			want = 0.4
		}
		require.InDelta(t, want, v, 1e-12, "peer %d", i)
	}
	// The same move by 10% is 10 scales.
	vals[4] = 1100
	require.InDelta(t, 10, PeerZ(vals, DefaultFloor)[4], 1e-12)
}

func TestPeerZMissing(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		vals []float64
		nan  []bool // where the result must be NaN
	}{
		{"empty", nil, nil},
		{"one", []float64{1}, []bool{true}},
		{"two", []float64{1, 2}, []bool{true, true}},
		{"three", []float64{1, 2, 3}, []bool{false, false, false}},
		{"nan in nan out", []float64{1, nan, 2, 3}, []bool{false, true, false, false}},
		{"one other valid", []float64{1, nan, 2, nan}, []bool{true, true, true, true}},
		{"inf is no sample", []float64{1, inf, 2, 3, -inf}, []bool{false, true, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := PeerZ(tt.vals, DefaultFloor)
			require.Len(t, z, len(tt.vals))
			for i, v := range z {
				require.Equal(t, tt.nan[i], math.IsNaN(v), "index %d: %v", i, v)
				if !tt.nan[i] {
					require.False(t, math.IsInf(v, 0), "index %d", i)
				}
			}
		})
	}
}

// TestPeerZLeaveOneOut checks the O(n log n) leave-one-out against building
// each baseline from scratch.
func TestPeerZLeaveOneOut(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 0))
	for range 200 {
		n := 1 + r.IntN(40)
		vals := make([]float64, n)
		for i := range vals {
			switch r.IntN(10) {
			case 0:
				vals[i] = nan
			case 1:
				vals[i] = float64(r.IntN(3)) // ties
			default:
				vals[i] = r.NormFloat64() * 10
			}
		}
		got := PeerZ(vals, DefaultFloor)
		for i, v := range vals {
			others := append(append([]float64{}, vals[:i]...), vals[i+1:]...)
			want := NewBaseline(others, DefaultFloor).Z(v)
			if Valid(others) < 2 {
				want = nan
			}
			if math.IsNaN(want) {
				require.True(t, math.IsNaN(got[i]), "%v at %d", vals, i)
				continue
			}
			require.InDelta(t, want, got[i], 1e-9*math.Max(1, math.Abs(want)), "%v at %d", vals, i)
		}
	}
}
