package logsignals

import (
	"cmp"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// MetricSuccessions counts, by entity and pair of templates, the records
// of one template (next) that came next after a record of another
// (template) in the same span.
const MetricSuccessions = "vigil_log_template_successions_total"

var metaSucc = metadata.Metadata{Type: model.MetricTypeCounter, Help: "Log records by entity and template (next) that came next after a record of another template (template) in the same span (Drain)."}

// maxSpans bounds the spans whose last record the Consumer remembers, in
// two generations of half of it each: a span's records come within
// seconds of each other, and a span not seen while half as many others
// came is forgotten (its next record starts a new succession).
const maxSpans = 1 << 16

// spanKey is a record's trace and span ID.
type spanKey [24]byte

// spanOf is a record's span, and false when it names none.
func spanOf(trace pcommon.TraceID, span pcommon.SpanID) (spanKey, bool) {
	var k spanKey
	if span.IsEmpty() {
		return k, false
	}
	copy(k[:16], trace[:])
	copy(k[16:], span[:])
	return k, true
}

// lastRecord is a span's latest mined record: its template and time;
// and its first's template and level, and the entity that wrote them.
type lastRecord struct {
	tmpl string
	t    int64

	first, firstSev string
	ent             *entity
}

// recent holds a value for each of the maxSpans most recent spans, in two
// generations of half of it each: when the newer fills, it becomes the
// older and the older is dropped, so that memory stays bounded with no
// per-entry bookkeeping.
type recent[V any] struct {
	cur, old map[spanKey]V
}

func (m *recent[V]) get(k spanKey) (V, bool) {
	if v, ok := m.cur[k]; ok {
		return v, true
	}
	v, ok := m.old[k]
	return v, ok
}

func (m *recent[V]) put(k spanKey, v V) {
	if m.cur == nil {
		m.cur = map[spanKey]V{}
	}
	if _, ok := m.cur[k]; !ok && len(m.cur) >= maxSpans/2 {
		m.old, m.cur = m.cur, make(map[spanKey]V, maxSpans/2)
	}
	m.cur[k] = v
}

// mined is a hit's template, for its span's successions.
type mined struct {
	ent  *entity
	span spanKey
	t    int64
	tmpl string
	sev  string
}

// countSuccessions counts, for each mined record of a span, the template
// it came next after: the span's previous record, in time, within this
// batch or an earlier one. A record older than its span's latest (one
// that arrived late) starts nothing and follows nothing. The caller holds
// c.mu.
func (c *Consumer) countSuccessions(batch []mined) {
	slices.SortStableFunc(batch, func(a, b mined) int { return cmp.Compare(a.t, b.t) })
	for _, r := range batch {
		prev, ok := c.spans.get(r.span)
		if ok && r.t < prev.t {
			continue
		}
		if !ok {
			// The span's first record: counted under the span's name where
			// the span came first (spanfirst.go).
			c.spans.put(r.span, lastRecord{tmpl: r.tmpl, t: r.t, first: r.tmpl, firstSev: r.sev, ent: r.ent})
			if name := c.spanName(r.span); name != "" {
				c.countSpanFirst(r.ent, name, r.tmpl, r.sev)
			}
			continue
		}
		c.spans.put(r.span, lastRecord{tmpl: r.tmpl, t: r.t, first: prev.first, firstSev: prev.firstSev, ent: prev.ent})
		ent := r.ent
		c.keyBuf = appendKey(c.keyBuf[:0], "s", r.sev, prev.tmpl, r.tmpl, ent.node, ent.namespace, ent.pod, ent.service)
		c.add(c.keyBuf, "S"+r.sev, func() labels.Labels {
			return build(MetricSuccessions, "namespace", ent.namespace, "next", r.tmpl, "node", ent.node, "pod", ent.pod,
				"service", ent.service, "severity", r.sev, "template", prev.tmpl)
		}, func() labels.Labels {
			return build(MetricSuccessions, "severity", r.sev, OverflowLabel, "true")
		}, &metaSucc, MetricSuccessions, &c.boundedT, c.cfg.Templates.MaxSeries)
	}
}
