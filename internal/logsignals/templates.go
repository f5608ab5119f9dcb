package logsignals

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

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

// countTemplate mines a hit's message and counts it in its template's
// series. The caller holds c.mu.
func (c *Consumer) countTemplate(h hit) {
	key := minerKey(*h.ent)
	mn, ok := c.miners[key]
	if !ok {
		m, err := logtemplates.New(logtemplates.Config{MaxClusters: c.cfg.Templates.MaxPerService})
		if err != nil {
			return // Validate checked the bound
		}
		mn = &miner{m: m, labels: map[uint64]string{}}
		c.miners[key] = mn
	}
	id, _ := mn.m.Add(h.msg)
	tmpl, ok := mn.labels[id]
	if !ok {
		tmpl = mn.m.Template(id)
		if len(mn.labels) >= 2*c.cfg.Templates.MaxPerService {
			for old := range mn.labels {
				if mn.m.Template(old) == "" {
					delete(mn.labels, old) // evicted
				}
			}
		}
		mn.labels[id] = tmpl
	}
	sev := h.sev.String()
	c.keyBuf = appendKey(c.keyBuf[:0], "t", sev, tmpl, h.ent.node, h.ent.namespace, h.ent.pod, h.ent.service)
	c.add(c.keyBuf, "T"+sev, func() labels.Labels {
		return build(MetricTemplates, "namespace", h.ent.namespace, "node", h.ent.node, "pod", h.ent.pod,
			"service", h.ent.service, "severity", sev, "template", tmpl)
	}, func() labels.Labels {
		return build(MetricTemplates, "severity", sev, OverflowLabel, "true")
	}, &metaTmpl, MetricTemplates, &c.boundedT, c.cfg.Templates.MaxSeries)
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
