package logsignals

import (
	"context"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// MetricSpanFirst counts spans by entity, span name and the template of
// the span's first mined record.
const MetricSpanFirst = "vigil_log_span_first_total"

var metaSpanFirst = metadata.Metadata{Type: model.MetricTypeCounter, Help: "Spans by entity and span name whose first log record was of a template (Drain): with the span metrics' calls, the spans whose first step was no longer logged."}

// SpanNames tells the name of a span that the Consumer did not receive
// itself (a trace file read before a log file): "" when unknown.
type SpanNames interface {
	SpanName(k SpanKey) string
}

// SpanKey is a span's trace ID then span ID.
type SpanKey = spanKey

// KeyOf is the SpanKey of a trace and span ID, and false where the span ID
// is empty.
func KeyOf(trace pcommon.TraceID, span pcommon.SpanID) (SpanKey, bool) { return spanOf(trace, span) }

// SetSpanNames gives the Consumer the names of spans it does not receive
// (internal/ingest/fileimport reads trace files apart from log files).
// Call it before the first ConsumeLogs.
func (c *Consumer) SetSpanNames(n SpanNames) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookup = n
}

// ConsumeTraces learns the names of spans, so that each span's first log
// record counts under its name (vigil_log_span_first_total): at once
// where its records came first, when its first record comes otherwise.
// It keeps nothing else of the spans and never fails.
func (c *Consumer) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if !c.cfg.Templates.Enabled || !c.cfg.Templates.Successions {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				key, ok := spanOf(sp.TraceID(), sp.SpanID())
				if !ok || sp.Name() == "" {
					continue
				}
				if r, seen := c.spans.get(key); seen && r.first != "" {
					c.countSpanFirst(r.ent, sp.Name(), r.first, r.firstSev)
					changed = true
					continue
				}
				c.names.put(key, sp.Name())
			}
		}
	}
	if changed {
		c.write(ctx, 0)
	}
	return nil
}

// spanName is a span's name: one the Consumer received, else the
// lookup's.
func (c *Consumer) spanName(k spanKey) string {
	if n, ok := c.names.get(k); ok {
		return n
	}
	if c.lookup != nil {
		return c.lookup.SpanName(k)
	}
	return ""
}

// countSpanFirst counts one span of name whose first record was of
// template tmpl at level sev. The caller holds c.mu.
func (c *Consumer) countSpanFirst(ent *entity, name, tmpl, sev string) {
	c.keyBuf = appendKey(c.keyBuf[:0], "f", sev, name, tmpl, ent.node, ent.namespace, ent.pod, ent.service)
	c.add(c.keyBuf, "F"+sev, func() labels.Labels {
		return build(MetricSpanFirst, "namespace", ent.namespace, "node", ent.node, "pod", ent.pod,
			"service", ent.service, "severity", sev, "span_name", name, "template", tmpl)
	}, func() labels.Labels {
		return build(MetricSpanFirst, "severity", sev, OverflowLabel, "true")
	}, &metaSpanFirst, MetricSpanFirst, &c.boundedT, c.cfg.Templates.MaxSeries)
}
