package drift

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompareCounts: bucket counts give the same scores as the categorical
// reference cases, and the value-only methods are refused.
func TestCompareCounts(t *testing.T) {
	// Evidently's [3, 2, 2] vs [1, 2, 3] as counts of the values 1, 2, 3.
	r, err := CompareCounts("f", []float64{0, 2, 1}, []float64{1, 1, 1}, MethodPSI, 0)
	require.NoError(t, err)
	require.InDelta(t, 2.93, r.Score, 0.01)
	require.True(t, r.Drift)
	require.Equal(t, "significant", r.Level)
	require.EqualValues(t, 3, r.ReferenceRows)

	r, err = CompareCounts("f", []float64{16, 18, 16, 14, 12, 12}, []float64{16, 16, 16, 16, 16, 8}, MethodChiSquare, 0)
	require.NoError(t, err)
	require.InDelta(t, 0.67309, *r.PValue, 5e-6)
	require.False(t, r.Drift)

	r, err = CompareCounts("f", []float64{5, 5, 5}, []float64{50, 50, 50}, "", 0)
	require.NoError(t, err)
	require.Equal(t, MethodPSI, r.Method)
	require.InDelta(t, 0, r.Score, 1e-12, "the same shares: no drift")

	f := func(ref, cur []float64, m Method, msg string) {
		t.Helper()
		_, err := CompareCounts("f", ref, cur, m, 0)
		require.ErrorIs(t, err, ErrInput)
		require.ErrorContains(t, err, msg)
	}
	f([]float64{1, 2}, []float64{1, 2}, MethodKS, "needs the values")
	f([]float64{1, 2}, []float64{1}, MethodPSI, "2 bins and the current 1")
	f([]float64{0, 0}, []float64{1, 2}, MethodPSI, "no observation in the baseline")
	f([]float64{1, 2}, []float64{0, 0}, MethodPSI, "no observation in the current")
	f([]float64{1, -2}, []float64{1, 2}, MethodPSI, "negative or not a number")
}
