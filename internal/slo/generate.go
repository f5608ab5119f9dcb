package slo

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// Recording rule names, Sloth's where Sloth has one.
const (
	recordErrorRatio      = "slo:sli_error:ratio_rate"
	recordLatencyQuantile = "slo:sli_latency_seconds:quantile_rate5m"
	recordValue           = "slo:sli:value"
	recordObjective       = "slo:objective:ratio"
	recordBudget          = "slo:error_budget:ratio"
	recordPeriodDays      = "slo:time_period:days"
	recordCurrentBurn     = "slo:current_burn_rate:ratio"
	recordPeriodBurn      = "slo:period_burn_rate:ratio"
	recordBudgetLeft      = "slo:period_error_budget_remaining:ratio"
)

// File is one rule file: its name without extension (vigil-slo-NAME,
// vigil-composite-NAME, vigil-watchdog) and its groups.
type File struct {
	Name   string
	Groups []rulefmt.RuleGroup
}

// Files validates the spec and returns its rule files: one per SLO, one per
// composite, and the watchdog's, in the spec's order. Every expression is
// checked with the PromQL parser as Prometheus 2.42 reads it.
func Files(spec *Spec) ([]File, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	g := generator{spec: spec, p: newParser()}
	var out []File
	for i := range spec.SLOs {
		out = append(out, File{Name: "vigil-slo-" + spec.SLOs[i].Name, Groups: g.slo(&spec.SLOs[i])})
	}
	for i := range spec.Composites {
		c := &spec.Composites[i]
		out = append(out, File{Name: "vigil-composite-" + c.Name, Groups: []rulefmt.RuleGroup{g.composite(c)}})
	}
	out = append(out, File{Name: "vigil-watchdog", Groups: []rulefmt.RuleGroup{watchdog()}})
	for _, f := range out {
		for _, grp := range f.Groups {
			for _, r := range grp.Rules {
				if err := checkExpr(g.p, r.Expr); err != nil {
					return nil, fmt.Errorf("generate %s, rule %s%s: %w", grp.Name, r.Record, r.Alert, err)
				}
			}
		}
	}
	return out, nil
}

// Groups returns every rule group of the spec (Files, flattened), for
// loading into a rules manager in process: e.g.
// rules.Manager.LoadGroups from files written with WritePrometheus, or
// one rules.NewGroup per group with rules built from each rulefmt.Rule.
func Groups(spec *Spec) ([]rulefmt.RuleGroup, error) {
	files, err := Files(spec)
	if err != nil {
		return nil, err
	}
	var out []rulefmt.RuleGroup
	for _, f := range files {
		out = append(out, f.Groups...)
	}
	return out, nil
}

type generator struct {
	spec *Spec
	p    parser.Parser
}

func (g *generator) slo(s *SLO) []rulefmt.RuleGroup {
	prefix := "vigil-slo-" + s.Name
	switch s.Kind() {
	case KindGauge, KindPeer:
		return []rulefmt.RuleGroup{
			{Name: prefix + "-sli", Rules: []rulefmt.Rule{g.valueRule(s)}},
			{Name: prefix + "-alerts", Rules: g.boundAlerts(s)},
		}
	}
	return []rulefmt.RuleGroup{
		{Name: prefix + "-sli", Rules: g.sliRules(s)},
		{Name: prefix + "-meta", Rules: metaRules(s)},
		{Name: prefix + "-alerts", Rules: burnAlerts(s)},
	}
}

// sloSelector selects a recorded slo:* series of an SLO.
func sloSelector(record, slo string, extra ...string) string {
	return selector(record, LabelSLO+"="+strconv.Quote(slo), extra...)
}

func (g *generator) sliRules(s *SLO) []rulefmt.Rule {
	var rules []rulefmt.Rule
	for _, w := range rateWindows() {
		rules = append(rules, rulefmt.Rule{
			Record: recordErrorRatio + durString(w),
			Expr:   g.errorRatio(s, durString(w)),
			Labels: map[string]string{LabelSLO: s.Name, LabelWindow: durString(w)},
		})
	}
	period := durString(s.window())
	short := sloSelector(recordErrorRatio+"5m", s.Name)
	rules = append(rules, rulefmt.Rule{
		Record: recordErrorRatio + period,
		Expr: fmt.Sprintf("sum_over_time(%s[%s])\n/ ignoring (%s)\ncount_over_time(%s[%s])",
			short, period, LabelWindow, short, period),
		Labels: map[string]string{LabelSLO: s.Name, LabelWindow: period},
	})
	if s.Kind() == KindLatency {
		q := num(s.objective())
		rules = append(rules, rulefmt.Rule{
			Record: recordLatencyQuantile,
			Expr:   g.latencyQuantile(s, q),
			Labels: map[string]string{LabelSLO: s.Name, LabelWindow: "5m", "quantile": q},
		})
	}
	return rules
}

// errorRatio is the SLI's error ratio over a window.
func (g *generator) errorRatio(s *SLO, window string) string {
	if r := s.SLI.Ratio; r != nil {
		errs, _ := windowed(r.Errors, window)
		total, _ := windowed(r.Total, window)
		return "(\n  " + indent(strings.TrimSpace(errs)) + "\n)\n/\n(\n  " + indent(strings.TrimSpace(total)) + "\n)"
	}
	l := s.SLI.Latency
	var exprs []string
	for _, src := range s.sources() {
		le := leRegexp(round(l.Threshold / src.scale()))
		good := aggregate("sum", s.By, src.renamed(fmt.Sprintf("rate(%s[%s])",
			selector(src.Metric+"_bucket", src.Matchers, "le=~"+strconv.Quote(le)), window)))
		all := aggregate("sum", s.By, src.renamed(fmt.Sprintf("rate(%s[%s])",
			selector(src.Metric+"_count", src.Matchers), window)))
		exprs = append(exprs, "1 - (\n  "+good+"\n  /\n  "+all+"\n)")
	}
	return alternatives(exprs)
}

// latencyQuantile is the latency at the objective's quantile over 5m, in
// seconds.
func (g *generator) latencyQuantile(s *SLO, q string) string {
	var exprs []string
	for _, src := range s.sources() {
		e := fmt.Sprintf("histogram_quantile(%s, %s)", q, aggregate("sum", append([]string{"le"}, s.By...),
			src.renamed(fmt.Sprintf("rate(%s[5m])", selector(src.Metric+"_bucket", src.Matchers)))))
		if f := src.scale(); f != 1 {
			e = fmt.Sprintf("%s * %s", e, num(f))
		}
		exprs = append(exprs, e)
	}
	return alternatives(exprs)
}

func metaRules(s *SLO) []rulefmt.Rule {
	period := durString(s.window())
	labels := func(w string) map[string]string { return map[string]string{LabelSLO: s.Name, LabelWindow: w} }
	budget := num(s.budget())
	return []rulefmt.Rule{
		{Record: recordObjective, Expr: fmt.Sprintf("vector(%s)", num(s.objective())), Labels: labels(period)},
		{Record: recordBudget, Expr: fmt.Sprintf("vector(%s)", budget), Labels: labels(period)},
		{Record: recordPeriodDays, Expr: fmt.Sprintf("vector(%s)", num(float64(s.window())/float64(day))), Labels: labels(period)},
		{Record: recordCurrentBurn, Labels: labels("5m"),
			Expr: fmt.Sprintf("max without (%s) (%s)\n/ %s", LabelWindow, sloSelector(recordErrorRatio+"5m", s.Name), budget)},
		{Record: recordPeriodBurn, Labels: labels(period),
			Expr: fmt.Sprintf("max without (%s) (%s)\n/ %s", LabelWindow, sloSelector(recordErrorRatio+period, s.Name), budget)},
		{Record: recordBudgetLeft, Labels: labels(period),
			Expr: "1 - " + sloSelector(recordPeriodBurn, s.Name)},
	}
}

// burnAlerts are the page and ticket multi-window burn-rate alerts; a
// ticket-only SLO has no page alert.
func burnAlerts(s *SLO) []rulefmt.Rule {
	budget := num(s.budget())
	var rules []rulefmt.Rule
	for _, sev := range []Severity{SeverityPage, SeverityTicket} {
		if sev == SeverityPage && s.severity() != SeverityPage {
			continue
		}
		var conds, words []string
		for _, w := range BurnWindows(s.window()) {
			if w.Severity != sev {
				continue
			}
			over := func(d model.Duration) string {
				return fmt.Sprintf("max without (%s) (%s > (%s * %s))", LabelWindow,
					sloSelector(recordErrorRatio+durString(d), s.Name), num(w.Factor), budget)
			}
			conds = append(conds, "(\n  "+over(w.Short)+"\n  and\n  "+over(w.Long)+"\n)")
			words = append(words, fmt.Sprintf("%s× the sustainable rate over %s and %s", num(w.Factor), durString(w.Long), durString(w.Short)))
		}
		rules = append(rules, rulefmt.Rule{
			Alert:  camel(s.Name) + "ErrorBudgetBurn",
			Expr:   strings.Join(conds, "\nor\n"),
			Labels: alertLabels(s.Labels, sev, s.Name, s.symptom()),
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s: SLO %s is burning its error budget too fast", entity(s.By), s.Name),
				"description": fmt.Sprintf("%sObjective %s%% over %s. The error ratio is {{ $value | humanizePercentage }} over the short window: "+
					"the error budget burns faster than %s.",
					sentence(s.Description), num(*s.Objective), durString(s.window()), strings.Join(words, ", or ")),
			},
		})
	}
	return rules
}

// valueRule records the value of a gauge or peer SLI.
func (g *generator) valueRule(s *SLO) rulefmt.Rule {
	r := rulefmt.Rule{Record: recordValue, Labels: map[string]string{LabelSLO: s.Name}}
	if gs := s.SLI.Gauge; gs != nil && gs.Record != "" {
		r = rulefmt.Rule{Record: gs.Record}
	}
	if gs := s.SLI.Gauge; gs != nil && gs.Expr != "" {
		r.Expr = strings.TrimSpace(gs.Expr)
		return r
	}
	agg, fn, over := defaultAggregate, "", ""
	if gs := s.SLI.Gauge; gs != nil {
		agg, fn, over = cmp(gs.Aggregate, agg), gs.Function, durString(gs.Over)
	}
	if ps := s.SLI.Peer; ps != nil {
		agg = cmp(ps.Aggregate, agg)
	}
	var exprs []string
	for _, src := range s.sources() {
		sel := selector(src.Metric, src.Matchers)
		if fn != "" {
			sel = fmt.Sprintf("%s_over_time(%s[%s])", fn, sel, over)
		}
		e := aggregate(agg, s.By, src.renamed(sel))
		if f := src.scale(); f != 1 {
			e = fmt.Sprintf("%s * %s", e, num(f))
		}
		exprs = append(exprs, e)
	}
	r.Expr = alternatives(exprs)
	return r
}

func cmp(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// valueSelector selects the recorded value of a gauge or peer SLO.
func valueSelector(s *SLO, extra ...string) string {
	if gs := s.SLI.Gauge; gs != nil && gs.Record != "" {
		return selector(gs.Record, "", extra...)
	}
	return sloSelector(recordValue, s.Name, extra...)
}

// boundAlerts alert on a gauge out of its bounds, or on an entity below
// its peers.
func (g *generator) boundAlerts(s *SLO) []rulefmt.Rule {
	labels := alertLabels(s.Labels, s.severity(), s.Name, s.symptom())
	desc := sentence(s.Description)
	if ps := s.SLI.Peer; ps != nil {
		var nonEmpty []string
		for _, l := range ps.Peers {
			nonEmpty = append(nonEmpty, l+`!=""`)
		}
		sel := valueSelector(s, nonEmpty...)
		peers := strings.Join(ps.Peers, ", ")
		median := fmt.Sprintf("quantile by (%s) (0.5, %s)", peers, sel)
		expr := fmt.Sprintf("%s\n< on (%s) group_left ()\n%s * %s", sel, peers, num(1-ps.Tolerance), median)
		if ps.Min > 0 {
			expr += fmt.Sprintf("\nand on (%s)\n%s >= %s", peers, median, num(ps.Min))
		}
		return []rulefmt.Rule{{
			Alert:  camel(s.Name) + "BelowPeers",
			Expr:   expr,
			For:    s.forDuration(),
			Labels: labels,
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s: %s is more than %s%% below its peers' median", entity(s.By), s.Name, num(ps.Tolerance*100)),
				"description": fmt.Sprintf("%sThe value is {{ $value | printf \"%%.4g\" }}, more than %s%% below the median of the same %s at the same moment, for %s.",
					desc, num(ps.Tolerance*100), peers, durString(s.forDuration())),
			},
		}}
	}
	gs := s.SLI.Gauge
	var filter []string
	if gs.Filter != "" {
		filter = append(filter, gs.Filter)
	}
	sel := valueSelector(s, filter...)
	var rules []rulefmt.Rule
	for _, b := range []struct {
		bound      *float64
		suffix, op string
		word       string
	}{{gs.Above, "Low", "<", "below its lowest healthy value"}, {gs.Below, "High", ">", "above its highest healthy value"}} {
		if b.bound == nil {
			continue
		}
		rules = append(rules, rulefmt.Rule{
			Alert:  camel(s.Name) + b.suffix,
			Expr:   fmt.Sprintf("%s %s %s", sel, b.op, num(*b.bound)),
			For:    s.forDuration(),
			Labels: labels,
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s: %s is %s %s", entity(s.By), s.Name, b.word, num(*b.bound)),
				"description": fmt.Sprintf("%sThe value is {{ $value | printf \"%%.4g\" }}, %s %s, for %s.",
					desc, b.word, num(*b.bound), durString(s.forDuration())),
			},
		})
	}
	return rules
}

// trendSeries is the series a composite's "increasing" reads for an SLO.
func trendSeries(s *SLO) string {
	switch s.Kind() {
	case KindLatency:
		return sloSelector(recordLatencyQuantile, s.Name)
	case KindRatio:
		return sloSelector(recordErrorRatio+"5m", s.Name)
	}
	return valueSelector(s)
}

func (g *generator) composite(c *Composite) rulefmt.RuleGroup {
	by := g.spec.slo(c.When[0].Increasing[0]).By
	var conds, words []string
	for _, cond := range c.When {
		var anyOf []string
		for _, name := range cond.Increasing {
			anyOf = append(anyOf, aggregate("max", by, fmt.Sprintf("deriv(%s[%s]) > 0", trendSeries(g.spec.slo(name)), durString(c.window()))))
		}
		conds = append(conds, "(\n  "+indent(strings.Join(anyOf, "\nor\n"))+"\n)")
		w := strings.Join(cond.Increasing, " or ")
		if len(cond.Increasing) > 1 && len(c.When) > 1 {
			w = "(" + w + ")"
		}
		words = append(words, w)
	}
	what := strings.Join(words, " and ")
	return rulefmt.RuleGroup{
		Name: "vigil-composite-" + c.Name,
		Rules: []rulefmt.Rule{{
			Alert:  camel(c.Name),
			Expr:   strings.Join(conds, "\nand on ("+strings.Join(by, ", ")+")\n"),
			For:    c.forDuration(),
			Labels: alertLabels(c.Labels, c.severity(), c.Name, c.symptom()),
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s: %s increasing together", entity(by), what),
				"description": fmt.Sprintf("%s%s have been increasing together (trend over %s) for %s.",
					sentence(c.Description), what, durString(c.window()), durString(c.forDuration())),
			},
		}},
	}
}

func watchdog() rulefmt.RuleGroup {
	return rulefmt.RuleGroup{
		Name: "vigil-watchdog",
		Rules: []rulefmt.Rule{{
			Alert:  WatchdogAlert,
			Expr:   "vector(1)",
			Labels: map[string]string{LabelSeverity: string(SeverityNone)},
			Annotations: map[string]string{
				"summary": "Vigil's dead man's switch: this alert always fires",
				"description": "VigilWatchdog fires all the time, so that the alerting pipeline is known to work: " +
					"route it to a dead man's switch receiver, which raises the alarm when it stops arriving.",
			},
		}},
	}
}

func alertLabels(extra map[string]string, sev Severity, slo, symptom string) map[string]string {
	out := maps.Clone(extra)
	if out == nil {
		out = map[string]string{}
	}
	out[LabelSeverity] = string(sev)
	out[LabelSLO] = slo
	out[LabelSymptom] = symptom
	return out
}

// entity is the alert template naming the entity of an alert.
func entity(by []string) string {
	if len(by) == 0 {
		return "cluster"
	}
	parts := make([]string, len(by))
	for i, l := range by {
		parts[i] = "{{ $labels." + l + " }}"
	}
	return strings.Join(parts, "/")
}

// sentence ends a description with a period and a space, or is empty.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	// Braces would start an alert template.
	return strings.ReplaceAll(s, "{{", `{{ "{{" }}`) + " "
}
