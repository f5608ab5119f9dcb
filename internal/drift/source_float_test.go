package drift

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseDecimalCommonForms: what CSV writers print — fixed decimals,
// exponents, shortest round-trip, integers — takes the fast path and reads
// as strconv.ParseFloat reads it, bit for bit.
func TestParseDecimalCommonForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	f := func(s string, fast bool) {
		t.Helper()
		want, err := strconv.ParseFloat(s, 64)
		got, ok := parseDecimal([]byte(s))
		require.Equal(t, fast, ok, "fast path for %q", s)
		if ok {
			require.NoError(t, err, s)
			require.Equal(t, math.Float64bits(want), math.Float64bits(got), "%q: %v vs %v", s, got, want)
		}
	}
	for range 20000 {
		x := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6))
		for prec := range 9 {
			f(strconv.FormatFloat(x, 'f', prec, 64), len(strconv.FormatFloat(math.Abs(x), 'f', prec, 64)) <= 20)
		}
		f(strconv.FormatFloat(x, 'e', 6, 64), true)
		f(strconv.FormatFloat(x, 'E', 3, 64), true)
		f(strconv.FormatFloat(float64(float32(x)), 'g', -1, 32), true)
		f(strconv.Itoa(rng.IntN(1_000_000)-500_000), true)
	}
	// Forms the fast path leaves to strconv.
	for _, s := range []string{"", "-", ".", "e5", "1e", "1e+", "inf", "-Inf", "NaN", "0x1p-2", "1_000", " 1", "1 ",
		"12345678901234567890", "9007199254740993", "1e-23", "1e38", "123456789012345678e-3", "1.7976931348623157e308", "4.9e-324", "1.5x"} {
		f(s, false)
	}
	// Signs, bare points and zeros as strconv reads them.
	for _, s := range []string{"+1", "-0", "+0", "-0.000", ".5", "5.", "-.5e1", "0e999999", "-0e-999999", "007", "1E5", "1e23", "9007199254740991", "12345678901234e-3"} {
		f(s, true)
	}
}

// FuzzParseDecimal: whenever the fast path reads a number, strconv reads
// the same bits from the same text.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"-0.1234", "1e5", "1.7976931348623157e308", "4.9e-324", "0.1", "123456789012345678",
		"9007199254740993", "1e23", "-0", "+.5", "5.", "1_0", "0x1p3", "inf", "NaN", " 1", "1e", "1e+", ".", "-",
		"00000000000000000001", "1e22", "1e37", "999999999999999e22", "1.5,2", "3e-5x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := parseDecimal([]byte(s)); ok {
			want, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err, s)
			require.Equal(t, math.Float64bits(want), math.Float64bits(v), "%q", s)
		}
		if v, n, ok := decimalPrefix([]byte(s)); ok {
			require.LessOrEqual(t, n, len(s))
			want, err := strconv.ParseFloat(s[:n], 64)
			require.NoError(t, err, s[:n])
			require.Equal(t, math.Float64bits(want), math.Float64bits(v), "%q", s[:n])
		}
	})
}
