package drift

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSketchBounded feeds a sample 2M values: what it stores is capped by
// the sketch, not by the row count, and its ranks stay within the bound.
func TestSketchBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	s := sample{limit: 1 << 16}
	exact := make([]float64, 0, 2_000_000)
	maxStored := 0
	for i := range 2_000_000 {
		x := rng.NormFloat64()
		s.add(x)
		exact = append(exact, x)
		if i%1000 == 0 {
			maxStored = max(maxStored, s.stored())
		}
	}
	require.False(t, s.exact())
	levels := len(s.sk.levels)
	require.LessOrEqual(t, levels, int(math.Ceil(math.Log2(2e6/SketchK)))+2)
	require.LessOrEqual(t, maxStored, levels*SketchK, "stored values are capped by the sketch")
	// The KS distance between the sketch and the exact values is the
	// largest rank error: within the stated bound.
	d := ksStat(s.sorted(), weights(exact))
	require.LessOrEqual(t, d, s.rankError())
	t.Logf("levels %d, stored %d, rank error %.4g (bound %.4g)", levels, maxStored, d, s.rankError())
}

// pipedCSV streams rows×cols of N(shift_j, 1) values through an io.Pipe.
func pipedCSV(rows, cols int, shift func(col int) float64, seed uint64) Opener {
	return func() (Source, error) {
		pr, pw := io.Pipe()
		go func() {
			rng := rand.New(rand.NewPCG(seed, 1))
			w := bufio.NewWriterSize(pw, 1<<16)
			for j := range cols {
				if j > 0 {
					w.WriteByte(',')
				}
				fmt.Fprintf(w, "f%d", j)
			}
			w.WriteByte('\n')
			var buf []byte
			for range rows {
				for j := range cols {
					if j > 0 {
						w.WriteByte(',')
					}
					buf = strconv.AppendFloat(buf[:0], rng.NormFloat64()+shift(j), 'f', 4, 64)
					w.Write(buf)
				}
				w.WriteByte('\n')
			}
			pw.CloseWithError(w.Flush())
		}()
		return NewCSV(pr)
	}
}

// TestStreamingBounded compares 2M rows × 10 features streamed through
// pipes: every sample overflows its exact store into a sketch, the
// reference is read twice, and only the shifted feature drifts.
func TestStreamingBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 2M rows × 10 features twice; skipped with -short")
	}
	const rows, cols = 2_000_000, 10
	none := func(int) float64 { return 0 }
	one := func(j int) float64 {
		if j == 3 {
			return 0.5
		}
		return 0
	}
	rep, err := Compare(t.Context(), pipedCSV(rows, cols, none, 1), pipedCSV(rows, cols, one, 2), Options{Method: MethodKS})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Drifted)
	for _, r := range rep.Features {
		require.EqualValues(t, rows, r.ReferenceRows)
		require.False(t, r.Exact, "2M values per feature exceed the exact store")
		require.Equal(t, r.Feature == "f3", r.Drift, r.Feature)
		if r.Feature == "f3" {
			// D of N(0,1) vs N(0.5,1) is 2Φ(0.25)−1 = 0.1974.
			require.InDelta(t, 0.1974, r.Score, 0.005)
		} else {
			require.Less(t, r.Score, 0.005)
		}
	}
}
