package diagnose_test

// The load side of the script tests: a case's scenes, macros and cuts
// expanded into one promqltest load block.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// scriptParser reads series lines as promqltest does.
var scriptParser = parser.NewParser(promqltest.TestParserOpts)

// scriptSeries is one series of a case's load block.
type scriptSeries struct {
	lset   labels.Labels
	values string
	// vals are the values parsed; n how many samples (omitted ones too)
	// they give; where the line that defined the series.
	vals  []parser.SequenceValue
	n     int
	where string
}

// cutSeries reads "cut {selector} from D [to D] [stale]" and omits the
// samples of every series defined so far that the selector matches from
// D (up to D), as when an exporter stops reporting them; stale writes a
// staleness marker first, as Prometheus does when a series leaves a
// scrape or its target goes down. "restart {selector} from D to D" is a
// process that restarts: a cut with a staleness marker, after which its
// counters (_total, _count, _sum, _bucket) count from zero again.
func cutSeries(l scriptLine, restart bool, rest, step string, order []string, series map[string]scriptSeries) error {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", l.file, l.line, fmt.Sprintf(format, args...))
	}
	sel, spec, ok := strings.Cut(rest, "}")
	if !ok {
		return errf("want cut {selector} from D [to D] [stale]")
	}
	ms, err := scriptParser.ParseMetricSelector(sel + "}")
	if err != nil {
		return errf("%v", err)
	}
	toks := strings.Fields(spec)
	stale := restart || len(toks) > 0 && toks[len(toks)-1] == "stale"
	if len(toks) > 0 && toks[len(toks)-1] == "stale" {
		toks = toks[:len(toks)-1]
	}
	if (len(toks) != 2 && len(toks) != 4) || toks[0] != "from" || len(toks) == 4 && toks[2] != "to" || restart && len(toks) != 4 {
		return errf("want cut {selector} from D [to D] [stale], or restart {selector} from D to D")
	}
	st, err := time.ParseDuration(step)
	if err != nil {
		return errf("cut before a load step")
	}
	from, err := time.ParseDuration(toks[1])
	if err != nil {
		return errf("%v", err)
	}
	to := time.Duration(math.MaxInt64)
	if len(toks) == 4 {
		if to, err = time.ParseDuration(toks[3]); err != nil {
			return errf("%v", err)
		}
	}
	hit := 0
	for _, k := range order {
		x := series[k]
		if !matchesAll(ms, x.lset) {
			continue
		}
		hit++
		orig := slices.Clone(x.vals)
		for i := range x.vals {
			if t := time.Duration(i) * st; t >= from && t < to {
				x.vals[i] = parser.SequenceValue{Omitted: true}
				if stale && t < from+st {
					x.vals[i] = parser.SequenceValue{Value: math.Float64frombits(value.StaleNaN)}
				}
			}
		}
		if restart && isCounterName(x.lset.Get(model.MetricNameLabel)) {
			restartCounter(x.vals, orig, int(to/st))
		}
		x.values = formatValues(x.vals)
		series[k] = x
	}
	if hit == 0 {
		return errf("cut %s} matches no series", sel)
	}
	return nil
}

func isCounterName(name string) bool {
	for _, suf := range []string{"_total", "_count", "_sum", "_bucket"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// restartCounter makes a counter count from zero again at step k: its
// value there is the one step's increase since the restart (what orig,
// the values before the cut, rose by into step k).
func restartCounter(vals, orig []parser.SequenceValue, k int) {
	if k <= 0 || k >= len(vals) || orig[k-1].Omitted {
		return
	}
	base := orig[k-1].Value
	for i := k; i < len(vals); i++ {
		if !vals[i].Omitted && !value.IsStaleNaN(vals[i].Value) {
			vals[i].Value = max(0, vals[i].Value-base)
		}
	}
}

func matchesAll(ms []*labels.Matcher, lset labels.Labels) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

// formatValues writes parsed values back in promqltest's syntax.
func formatValues(vals []parser.SequenceValue) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch {
		case v.Omitted:
			parts[i] = "_"
		case value.IsStaleNaN(v.Value):
			parts[i] = "stale"
		default:
			parts[i] = strconv.FormatFloat(v.Value, 'g', -1, 64)
		}
	}
	return strings.Join(parts, " ")
}

// loadText expands a case's scenes and macros into one promqltest load
// block: a series defined again (by a later line, or by the case over its
// scenes) replaces the earlier definition.
func (s *scriptSuite) loadText(c *scriptCase) (string, error) {
	var (
		targets []scriptTarget
		order   []string
		series  = map[string]scriptSeries{}
		step    string
		seen    = map[string]bool{}
	)
	var apply func(sc *scriptScene) error
	apply = func(sc *scriptScene) error {
		for _, u := range sc.uses {
			if seen[u] {
				continue
			}
			seen[u] = true
			used, ok := s.scenes[u]
			if !ok {
				return fmt.Errorf("%s:%d: no scene %s", sc.file, sc.line, u)
			}
			if err := apply(used); err != nil {
				return err
			}
		}
		targets = append(targets, sc.targets...)
		if sc.step != "" {
			if step != "" && step != sc.step {
				return fmt.Errorf("%s:%d: load %s, but an earlier scene loads at %s", sc.file, sc.line, sc.step, step)
			}
			step = sc.step
		}
		for _, l := range sc.lines {
			if word, rest, _ := strings.Cut(l.text, " "); word == "cut" || word == "restart" {
				if err := cutSeries(l, word == "restart", rest, step, order, series); err != nil {
					return err
				}
				continue
			}
			ss, err := expandLine(l, targets)
			if err != nil {
				return err
			}
			for _, x := range ss {
				k := x.lset.String()
				if _, ok := series[k]; !ok {
					order = append(order, k)
				}
				series[k] = x
			}
		}
		return nil
	}
	if err := apply(&c.scriptScene); err != nil {
		return "", err
	}
	if step == "" {
		return "", fmt.Errorf("%s: no load step", c.where())
	}
	if err := sameLength(order, series); err != nil {
		return "", fmt.Errorf("%s: %w", c.where(), err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "load %s\n", step)
	for _, k := range order {
		x := series[k]
		fmt.Fprintf(&b, "  %s %s\n", x.lset.String(), x.values)
	}
	return b.String(), nil
}

// sameLength checks that every series of a case spans the same samples
// (counting omitted ones): a miscounted "x79" would shift a fault in time.
func sameLength(order []string, series map[string]scriptSeries) error {
	count := map[int]int{}
	for _, k := range order {
		count[series[k].n]++
	}
	want := 0
	for n, c := range count {
		if c > count[want] || c == count[want] && n > want {
			want = n
		}
	}
	var bad []string
	seen := map[string]bool{}
	for _, k := range order {
		if x := series[k]; x.n != want && !seen[x.where] {
			seen[x.where] = true
			bad = append(bad, fmt.Sprintf("%s (%d)", x.where, x.n))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("most series have %d samples, these do not: %s", want, strings.Join(bad, ", "))
	}
	return nil
}

// expandLine reads a series line, or a gpus (replicas) macro into one
// series per matching declared GPU (replica): the selector's labels that
// the group's targets have filter them, the others are added to each
// series.
func expandLine(l scriptLine, targets []scriptTarget) ([]scriptSeries, error) {
	errf := func(err error) error { return fmt.Errorf("%s:%d: %w", l.file, l.line, err) }
	group, body, _ := strings.Cut(l.text, " ")
	isMacro := group == "gpus" || group == "replicas"
	if !isMacro {
		body = l.text
	}
	desc, values, err := splitSeries(strings.TrimSpace(body))
	if err != nil {
		return nil, errf(err)
	}
	lset, vals, err := scriptParser.ParseSeriesDesc(desc + " " + values)
	if err != nil {
		return nil, errf(err)
	}
	where := fmt.Sprintf("%s:%d", l.file, l.line)
	if !isMacro {
		return []scriptSeries{{lset: lset, values: values, vals: vals, n: len(vals), where: where}}, nil
	}
	// A selector label that some target of the group has filters (an empty
	// value: targets without it); the others are added to every series.
	var absent []string
	for _, m := range scriptEmptyLabel.FindAllStringSubmatch(desc, -1) {
		absent = append(absent, m[1])
	}
	known := map[string]bool{}
	for _, g := range targets {
		if g.group == group {
			for k := range g.labels {
				known[k] = true
			}
		}
	}
	var out []scriptSeries
	for _, g := range targets {
		if g.group != group {
			continue
		}
		b := labels.NewBuilder(labels.EmptyLabels())
		for k, v := range g.labels {
			b.Set(k, v)
		}
		match := true
		for _, k := range absent {
			match = match && g.labels[k] == ""
		}
		lset.Range(func(lb labels.Label) {
			if known[lb.Name] {
				match = match && g.labels[lb.Name] == lb.Value
				return
			}
			b.Set(lb.Name, lb.Value)
		})
		if match {
			out = append(out, scriptSeries{lset: b.Labels(), values: values, vals: slices.Clone(vals), n: len(vals), where: where})
		}
	}
	if len(out) == 0 {
		return nil, errf(fmt.Errorf("%s %s matches no declared target", group, desc))
	}
	return out, nil
}

// scriptEmptyLabel finds label="" in a selector (the parser drops it).
var scriptEmptyLabel = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*=\s*""`)

// splitSeries splits "name{labels} values" (or "name values").
func splitSeries(s string) (desc, values string, err error) {
	if i := strings.LastIndex(s, "}"); i >= 0 && strings.Contains(s[:i], "{") {
		return s[:i+1], strings.TrimSpace(s[i+1:]), nil
	}
	name, values, ok := strings.Cut(s, " ")
	if !ok {
		return "", "", fmt.Errorf("series %q has no values", s)
	}
	return name, strings.TrimSpace(values), nil
}
