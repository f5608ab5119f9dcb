package redact

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Traces redacts td in place: resource, scope, span, event and link
// attributes, span names, status messages and event names. The caller must
// own td (not share it read-only).
func (r *Redactor) Traces(td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		r.Attributes(rs.Resource().Attributes())
		for _, ss := range rs.ScopeSpans().All() {
			r.scope(ss.Scope())
			for _, span := range ss.Spans().All() {
				r.span(span)
			}
		}
	}
}

func (r *Redactor) scope(s pcommon.InstrumentationScope) {
	r.Attributes(s.Attributes())
}

func (r *Redactor) span(span ptrace.Span) {
	if out, ch := r.text(span.Name(), 0); ch {
		span.SetName(out)
	}
	r.Attributes(span.Attributes())
	if out, ch := r.text(span.Status().Message(), 0); ch {
		span.Status().SetMessage(out)
	}
	for _, ev := range span.Events().All() {
		name := ev.Name()
		if out, ch := r.text(name, 0); ch {
			ev.SetName(out)
		}
		r.attributes(ev.Attributes(), "", genAIEvents[name])
	}
	for _, l := range span.Links().All() {
		r.Attributes(l.Attributes())
	}
}

// Logs redacts ld in place: resource, scope and record attributes, and
// bodies; the body of a GenAI event (a gen_ai.*.message record) is GenAI
// content. The caller must own ld.
func (r *Redactor) Logs(ld plog.Logs) {
	for _, rl := range ld.ResourceLogs().All() {
		r.Attributes(rl.Resource().Attributes())
		for _, sl := range rl.ScopeLogs().All() {
			r.scope(sl.Scope())
			for _, lr := range sl.LogRecords().All() {
				r.logRecord(lr)
			}
		}
	}
}

func (r *Redactor) logRecord(lr plog.LogRecord) {
	event := lr.EventName()
	if event == "" {
		if v, ok := lr.Attributes().Get("event.name"); ok && v.Type() == pcommon.ValueTypeStr {
			event = v.Str()
		}
	}
	genAI := genAIEvents[event]
	r.attributes(lr.Attributes(), "", genAI)
	r.value("", lr.Body(), genAI)
}

// Metrics redacts md in place: resource, scope, data point and exemplar
// attributes and metric descriptions (names stay: they are not free text).
// The caller must own md.
func (r *Redactor) Metrics(md pmetric.Metrics) {
	for _, rm := range md.ResourceMetrics().All() {
		r.Attributes(rm.Resource().Attributes())
		for _, sm := range rm.ScopeMetrics().All() {
			r.scope(sm.Scope())
			for _, m := range sm.Metrics().All() {
				if out, ch := r.text(m.Description(), 0); ch {
					m.SetDescription(out)
				}
				r.metric(m)
			}
		}
	}
}

func (r *Redactor) metric(m pmetric.Metric) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		for _, dp := range m.Gauge().DataPoints().All() {
			r.Attributes(dp.Attributes())
			r.exemplars(dp.Exemplars())
		}
	case pmetric.MetricTypeSum:
		for _, dp := range m.Sum().DataPoints().All() {
			r.Attributes(dp.Attributes())
			r.exemplars(dp.Exemplars())
		}
	case pmetric.MetricTypeHistogram:
		for _, dp := range m.Histogram().DataPoints().All() {
			r.Attributes(dp.Attributes())
			r.exemplars(dp.Exemplars())
		}
	case pmetric.MetricTypeExponentialHistogram:
		for _, dp := range m.ExponentialHistogram().DataPoints().All() {
			r.Attributes(dp.Attributes())
			r.exemplars(dp.Exemplars())
		}
	case pmetric.MetricTypeSummary:
		for _, dp := range m.Summary().DataPoints().All() {
			r.Attributes(dp.Attributes())
		}
	}
}

func (r *Redactor) exemplars(es pmetric.ExemplarSlice) {
	for _, e := range es.All() {
		r.Attributes(e.FilteredAttributes())
	}
}
