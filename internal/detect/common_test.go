package detect

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCommonOnset(t *testing.T) {
	// 13 series, 4 of them shift at 60 by different amounts and directions,
	// the others are noise.
	deltas := []float64{6, -8, 5, 12}
	for seed := range uint64(50) {
		series := make([][]float64, 13)
		for k := range series {
			if k < len(deltas) {
				series[k] = step(seed*100+uint64(k), 120, 60, deltas[k])
			} else {
				series[k] = noise(seed*100+uint64(k), 120)
			}
		}
		// A blip in one of the shifted series does not move the onset.
		series[0][30] += 50
		i, ok := CommonOnset(series, OnsetOptions{})
		require.True(t, ok, "seed %d", seed)
		require.InDelta(t, 60, i, 2, "seed %d", seed)
	}
}

func TestCommonOnsetAligned(t *testing.T) {
	// Series aligned at the end: a shorter one shifts at the same instant.
	long := step(1, 120, 60, 6)
	short := step(2, 90, 30, -7) // index 30 of 90 is index 60 of 120
	late := step(3, 120, 90, 6)  // a later, lone shift loses to the two
	i, ok := CommonOnset([][]float64{short, late, long}, OnsetOptions{})
	require.True(t, ok)
	require.InDelta(t, 60, i, 1)
}

func TestCommonOnsetNone(t *testing.T) {
	f := func(name string, series [][]float64) {
		t.Helper()
		_, ok := CommonOnset(series, OnsetOptions{})
		require.False(t, ok, name)
	}
	f("nil", nil)
	f("empty series", [][]float64{nil, {}})
	f("noise", [][]float64{noise(1, 120), noise(2, 120), noise(3, 60)})
	f("flat within the floor", [][]float64{append(flat(60, 1000), flat(60, 1004)...)})
}
