package logsignals

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/vigil-obs/vigil/internal/logtemplates"
)

// TemplatesConfig configures the template counts (vigil_log_templates_total).
type TemplatesConfig struct {
	// Enabled mines the templates of records at MinSeverity or above.
	Enabled bool `yaml:"enabled"`
	// MinSeverity is the lowest level mined: "info" (every record that
	// states a level; the default), "warn", or "all" (records that state
	// none as well).
	MinSeverity string `yaml:"min_severity"`
	// MaxPerService bounds the templates each service's miner holds; the
	// least recently seen goes first.
	MaxPerService int `yaml:"max_per_service"`
	// MaxSeries bounds the template series, apart from the events' (a
	// service's many info templates never crowd out an XID's counter);
	// past it a template counts in its level's overflow series.
	MaxSeries int `yaml:"max_series"`
	// Successions counts, for records that name their span, which
	// template came next after which in the same span
	// (vigil_log_template_successions_total, within MaxSeries).
	Successions bool `yaml:"successions"`
}

// minSeverity is MinSeverity as a level (Validate checked it).
func (t TemplatesConfig) minSeverity() Severity {
	switch t.MinSeverity {
	case "all":
		return SeverityUnknown
	case "warn":
		return SeverityWarn
	}
	return SeverityLow
}

// miner is one service's template miner and the label each of its
// clusters' series carries: the template as it was when the cluster was
// made, so that a template that generalises later ("user <*> logged in")
// keeps counting in the same series.
type miner struct {
	m      *logtemplates.Miner
	labels map[uint64]string
}

// label mines msg and returns its cluster's label, forgetting the labels
// of evicted clusters once it holds max of them.
func (mn *miner) label(msg string, max int) string {
	id, _ := mn.m.Add(msg)
	tmpl, ok := mn.labels[id]
	if !ok {
		tmpl = mn.m.Template(id)
		if len(mn.labels) >= max {
			for old := range mn.labels {
				if mn.m.Template(old) == "" {
					delete(mn.labels, old) // evicted
				}
			}
		}
		mn.labels[id] = tmpl
	}
	return tmpl
}

// statementLabel is the label of a statement's template: its first
// message masked and cut as a Drain template is.
func statementLabel(msg string) string {
	m, err := logtemplates.New(logtemplates.Config{MaxClusters: 1})
	if err != nil {
		return ""
	}
	id, _ := m.Add(msg)
	return m.Template(id)
}

// matched is how many hits matched an event (the others are only mined).
func matched(hits []hit) int {
	n := 0
	for _, h := range hits {
		if !h.m.Events.Empty() {
			n++
		}
	}
	return n
}

// minerKey is the entity a miner mines for: the service, or the pod (or
// node) where the record names no service, in its namespace.
func minerKey(e entity) entity {
	switch {
	case e.service != "":
		return entity{namespace: e.namespace, service: e.service}
	case e.pod != "":
		return entity{namespace: e.namespace, pod: e.pod}
	}
	return entity{node: e.node}
}

// statementKey is one log statement of an entity (minerKey): its source
// location.
type statementKey struct {
	entity
	loc string
}

// codeLocation is a record's source location from OpenTelemetry's code
// attributes (code.file.path and code.line.number, or the older
// code.filepath and code.lineno; code.function.name or code.function
// where no file is named), "" where they name none.
func codeLocation(attrs pcommon.Map) string {
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := attrs.Get(k); ok {
				if s := v.AsString(); s != "" {
					return s
				}
			}
		}
		return ""
	}
	line := get("code.line.number", "code.lineno")
	if line == "" {
		return ""
	}
	where := get("code.file.path", "code.filepath", "code.function.name", "code.function")
	if where == "" {
		return ""
	}
	return where + ":" + line
}

// countTemplate mines a hit's message and counts it in its template's
// series; it returns the template label and the level. A record whose
// statement's location is known (its code attributes, else a location
// among its message's first tokens: logtemplates.Location) is its
// statement's: one template per statement, however its variables vary
// (lists of several lengths, texts of several words), labelled with the
// first record's masked text (with the location in front where it came
// from the attributes). A service has up to MaxPerService statements
// so; records of statements past them, and records that name no
// location, are mined by the service's Drain miner. The caller holds
// c.mu.
func (c *Consumer) countTemplate(h hit) (string, string) {
	ent := minerKey(*h.ent)
	loc, fromAttrs := h.loc, h.loc != ""
	if loc == "" {
		loc, _ = logtemplates.Location(h.msg)
	}
	var tmpl string
	if loc != "" {
		key := statementKey{entity: ent, loc: loc}
		t, ok := c.statements[key]
		if !ok && c.located[ent] < c.cfg.Templates.MaxPerService {
			t = statementLabel(h.msg)
			if fromAttrs {
				t = loc + " " + t
			}
			c.statements[key] = t
			c.located[ent]++
		}
		tmpl = t
	}
	if tmpl == "" {
		mn, ok := c.miners[ent]
		if !ok {
			m, err := logtemplates.New(logtemplates.Config{MaxClusters: c.cfg.Templates.MaxPerService})
			if err != nil {
				return "", "" // Validate checked the bound
			}
			mn = &miner{m: m, labels: map[uint64]string{}}
			c.miners[ent] = mn
		}
		tmpl = mn.label(h.msg, 2*c.cfg.Templates.MaxPerService)
	}
	if tmpl == "" {
		return "", ""
	}
	sev := h.sev.String()
	c.keyBuf = appendKey(c.keyBuf[:0], "t", sev, tmpl, h.ent.node, h.ent.namespace, h.ent.pod, h.ent.service)
	c.add(c.keyBuf, "T"+sev, func() labels.Labels {
		return build(MetricTemplates, "namespace", h.ent.namespace, "node", h.ent.node, "pod", h.ent.pod,
			"service", h.ent.service, "severity", sev, "template", tmpl)
	}, func() labels.Labels {
		return build(MetricTemplates, "severity", sev, OverflowLabel, "true")
	}, &metaTmpl, MetricTemplates, &c.boundedT, c.cfg.Templates.MaxSeries)
	return tmpl, sev
}

// validate checks the template settings.
func (t TemplatesConfig) validate() error {
	if !t.Enabled {
		return nil
	}
	switch t.MinSeverity {
	case "all", "info", "warn":
	default:
		return &FieldError{Field: "templates.min_severity", Msg: fmt.Sprintf("must be all, info or warn, got %q", t.MinSeverity)}
	}
	if t.MaxPerService < 1 {
		return &FieldError{Field: "templates.max_per_service", Msg: fmt.Sprintf("must be at least 1, got %d", t.MaxPerService)}
	}
	if t.MaxSeries < 1 {
		return &FieldError{Field: "templates.max_series", Msg: fmt.Sprintf("must be at least 1, got %d", t.MaxSeries)}
	}
	return nil
}
