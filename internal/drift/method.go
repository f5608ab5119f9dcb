package drift

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Method is a drift measure.
type Method string

// The methods.
const (
	MethodPSI         Method = "psi"
	MethodKL          Method = "kl"
	MethodJS          Method = "js"
	MethodHellinger   Method = "hellinger"
	MethodLInf        Method = "linf"
	MethodWasserstein Method = "wasserstein"
	MethodKS          Method = "ks"
	MethodChiSquare   Method = "chisquare"
)

// Methods lists every method.
var Methods = []Method{MethodPSI, MethodKL, MethodJS, MethodHellinger, MethodLInf, MethodWasserstein, MethodKS, MethodChiSquare}

// ParseMethod reads a method name; the empty string is the default ("").
func ParseMethod(s string) (Method, error) {
	m := Method(strings.ToLower(s))
	if m == "" || slices.Contains(Methods, m) {
		return m, nil
	}
	names := make([]string, len(Methods))
	for i, x := range Methods {
		names[i] = string(x)
	}
	return "", fmt.Errorf("%w: unknown method %q (want %s)", ErrInput, s, strings.Join(names, ", "))
}

// DefaultThreshold is the method's documented threshold: on the score for
// distances, on the p-value for ks and chisquare.
func (m Method) DefaultThreshold() float64 {
	if m.HasPValue() {
		return 0.05
	}
	return 0.1
}

// HasPValue reports whether the method is a test with a p-value.
func (m Method) HasPValue() bool { return m == MethodKS || m == MethodChiSquare }

// NeedsValues reports whether the method reads the values, not bins.
func (m Method) NeedsValues() bool { return m == MethodKS || m == MethodWasserstein }

// PSI levels.
const (
	PSIModerate    = 0.1
	PSISignificant = 0.25
)

// maxDiscrete is how many distinct values a numeric reference may have to
// be binned by value and to count as discrete for the default method.
const maxDiscrete = 5

// smallSample is the reference size up to which the default method is a
// statistical test.
const smallSample = 1000

// defaultMethod is Evidently's choice by type and reference size.
func defaultMethod(categorical, discrete bool, refRows int64) Method {
	switch {
	case refRows <= smallSample && (categorical || discrete):
		return MethodChiSquare
	case refRows <= smallSample:
		return MethodKS
	case categorical || discrete:
		return MethodJS
	}
	return MethodWasserstein
}

// BinRule says how numeric features are binned.
type BinRule string

// The bin rules.
const (
	BinsQuantile BinRule = "quantile"
	BinsSturges  BinRule = "sturges"
	BinsDoane    BinRule = "doane"
)

// DefaultQuantileBins is the number of quantile bins: deciles.
const DefaultQuantileBins = 10

// maxBins caps Sturges and Doane.
const maxBins = 1000

// binEdges returns the interior edges of the bins for a numeric reference:
// bin i holds the values in (edges[i−1], edges[i]], with open outer bins.
func binEdges(rule BinRule, nq int, m *moments, sv func() dist) []float64 {
	if !m.distinctOverflowed {
		// At most five distinct values: one bin per value.
		e := slices.Clone(m.distinct)
		slices.Sort(e)
		return e
	}
	if m.minimum == m.maximum {
		return []float64{m.minimum}
	}
	var k int
	switch rule {
	case BinsSturges:
		k = int(math.Ceil(math.Log2(m.n))) + 1
	case BinsDoane:
		sg := math.Sqrt(6 * (m.n - 2) / ((m.n + 1) * (m.n + 3)))
		k = int(math.Ceil(1 + math.Log2(m.n) + math.Log2(1+math.Abs(m.skew())/sg)))
	default:
		qs := make([]float64, 0, nq-1)
		for i := 1; i < nq; i++ {
			qs = append(qs, float64(i)/float64(nq))
		}
		return slices.Compact(quantiles(sv(), qs))
	}
	k = min(max(k, 1), maxBins)
	w := (m.maximum - m.minimum) / float64(k)
	e := make([]float64, 0, k)
	for i := 1; i < k; i++ {
		e = append(e, m.minimum+float64(i)*w)
	}
	return e
}

// binOf is the bin of x among len(edges)+1 bins.
func binOf(edges []float64, x float64) int {
	return sort.SearchFloat64s(edges, x)
}
