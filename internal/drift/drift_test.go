package drift

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// csvOf opens the CSV text s.
func csvOf(s string) Opener {
	return func() (Source, error) { return NewCSV(strings.NewReader(s)) }
}

// column is a one-column CSV named x.
func column[T any](vals ...T) string {
	var b strings.Builder
	b.WriteString("x\n")
	for _, v := range vals {
		fmt.Fprintf(&b, "%v\n", v)
	}
	return b.String()
}

// repeat lists each category as often as its count says.
func repeat(counts ...int) []string {
	var out []string
	for i, c := range counts {
		for range c {
			out = append(out, fmt.Sprintf("c%d", i))
		}
	}
	return out
}

func compare(t *testing.T, ref, cur string, o Options) Result {
	t.Helper()
	rep, err := Compare(t.Context(), csvOf(ref), csvOf(cur), o)
	require.NoError(t, err)
	require.Len(t, rep.Features, 1)
	return rep.Features[0]
}

func TestReferenceValues(t *testing.T) {
	cat := Options{Categorical: []string{"x"}}
	with := func(m Method) Options { o := cat; o.Method = m; return o }

	t.Run("Evidently PSI [3,2,2] vs [1,2,3]", func(t *testing.T) {
		r := compare(t, column(3, 2, 2), column(1, 2, 3), with(MethodPSI))
		require.InDelta(t, 2.93, r.Score, 0.01)
		require.True(t, r.Drift)
		require.Equal(t, "significant", r.Level)
	})
	ref, cur := column(repeat(16, 18, 16, 14, 12, 12)...), column(repeat(16, 16, 16, 16, 16, 8)...)
	t.Run("chi-square p", func(t *testing.T) {
		r := compare(t, ref, cur, with(MethodChiSquare))
		require.NotNil(t, r.PValue)
		require.InDelta(t, 0.67309, *r.PValue, 5e-6)
		require.InDelta(t, 3.1746, r.Score, 1e-4)
		require.False(t, r.Drift)
	})
	t.Run("Hellinger", func(t *testing.T) {
		r := compare(t, ref, cur, with(MethodHellinger))
		require.InDelta(t, 0.06812, r.Score, 1e-5)
		require.Nil(t, r.PValue)
	})
	t.Run("NannyML L-infinity", func(t *testing.T) {
		base := []string{"a", "a", "b", "b", "c", "c"}
		r := compare(t, column(base...), column(append(base, "d")...), with(MethodLInf))
		require.InDelta(t, 0.14, r.Score, 0.005)
		r = compare(t, column(base...), column("b", "b", "b", "b", "b"), with(MethodLInf))
		require.InDelta(t, 0.67, r.Score, 0.005)
	})
	t.Run("KS exact as scipy's ks_2samp", func(t *testing.T) {
		// Disjoint samples: D = 1 and p = 2/C(n+m, n).
		r := compare(t, column(1, 2, 3, 4, 5), column(6, 7, 8, 9, 10), Options{Method: MethodKS})
		require.Equal(t, 1.0, r.Score)
		require.InDelta(t, 2.0/252, *r.PValue, 1e-12)
		r = compare(t, column(1, 2, 3), column(4, 5, 6), Options{Method: MethodKS})
		require.InDelta(t, 0.1, *r.PValue, 1e-12)
		// x = 1..4 vs 3..6: D = 0.5, p = 1 − (paths inside)/70 = 34/70,
		// checked against enumeration below.
		r = compare(t, column(1, 2, 3, 4), column(3.5, 4.5, 5, 6), Options{Method: MethodKS})
		require.Equal(t, 0.75, r.Score)
		require.InDelta(t, bruteKSP(4, 4, 0.75), *r.PValue, 1e-12)
	})
	t.Run("Wasserstein by hand", func(t *testing.T) {
		// [0,1] vs [0,3]: |F−G| = 0.5 on [1,3): W = 1; σ(ref) = 0.5.
		r := compare(t, column(0, 1), column(0, 3), Options{Method: MethodWasserstein})
		require.InDelta(t, 2.0, r.Score, 1e-12)
		// A shift by 5 moves W by 5; σ([0,1,3]) = √(14/9).
		r = compare(t, column(0, 1, 3), column(5, 6, 8), Options{Method: MethodWasserstein})
		require.InDelta(t, 5/math.Sqrt(14.0/9), r.Score, 1e-12)
	})
}

// bruteKSP enumerates every split of n+m distinct values into samples of n
// and m and returns the share whose D is at least d.
func bruteKSP(n, m int, d float64) float64 {
	total, hit := 0, 0
	for mask := 0; mask < 1<<(n+m); mask++ {
		if popcount(mask) != n {
			continue
		}
		total++
		var ca, cb, dm float64
		for i := 0; i < n+m; i++ {
			if mask&(1<<i) != 0 {
				ca++
			} else {
				cb++
			}
			dm = max(dm, math.Abs(ca/float64(n)-cb/float64(m)))
		}
		if dm >= d-1e-12 {
			hit++
		}
	}
	return float64(hit) / float64(total)
}

func popcount(x int) int {
	c := 0
	for ; x > 0; x &= x - 1 {
		c++
	}
	return c
}

func TestKSExactMatchesEnumeration(t *testing.T) {
	for _, nm := range [][2]int{{3, 4}, {5, 5}, {4, 7}, {6, 6}} {
		n, m := nm[0], nm[1]
		for k := 1; k <= n*m; k++ {
			d := float64(k) / float64(n*m)
			require.InDelta(t, bruteKSP(n, m, d), ksExactP(n, m, int64(k)), 1e-9, "n=%d m=%d d=%v", n, m, d)
		}
	}
}

func TestKolmogorovQ(t *testing.T) {
	// The classic critical values of the Kolmogorov distribution.
	require.InDelta(t, 0.10, kolmogorovQ(1.2238), 2e-4)
	require.InDelta(t, 0.05, kolmogorovQ(1.3581), 2e-4)
	require.InDelta(t, 0.01, kolmogorovQ(1.6276), 2e-4)
	// The two series agree where they meet.
	require.InDelta(t, kolmogorovQ(1.18-1e-9), kolmogorovQ(1.18), 1e-8)
	require.Equal(t, 1.0, kolmogorovQ(0))
}

func TestGammaQ(t *testing.T) {
	for _, x := range []float64{0.1, 0.5, 1.9, 2.1, 10, 40} {
		require.InDelta(t, math.Exp(-x), gammaQ(1, x), 1e-12, "x=%v", x)
		// Q(1/2, x) = erfc(√x).
		require.InDelta(t, math.Erfc(math.Sqrt(x)), gammaQ(0.5, x), 1e-12, "x=%v", x)
	}
}

func TestEmptyBinRule(t *testing.T) {
	require.Equal(t, []float64{0.0001, 0.5, 0.5}, fillEmpty([]float64{0, 0.5, 0.5}))
	require.Equal(t, []float64{0.00005 / 1e6, 0.00005, 0.99995}, fillEmpty([]float64{0, 0.00005, 0.99995}))
}

func normals(rng *rand.Rand, n int, mu, sd float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = mu + sd*rng.NormFloat64()
	}
	return out
}

func TestIdenticalSamplesDoNotDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	num := column(normals(rng, 500, 3, 2)...)
	cats := column("a", "b", "b", "c", "c", "c")
	for _, m := range Methods {
		t.Run(string(m), func(t *testing.T) {
			r := compare(t, num, num, Options{Method: m})
			require.InDelta(t, 0, r.Score, 1e-9)
			require.False(t, r.Drift)
			if m.HasPValue() {
				require.InDelta(t, 1, *r.PValue, 1e-9)
			}
			if !m.NeedsValues() {
				r = compare(t, cats, cats, Options{Method: m, Categorical: []string{"x"}})
				require.InDelta(t, 0, r.Score, 1e-9)
			}
		})
	}
}

func TestSymmetricMethods(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		p, q := make([]float64, 6), make([]float64, 6)
		for i := range p {
			p[i], q[i] = rng.Float64(), rng.Float64()
		}
		if rng.IntN(2) == 0 {
			p[rng.IntN(6)] = 0
		}
		p, q = shareOf(p), shareOf(q)
		for name, fn := range map[string]func(a, b []float64) float64{"psi": PSI, "js": JS, "hellinger": Hellinger, "linf": LInf} {
			require.InDelta(t, fn(p, q), fn(q, p), 1e-12, name)
		}
		a, b := weights(normals(rng, 40, 0, 1)), weights(normals(rng, 30, 0.5, 2))
		require.InDelta(t, ksStat(a, b), ksStat(b, a), 1e-12)
		require.InDelta(t, wasserstein1(a, b), wasserstein1(b, a), 1e-12)
	}
}

func weights(v []float64) dist {
	s := sample{limit: len(v)}
	for _, x := range v {
		s.add(x)
	}
	return s.sorted()
}

func TestScaleInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ref, cur := normals(rng, 300, 10, 3), normals(rng, 300, 11, 3)
	scaled := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = 7*x - 40
		}
		return out
	}
	for _, m := range []Method{MethodWasserstein, MethodKS, MethodPSI} {
		a := compare(t, column(ref...), column(cur...), Options{Method: m})
		b := compare(t, column(scaled(ref)...), column(scaled(cur)...), Options{Method: m})
		require.InDelta(t, a.Score, b.Score, 1e-9, string(m))
	}
}

func TestPSIGrowsWithShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	ref := column(normals(rng, 5000, 0, 1)...)
	prev := -1.0
	for _, shift := range []float64{0, 0.1, 0.3, 0.6, 1, 2} {
		r := compare(t, ref, column(normals(rng, 5000, shift, 1)...), Options{Method: MethodPSI})
		require.Greater(t, r.Score, prev, "shift %v", shift)
		prev = r.Score
	}
	require.Greater(t, prev, PSISignificant)
}

func TestDefaultMethod(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	small, big := column(normals(rng, 1000, 0, 1)...), column(normals(rng, 1001, 0, 1)...)
	require.Equal(t, MethodKS, compare(t, small, small, Options{}).Method)
	require.Equal(t, MethodWasserstein, compare(t, big, big, Options{}).Method)
	require.Equal(t, MethodChiSquare, compare(t, column(1, 2, 2, 3), column(1, 2, 3), Options{}).Method, "≤ 5 distinct values")
	require.Equal(t, MethodChiSquare, compare(t, column("a", "b"), column("a"), Options{}).Method)
	many := make([]string, 1001)
	for i := range many {
		many[i] = []string{"x", "y", "z"}[i%3]
	}
	r := compare(t, column(many...), column(many...), Options{})
	require.Equal(t, MethodJS, r.Method)
	require.Equal(t, "categorical", r.Type)
}

func TestMissingValuesAreCounted(t *testing.T) {
	r := compare(t, "x,y\n1,a\n,b\nNaN,c\n4,\n", "x,y\nNA,a\n2,b\n3,c\n", Options{Method: MethodPSI, Features: []string{"x"}})
	require.EqualValues(t, 4, r.ReferenceRows)
	require.EqualValues(t, 2, r.MissingReference)
	require.EqualValues(t, 1, r.MissingCurrent)
	require.False(t, math.IsNaN(r.Score))
}

func TestLateCategoricalReference(t *testing.T) {
	// The reference turns non-numeric at its last row: the feature is
	// categorical, counted from the first row on a second pass.
	r := compare(t, column("1", "2", "2", "x"), column("1", "2", "x", "x"), Options{Method: MethodLInf})
	require.Equal(t, "categorical", r.Type)
	require.InDelta(t, 0.25, r.Score, 1e-12)
}

func TestZeroVarianceReference(t *testing.T) {
	r := compare(t, column(5, 5, 5), column(5, 5, 5), Options{Method: MethodWasserstein})
	require.Zero(t, r.Score)
	require.False(t, r.Drift)
	require.Contains(t, r.Note, "zero variance")
	r = compare(t, column(5, 5, 5), column(5, 5, 6), Options{Method: MethodWasserstein})
	require.InDelta(t, 1.0/3, r.Score, 1e-12)
	require.True(t, r.Drift)
}

func TestBadInput(t *testing.T) {
	f := func(name, ref, cur string, o Options, want string) {
		t.Run(name, func(t *testing.T) {
			_, err := Compare(t.Context(), csvOf(ref), csvOf(cur), o)
			require.ErrorIs(t, err, ErrInput)
			require.ErrorContains(t, err, want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	f("empty file", "", column(1), Options{}, "empty file")
	f("no rows", "x\n", column(1), Options{}, "reference: bad input: no rows")
	f("no current rows", column(1), "x\n", Options{}, "current: bad input: no rows")
	f("all NaN", column("NaN", "", "NA"), column(1), Options{}, `feature "x" has no values (all missing)`)
	f("all missing current", "x,y\n1,1\n2,2\n", "x,y\n,1\nNaN,2\n", Options{}, `feature "x" has no values`)
	f("non-numeric current", column(1, 2), column("1", "abc"), Options{}, `row 2: feature "x": value "abc" is not a number`)
	f("infinite", column("1", "inf"), column(1), Options{}, "infinite")
	f("missing feature", column(1), column(1), Options{Features: []string{"x", "y"}}, `feature "y" is not a column of the reference`)
	f("missing in current", "x,y\n1,2\n", column(1), Options{Features: []string{"y"}}, `feature "y" is not a column of the current file`)
	f("no shared column", "a\n1\n", "b\n1\n", Options{}, "share no column")
	f("ks on categorical", column("a", "b"), column("a"), Options{Method: MethodKS}, "method ks needs numbers")
	f("unknown method", column(1), column(1), Options{Method: "tvd"}, `unknown method "tvd"`)
	f("ragged row", "x,y\n1,2\n3\n", column(1), Options{}, "wrong number of fields")
	f("duplicate header", "x,x\n1,2\n", column(1), Options{}, "appears twice")
	f("too many categories", column("a", "b", "c"), column("a"), Options{MaxCategories: 2, Categorical: []string{"x"}}, "more than 2 categories")
}

func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("x,y\n1,a\n2,b\n"))
	f.Add([]byte("x\n\"1\n"))
	f.Add([]byte("\ufeffx,y\nNaN,\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := NewCSV(strings.NewReader(string(data)))
		if err != nil {
			require.ErrorIs(t, err, ErrInput)
			return
		}
		for range 10000 {
			if _, err := s.Next(); err != nil {
				break
			}
		}
		open := func() (Source, error) { return NewCSV(strings.NewReader(string(data))) }
		for _, m := range []Method{"", MethodPSI, MethodKS} {
			rep, err := Compare(t.Context(), open, open, Options{Method: m})
			if err != nil {
				continue
			}
			for _, r := range rep.Features {
				require.False(t, math.IsNaN(r.Score) || math.IsInf(r.Score, 0), "score %v", r.Score)
			}
		}
	})
}
