package api

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

func TestCheckQuery(t *testing.T) {
	l := QueryLimits{MaxBytes: 4096, MaxDepth: 8, MaxOperators: 10}
	for _, q := range []string{
		`up`,
		`sum by (job) (rate(http_requests_total{code=~"5..", job!="a"}[5m])) / sum by (job) (rate(http_requests_total[5m])) > 0.05`,
		// Operators in strings, comments, matchers and numbers are none.
		`up{job="a or b and c", path="/x-y*z"} # or and unless + - * /` + "\n",
		`histogram_quantile(0.99, sum by (le) (rate(x_bucket[1m]))) * 1e-3 + 2.5e+2`,
		`ordering_total or unless_total`, // two words that only start like operators, one operator
		`up offset 5m`,
	} {
		require.NoError(t, checkQuery(q, l), q)
	}
	for q, want := range map[string]string{
		strings.Repeat("x", 4097):                                     "query.max_bytes",
		strings.Repeat("(", 9) + "up" + strings.Repeat(")", 9):        "query.max_depth",
		strings.Repeat("up or ", 11) + "up":                           "query.max_operators",
		strings.Repeat("up + ", 6) + strings.Repeat("up * ", 6) + "1": "query.max_operators",
		`sum(rate({a="1"}[5m])) ` + strings.Repeat("== 1 ", 11):       "query.max_operators",
	} {
		err := checkQuery(q, l)
		require.Error(t, err, q)
		require.Contains(t, err.Error(), want)
	}
	// A long regular expression is fine until the byte bound.
	require.NoError(t, checkQuery(`up{pod=~"`+strings.Repeat("pod-a|", 600)+`x"}`, l))
}

// FuzzCheckQuery: any bytes get an answer, never a panic, and the
// operator bound holds: a query the parser reads as more binary
// operators than the bound is refused (the scan may count more, never
// fewer).
func FuzzCheckQuery(f *testing.F) {
	for _, s := range []string{`up`, `sum(rate(x[5m])) by (a) > 1`, `"unterminated`, "# comment only", `{a="b"} or {c=~"d"}`,
		`1e-3 - -2`, "((((((", "`raw` + 'q'", `a and b unless c or d`, `a or b and c unless d or e`, `x atan2 y ^ 2 % 3`, `a == bool b != c`} {
		f.Add(s)
	}
	l := QueryLimits{MaxBytes: 1 << 20, MaxDepth: 1 << 20, MaxOperators: 3}
	p := parser.NewParser(parser.Options{})
	f.Fuzz(func(t *testing.T, q string) {
		err := checkQuery(q, l)
		expr, perr := p.ParseExpr(q)
		if perr != nil {
			return
		}
		binary := 0
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if _, ok := n.(*parser.BinaryExpr); ok {
				binary++
			}
			return nil
		})
		if binary > l.MaxOperators && err == nil {
			t.Fatalf("%q has %d binary operators and passed a bound of %d", q, binary, l.MaxOperators)
		}
	})
}
