package diagnose

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCounterRises(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		in   []float64
		want []float64
	}{
		{"history at the first step is no rise", []float64{3, 3, 3}, []float64{0, 0, 0}},
		{"a rise after a stale gap counts from the last value", []float64{3, nan, nan, 5, 5}, []float64{0, 0, 0, 2, 0}},
		{"born inside the window from the writer's zero", []float64{nan, 0, 1, 1, 4}, []float64{0, 0, 1, 0, 3}},
		{"first seen inside the window above zero", []float64{nan, nan, 7}, []float64{0, 0, 1}},
		{"a reset counts from zero", []float64{9, 9, 2}, []float64{0, 0, 2}},
		{"nothing", []float64{nan, nan}, []float64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, counterRises(tc.in))
		})
	}
}

func TestPCIKey(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0:3b:00", // dcgm-exporter
		"0000:3b:00":       "0:3b:00", // the driver's NVRM line
		"3b:00":            "0:3b:00",
		"0001:AF:1F.3":     "1:af:1f",
		"":                 "",
		"zz:00":            "",
		"0:1:2:3":          "",
	} {
		require.Equal(t, want, pciKey(in), in)
	}
}
