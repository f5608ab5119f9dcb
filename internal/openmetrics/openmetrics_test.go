package openmetrics

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendValue(t *testing.T) {
	f := func(v float64, want string) {
		t.Helper()
		require.Equal(t, want, string(AppendValue(nil, v)))
	}
	f(math.NaN(), "NaN")
	f(math.Inf(1), "+Inf")
	f(math.Inf(-1), "-Inf")
	f(42, "42")
	f(-3, "-3")
	f(0.25, "0.25")
	f(1e-7, "1e-07")
	f(1e20, "1e+20")
}

func TestAppendSeconds(t *testing.T) {
	f := func(ms int64, want string) {
		t.Helper()
		require.Equal(t, want, string(AppendSeconds(nil, ms)))
	}
	f(1794448800000, "1794448800")
	f(1794448800015, "1794448800.015")
	f(1500, "1.500")
}

func TestEscapeLabelValue(t *testing.T) {
	require.Equal(t, `a\"b\\c\nd`, EscapeLabelValue("a\"b\\c\nd"))
}
