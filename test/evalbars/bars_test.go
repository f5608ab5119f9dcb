// Package evalbars runs the evaluation's small suite through the real
// diagnosis engine and fails below the bars: what CI checks on
// every change (vigil eval --suite small --check does the same by hand).
package evalbars

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/eval"
)

// TestSmallSuiteBars simulates every in-scope fault kind once and three
// healthy runs (30 simulated minutes each), and the robust generator's
// first 20 healthy runs and each of its faults at half and double size,
// diagnoses them, and checks AC@1, AC@3, false alarms and the hardware
// kinds' time to detect: the robust runs against the robust suite's bars.
func TestSmallSuiteBars(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 100 generated cases through the engine (-short)")
	}
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	cases, err := eval.Suite(eval.SuiteSmall, 1)
	require.NoError(t, err)
	res, err := eval.Run(t.Context(), cases, eval.Options{Diagnose: eng.Diagnose, Parallel: 2, TempDir: t.TempDir()})
	require.NoError(t, err)
	var sb strings.Builder
	require.NoError(t, res.WriteText(&sb))
	if os.Getenv("VIGIL_EVAL_PRINT") != "" || t.Failed() {
		t.Log("\n" + sb.String())
	}
	missed := res.Check(eval.DefaultBars())
	require.Empty(t, missed, "bars missed:\n%s\n%s", strings.Join(missed, "\n"), sb.String())
}
