package slo

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// functions242 are the PromQL functions Prometheus 2.42 has: generated rules
// must load in it, so expressions may use no other.
var functions242 = []string{
	"abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
	"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
	"count_over_time", "days_in_month", "day_of_month", "day_of_week", "day_of_year", "deg",
	"delta", "deriv", "exp", "floor", "histogram_count", "histogram_fraction",
	"histogram_quantile", "histogram_sum", "hour", "idelta", "increase", "irate",
	"label_join", "label_replace", "last_over_time", "ln", "log10", "log2", "max_over_time",
	"min_over_time", "minute", "month", "pi", "predict_linear", "present_over_time",
	"quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh",
	"sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time",
	"tan", "tanh", "time", "timestamp", "vector", "year",
}

// newParser returns a PromQL parser that knows only Prometheus 2.42's
// functions and no experimental syntax.
func newParser() parser.Parser {
	fns := maps.Clone(parser.Functions)
	maps.DeleteFunc(fns, func(name string, _ *parser.Function) bool { return !slices.Contains(functions242, name) })
	return parser.NewParser(parser.Options{Functions: fns})
}

// checkExpr parses expr as Prometheus 2.42 would: its functions only, and
// legacy metric and label names only (2.42 has no quoted UTF-8 names).
func checkExpr(p parser.Parser, expr string) error {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return err
	}
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if bad != nil {
			return bad
		}
		switch n := n.(type) {
		case *parser.VectorSelector:
			for _, m := range n.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					if !model.LegacyValidation.IsValidMetricName(m.Value) {
						bad = fmt.Errorf("metric name %q needs quoting, which Prometheus 2.42 cannot read", m.Value)
					}
				} else if !model.LegacyValidation.IsValidLabelName(m.Name) {
					bad = fmt.Errorf("label name %q needs quoting, which Prometheus 2.42 cannot read", m.Name)
				}
			}
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				if !model.LegacyValidation.IsValidLabelName(l) {
					bad = fmt.Errorf("label name %q needs quoting, which Prometheus 2.42 cannot read", l)
				}
			}
		}
		return bad
	})
	return bad
}

// metricNames returns the metric names an expression selects, sorted.
func metricNames(p parser.Parser, expr string) []string {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil
	}
	var out []string
	for _, vs := range parser.ExtractSelectors(e) {
		for _, m := range vs {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual && !slices.Contains(out, m.Value) {
				out = append(out, m.Value)
			}
		}
	}
	slices.Sort(out)
	return out
}

// selector writes metric{matchers, extra...}.
func selector(metric, matchers string, extra ...string) string {
	ms := slices.DeleteFunc(append([]string{strings.TrimSpace(matchers)}, extra...), func(s string) bool { return s == "" })
	if len(ms) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(ms, ", ") + "}"
}

// renamed wraps expr so that the source's stored labels become the
// canonical ones: one alias is a label_replace; several are joined first,
// so that the first non-empty one wins. The helper label vanishes in the
// aggregation that always follows.
func (s Source) renamed(expr string) string {
	for _, canon := range slices.Sorted(maps.Keys(s.Rename)) {
		from := s.Rename[canon]
		switch {
		case len(from) == 1 && from[0] == canon:
		case len(from) == 1:
			expr = fmt.Sprintf(`label_replace(%s, %q, "$1", %q, "(.+)")`, expr, canon, from[0])
		default:
			tmp := "vigil_rename_" + canon
			joined := fmt.Sprintf(`label_join(%s, %q, ";", %s)`, expr, tmp, quoteAll(from))
			expr = fmt.Sprintf(`label_replace(%s, %q, "$1", %q, ";*([^;]+).*")`, joined, canon, tmp)
		}
	}
	return expr
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// aggregate writes op by (by) (expr), or op(expr) without labels.
func aggregate(op string, by []string, expr string) string {
	if len(by) == 0 {
		return op + "(" + expr + ")"
	}
	return op + " by (" + strings.Join(by, ", ") + ") (" + expr + ")"
}

// alternatives joins per-source expressions with or: for each entity the
// first source that has data wins.
func alternatives(exprs []string) string {
	if len(exprs) == 1 {
		return exprs[0]
	}
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = "(\n  " + indent(e) + "\n)"
	}
	return strings.Join(parts, "\nor\n")
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// leRegexp matches the le label of a bucket bound whatever the exporter's
// float formatting: 1, 1.0 and 1e+00 style.
func leRegexp(v float64) string {
	forms := []string{strconv.FormatFloat(v, 'f', -1, 64), strconv.FormatFloat(v, 'g', -1, 64)}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		forms = append(forms, strconv.FormatFloat(v, 'f', 1, 64))
	}
	slices.Sort(forms)
	forms = slices.Compact(forms)
	for i, f := range forms {
		forms[i] = regexp.QuoteMeta(f)
	}
	return strings.Join(forms, "|")
}

// num formats a computed number for PromQL and YAML with 12 significant
// digits, so that float noise (0.1/0.001 = 100.00000000000001) vanishes.
func num(f float64) string { return strconv.FormatFloat(round(f), 'g', -1, 64) }

func round(f float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 12, 64), 64)
	return r
}

// durString writes a duration in days when it is whole days (28d, not 4w).
func durString(d model.Duration) string {
	const day = model.Duration(24 * 60 * 60 * 1e9)
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}
