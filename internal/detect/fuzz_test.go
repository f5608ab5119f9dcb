package detect

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// floats decodes data as little-endian float64s, so that the fuzzer reaches
// every bit pattern: NaN, ±Inf, subnormals, ±MaxFloat64.
func floats(data []byte) []float64 {
	xs := make([]float64, len(data)/8)
	for i := range xs {
		xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return xs
}

// encode is the inverse of floats, for seeds.
func encode(xs []float64) []byte {
	b := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// tame reports whether every finite value is below 1e150 in magnitude, the
// range in which scores cannot overflow.
func tame(xs []float64) bool {
	for _, x := range xs {
		if isFinite(x) && math.Abs(x) >= 1e150 {
			return false
		}
	}
	return true
}

func FuzzOnset(f *testing.F) {
	inf := math.Inf(1)
	f.Add(encode(step(1, 40, 20, 6)), 0.0, uint8(0), uint8(0))
	f.Add(encode(append(flat(10, 1000), flat(10, 1100)...)), 4.0, uint8(3), uint8(5))
	f.Add(encode([]float64{0, 0, 0, 0, 0, inf, -inf, nan, 9, 9, 9}), 0.0, uint8(0), uint8(0))
	f.Add(encode([]float64{-math.MaxFloat64, 0, math.MaxFloat64, 0, 0, 0, math.MaxFloat64, math.MaxFloat64, math.MaxFloat64}), 1.0, uint8(1), uint8(0))
	f.Add(encode([]float64{5e-324, 0, -5e-324, 0, 0, 1, 1, 1, 1}), nan, uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, threshold float64, minRun, reference uint8) {
		xs := floats(data)
		o := OnsetOptions{Threshold: threshold, MinRun: int(minRun), Reference: int(reference)}
		s, ok := Onset(xs, o)
		if !ok {
			require.Equal(t, Shift{}, s)
			return
		}
		o = o.withDefaults()
		require.True(t, s.Index >= 0 && s.Index < len(xs), "index %d of %d", s.Index, len(xs))
		require.True(t, isFinite(xs[s.Index]), "onset on a missing value")
		require.True(t, isFinite(s.Before) && isFinite(s.After), "%+v", s)
		require.False(t, math.IsNaN(s.Z))
		require.GreaterOrEqual(t, math.Abs(s.Z), o.Threshold)
		require.Equal(t, s.After > s.Before, s.Z > 0, "%+v", s)
		if tame(xs) {
			require.False(t, math.IsInf(s.Z, 0), "%+v", s)
		}
		ref := o.Reference
		if ref == 0 {
			ref = minReference
		}
		valid := 0
		for _, x := range xs[:s.Index] {
			if isFinite(x) {
				valid++
			}
		}
		require.GreaterOrEqual(t, valid, ref, "onset inside the reference")
	})
}

func FuzzPeerZ(f *testing.F) {
	inf := math.Inf(1)
	f.Add(encode([]float64{50, 49, 51, 48, 52, 61, 49.5, 50.5}))
	f.Add(encode([]float64{1000, 1000, 1004, nan, inf, -inf}))
	f.Add(encode([]float64{-math.MaxFloat64, math.MaxFloat64, 0, 5e-324}))
	f.Fuzz(func(t *testing.T, data []byte) {
		vals := floats(data)
		z := PeerZ(vals, DefaultFloor)
		require.Len(t, z, len(vals))
		valid := 0
		for _, v := range vals {
			if isFinite(v) {
				valid++
			}
		}
		for i, v := range z {
			wantNaN := !isFinite(vals[i]) || valid < 3
			require.Equal(t, wantNaN, math.IsNaN(v), "index %d: %v → %v", i, vals[i], v)
			if !wantNaN && tame(vals) {
				require.False(t, math.IsInf(v, 0), "index %d: %v → %v", i, vals[i], v)
			}
		}
	})
}

func FuzzChangeProb(f *testing.F) {
	f.Add(encode(step(1, 40, 20, 6)), 0.0)
	f.Add(encode([]float64{math.Inf(1), nan, -math.MaxFloat64, math.MaxFloat64, 0, 5e-324}), 2.0)
	f.Fuzz(func(t *testing.T, data []byte, lambda float64) {
		xs := floats(data)
		p := ChangeProb(xs, lambda)
		requireProbs(t, xs, p)
	})
}
