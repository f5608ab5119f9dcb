package slo

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// validator collects the problems of a spec.
type validator struct {
	p    parser.Parser
	errs []error
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// reservedLabels are set by the generator; an SLO's labels or by may not.
var reservedLabels = []string{LabelSeverity, LabelSLO, LabelWindow, LabelSymptom, "le", "quantile", model.MetricNameLabel, model.AlertNameLabel}

// Validate reports every problem of the spec, each a *FieldError naming its
// field (slos[1].objective); several are joined with errors.Join. Parse
// adds the file and line.
func (s *Spec) Validate() error {
	v := &validator{p: newParser()}
	if len(s.SLOs) == 0 {
		v.add("slos", "no SLOs: a spec needs at least one")
	}
	names := map[string]string{}
	for i := range s.SLOs {
		path := fmt.Sprintf("slos[%d]", i)
		v.slo(&s.SLOs[i], path)
		v.unique(names, s.SLOs[i].Name, path+".name")
	}
	for i := range s.Composites {
		path := fmt.Sprintf("composites[%d]", i)
		v.composite(s, &s.Composites[i], path)
		v.unique(names, s.Composites[i].Name, path+".name")
	}
	if len(v.errs) == 0 {
		return nil
	}
	return s.locate(v.errs)
}

func (v *validator) unique(seen map[string]string, name, path string) {
	if name == "" {
		return
	}
	if prev, ok := seen[name]; ok {
		v.add(path, "%q is already the name of %s", name, strings.TrimSuffix(prev, ".name"))
		return
	}
	seen[name] = path
}

func (v *validator) name(name, path string) {
	switch {
	case name == "":
		v.add(path, "missing: lower-case letters, digits and dashes, e.g. llm-ttft")
	case !nameRE.MatchString(name):
		v.add(path, "%q is not lower-case letters, digits and dashes (at most 63, starting and ending with a letter or digit)", name)
	}
}

func (v *validator) slo(s *SLO, path string) {
	v.name(s.Name, path+".name")
	kinds := 0
	for _, set := range []bool{s.SLI.Ratio != nil, s.SLI.Latency != nil, s.SLI.Gauge != nil, s.SLI.Peer != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		v.add(path+".sli", "missing: one of ratio, latency, gauge or peer")
		return
	case kinds > 1:
		v.add(path+".sli", "has %d kinds: give one of ratio, latency, gauge or peer", kinds)
		return
	}
	if s.burnRate() {
		v.objective(s, path)
	} else {
		if s.Objective != nil {
			v.add(path+".objective", "a %s SLO has no objective: it alerts when its value crosses its bounds", s.Kind())
		}
		if s.Window != 0 {
			v.add(path+".window", "a %s SLO has no window: it alerts when its value stays out of bounds for `for`", s.Kind())
		}
	}
	if s.burnRate() && s.For != 0 {
		v.add(path+".for", "a %s SLO alerts on burn rates over fixed windows: remove for", s.Kind())
	}
	if s.For < 0 {
		v.add(path+".for", "%s is negative", s.For)
	}
	v.labelNames(s.By, path+".by")
	if s.Severity != "" && s.Severity != SeverityPage && s.Severity != SeverityTicket {
		v.add(path+".severity", "%q is not page or ticket", s.Severity)
	}
	if s.Symptom != "" && !slices.Contains(symptoms, s.Symptom) {
		v.add(path+".symptom", "%q is not a symptom kind (%s)", s.Symptom, strings.Join(symptoms, ", "))
	}
	v.labels(s.Labels, path+".labels")
	switch s.Kind() {
	case KindRatio:
		v.ratio(s.SLI.Ratio, path+".sli.ratio")
	case KindLatency:
		v.latency(s, path+".sli.latency")
	case KindGauge:
		v.gauge(s, path+".sli.gauge")
	case KindPeer:
		v.peer(s, path+".sli.peer")
	}
}

func (v *validator) objective(s *SLO, path string) {
	switch {
	case s.Objective == nil:
		v.add(path+".objective", "missing: the percentage of good events, in (0, 100), e.g. 99.5")
	case *s.Objective <= 0 || *s.Objective >= 100:
		v.add(path+".objective", "%s is not a percentage in (0, 100)", num(*s.Objective))
	}
	if w := s.window(); w != model.Duration(28*24*time.Hour) && w != model.Duration(30*24*time.Hour) {
		v.add(path+".window", "%s is not an SLO window: 28d or 30d", durString(w))
	}
}

func (v *validator) labelNames(names []string, path string) {
	seen := map[string]bool{}
	for i, l := range names {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case !model.LegacyValidation.IsValidLabelName(l):
			v.add(p, "%q is not a label name", l)
		case slices.Contains(reservedLabels, l):
			v.add(p, "%q is set by the generator", l)
		case seen[l]:
			v.add(p, "%q is listed twice", l)
		}
		seen[l] = true
	}
}

func (v *validator) labels(ls map[string]string, path string) {
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		switch {
		case !model.LegacyValidation.IsValidLabelName(k):
			v.add(path+"."+k, "%q is not a label name", k)
		case slices.Contains(reservedLabels, k):
			v.add(path+"."+k, "%q is set by the generator", k)
		}
	}
}

// expr checks PromQL as Prometheus 2.42 reads it.
func (v *validator) expr(expr, path string) {
	if err := checkExpr(v.p, expr); err != nil {
		v.add(path, "%s", oneLine(err.Error()))
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (v *validator) ratio(r *RatioSLI, path string) {
	for _, f := range []struct{ name, expr string }{{"errors", r.Errors}, {"total", r.Total}} {
		p := path + "." + f.name
		if strings.TrimSpace(f.expr) == "" {
			v.add(p, "missing: PromQL with {{.window}} as the range, e.g. sum(rate(errors_total[{{.window}}]))")
			continue
		}
		out5, err := windowed(f.expr, "5m")
		if err != nil {
			v.add(p, "%s", oneLine(err.Error()))
			continue
		}
		if out1, _ := windowed(f.expr, "1h"); out1 == out5 {
			v.add(p, "has no {{.window}}: every burn-rate window would read the same range")
			continue
		}
		v.expr(out5, p)
	}
}

// windowed fills a ratio expression's {{.window}}.
func windowed(expr, window string) (string, error) {
	t, err := template.New("sli").Option("missingkey=error").Parse(expr)
	if err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, map[string]string{"window": window}); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	return b.String(), nil
}

// sources checks Metric or Sources (one of them).
func (v *validator) sources(metric string, srcs []Source, path string, histogram bool) {
	switch {
	case metric == "" && len(srcs) == 0:
		v.add(path+".metric", "missing: a metric name, or sources")
		return
	case metric != "" && len(srcs) > 0:
		v.add(path+".sources", "give metric or sources, not both")
		return
	case metric != "":
		v.metricName(metric, path+".metric", histogram)
		return
	}
	for i, s := range srcs {
		p := fmt.Sprintf("%s.sources[%d]", path, i)
		v.metricName(s.Metric, p+".metric", histogram)
		if s.Matchers != "" {
			if _, err := v.p.ParseMetricSelector("{" + s.Matchers + "}"); err != nil {
				v.add(p+".matchers", "%s", oneLine(err.Error()))
			}
		}
		for _, canon := range slices.Sorted(maps.Keys(s.Rename)) {
			from := s.Rename[canon]
			rp := p + ".rename." + canon
			if !model.LegacyValidation.IsValidLabelName(canon) {
				v.add(rp, "%q is not a label name", canon)
			}
			if len(from) == 0 {
				v.add(rp, "missing: the stored labels that carry %s", canon)
			}
			for _, l := range from {
				if !model.LegacyValidation.IsValidLabelName(l) {
					v.add(rp, "%q is not a label name", l)
				}
			}
		}
		if s.Scale < 0 {
			v.add(p+".scale", "%s is negative", num(s.Scale))
		}
	}
}

func (v *validator) metricName(m, path string, histogram bool) {
	switch {
	case m == "":
		v.add(path, "missing: a metric name")
	case !model.LegacyValidation.IsValidMetricName(m):
		v.add(path, "%q is not a metric name Prometheus 2.42 reads unquoted", m)
	case histogram && (strings.HasSuffix(m, "_bucket") || strings.HasSuffix(m, "_count") || strings.HasSuffix(m, "_sum")):
		v.add(path, "%q: give the histogram's name, without _bucket, _count or _sum", m)
	}
}

func (v *validator) latency(s *SLO, path string) {
	l := s.SLI.Latency
	v.sources(l.Metric, l.Sources, path, true)
	if l.Threshold <= 0 {
		v.add(path+".threshold", "missing: the latency bound in seconds, one of the histogram's le bounds")
	}
}

var aggregations = []string{"sum", "avg", "min", "max"}

func (v *validator) gauge(s *SLO, path string) {
	g := s.SLI.Gauge
	switch {
	case g.Expr != "" && (g.Metric != "" || len(g.Sources) > 0):
		v.add(path+".expr", "give expr, metric or sources, one of them")
	case g.Expr != "":
		v.expr(g.Expr, path+".expr")
		if g.Function != "" || g.Over != 0 || g.Aggregate != "" {
			v.add(path+".expr", "function, over and aggregate apply to metric or sources, not to expr")
		}
	default:
		v.sources(g.Metric, g.Sources, path, false)
	}
	v.aggregate(g.Aggregate, path+".aggregate")
	switch {
	case g.Function != "" && !slices.Contains([]string{"last", "avg", "min", "max"}, g.Function):
		v.add(path+".function", "%q is not last, avg, min or max", g.Function)
	case g.Function != "" && g.Over <= 0:
		v.add(path+".over", "missing: the range of function %s, e.g. 1h", g.Function)
	case g.Function == "" && g.Over != 0:
		v.add(path+".function", "missing: over needs a function (last, avg, min or max)")
	}
	switch {
	case g.Above == nil && g.Below == nil:
		v.add(path+".above", "missing: above (the lowest healthy value), below (the highest), or both")
	case g.Above != nil && g.Below != nil && *g.Above >= *g.Below:
		v.add(path+".below", "%s is not above %s (above)", num(*g.Below), num(*g.Above))
	}
	if g.Filter != "" {
		if _, err := v.p.ParseMetricSelector("{" + g.Filter + "}"); err != nil {
			v.add(path+".filter", "%s", oneLine(err.Error()))
		}
	}
	if g.Record != "" && (!model.LegacyValidation.IsValidMetricName(g.Record) || strings.HasPrefix(g.Record, "slo:")) {
		v.add(path+".record", "%q is not a metric name of its own (slo:* names are the generator's)", g.Record)
	}
}

func (v *validator) aggregate(a, path string) {
	if a != "" && !slices.Contains(aggregations, a) {
		v.add(path, "%q is not sum, avg, min or max", a)
	}
}

func (v *validator) peer(s *SLO, path string) {
	p := s.SLI.Peer
	v.sources(p.Metric, p.Sources, path, false)
	v.aggregate(p.Aggregate, path+".aggregate")
	if len(p.Peers) == 0 {
		v.add(path+".peers", "missing: the labels of a peer group, e.g. [namespace]")
	}
	for i, l := range p.Peers {
		if !slices.Contains(s.By, l) {
			v.add(fmt.Sprintf("%s.peers[%d]", path, i), "%q is not one of the SLO's by labels", l)
		}
	}
	if len(s.By) <= len(p.Peers) {
		v.add(strings.TrimSuffix(path, ".sli.peer")+".by", "needs labels beyond the peers' (%s) to tell peers apart", strings.Join(p.Peers, ", "))
	}
	if p.Min < 0 {
		v.add(path+".min", "%s is negative", num(p.Min))
	}
	if p.Tolerance <= 0 || p.Tolerance >= 1 {
		v.add(path+".tolerance", "%s is not a fraction in (0, 1), e.g. 0.1 for 10%% below the median", num(p.Tolerance))
	}
}

func (v *validator) composite(spec *Spec, c *Composite, path string) {
	v.name(c.Name, path+".name")
	if c.Symptom != "" && !slices.Contains(symptoms, c.Symptom) {
		v.add(path+".symptom", "%q is not a symptom kind (%s)", c.Symptom, strings.Join(symptoms, ", "))
	}
	if c.Severity != "" && c.Severity != SeverityPage && c.Severity != SeverityTicket {
		v.add(path+".severity", "%q is not page or ticket", c.Severity)
	}
	v.labels(c.Labels, path+".labels")
	if c.Window < 0 || c.For < 0 {
		v.add(path, "window and for must not be negative")
	}
	if len(c.When) == 0 {
		v.add(path+".when", "missing: the conditions, e.g. - increasing: [inference-queue-depth]")
	}
	var by, firstBy []string
	for i, cond := range c.When {
		p := fmt.Sprintf("%s.when[%d].increasing", path, i)
		if len(cond.Increasing) == 0 {
			v.add(p, "missing: the SLOs whose value must be increasing (any of them)")
		}
		for j, name := range cond.Increasing {
			pj := fmt.Sprintf("%s[%d]", p, j)
			s := spec.slo(name)
			switch {
			case s == nil:
				v.add(pj, "%q is not an SLO of this spec", name)
			case s.Kind() == KindPeer:
				v.add(pj, "%q is a peer SLO: it has no value of its own to trend", name)
			case by == nil:
				by, firstBy = sortedCopy(s.By), s.By
			case !slices.Equal(by, sortedCopy(s.By)):
				v.add(pj, "%q is by (%s), the others by (%s): a composite compares one entity", name,
					strings.Join(s.By, ", "), strings.Join(firstBy, ", "))
			}
		}
	}
}

func sortedCopy(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// slo returns the SLO with a name, or nil.
func (s *Spec) slo(name string) *SLO {
	for i := range s.SLOs {
		if s.SLOs[i].Name == name {
			return &s.SLOs[i]
		}
	}
	return nil
}
