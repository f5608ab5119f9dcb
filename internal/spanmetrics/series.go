package spanmetrics

import (
	"sort"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Label names of the span metrics.
const (
	labelService  = "service_name"
	labelSpanName = "span_name"
	labelSpanKind = "span_kind"
	labelStatus   = "status_code"
	labelModel    = "gen_ai_request_model"
	labelProvider = "gen_ai_provider_name"
	labelErrType  = "error_type"
	labelTenant   = "tenant"
	labelOverflow = "otel_metric_overflow"
)

// Attributes read from spans and resources.
const (
	attrServiceName = "service.name"
	attrModel       = "gen_ai.request.model"
	attrProvider    = "gen_ai.provider.name"
	attrErrType     = "error.type"
	attrResendCount = "http.request.resend_count"
	attrGRPCStatus  = "rpc.grpc.status_code"
	unknownService  = "unknown_service"
)

// exemplarRec is the newest exemplar of a series or bucket.
type exemplarRec struct {
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
	// ts is the span's end in milliseconds.
	ts    int64
	value float64
	// fresh is set until a flush writes it.
	fresh bool
}

// offer keeps the exemplar if it is at least as new as the one held.
func (e *exemplarRec) offer(tid pcommon.TraceID, sid pcommon.SpanID, ts int64, v float64) {
	if e.fresh && ts < e.ts {
		return
	}
	*e = exemplarRec{traceID: tid, spanID: sid, ts: ts, value: v, fresh: true}
}

// hist is a running classic histogram: counts per bucket (not cumulative;
// the last is +Inf), their sum and count, and an exemplar per bucket.
type hist struct {
	counts []uint64
	sum    float64
	count  uint64
	ex     []exemplarRec
}

func newHist(bounds []float64) hist {
	return hist{counts: make([]uint64, len(bounds)+1), ex: make([]exemplarRec, len(bounds)+1)}
}

// observe adds v seconds; a non-zero trace id leaves an exemplar in v's bucket.
func (h *hist) observe(bounds []float64, v float64, tid pcommon.TraceID, sid pcommon.SpanID, ts int64) {
	i := sort.SearchFloat64s(bounds, v)
	h.counts[i]++
	h.sum += v
	h.count++
	if !tid.IsEmpty() {
		h.ex[i].offer(tid, sid, ts, v)
	}
}

// spanSeries is the running totals of one span-metric label set.
type spanSeries struct {
	// lbls are the labels without __name__.
	lbls                     labels.Labels
	calls, timeouts, retries float64
	dur                      hist
	// selfSum and selfCount total the spans' self time: duration less
	// their children's (selftime.go).
	selfSum, selfCount float64
	// parent is set once a span of the series has had a child: before,
	// the self time is the duration, and is not written.
	parent  bool
	callsEx exemplarRec
	// startMs is when the series was created, the start of its totals.
	startMs int64
}

// spanInfo is what one span contributes to the span metrics.
type spanInfo struct {
	service, name                    string
	kind                             ptrace.SpanKind
	status                           ptrace.StatusCode
	model, provider, errType, tenant string
	seconds                          float64
	endMs                            int64
	timeout, retry                   bool
	traceID                          pcommon.TraceID
	spanID                           pcommon.SpanID
}

// kindLabel is the connector's value of span_kind.
func kindLabel(k ptrace.SpanKind) string {
	switch k {
	case ptrace.SpanKindInternal:
		return "SPAN_KIND_INTERNAL"
	case ptrace.SpanKindServer:
		return "SPAN_KIND_SERVER"
	case ptrace.SpanKindClient:
		return "SPAN_KIND_CLIENT"
	case ptrace.SpanKindProducer:
		return "SPAN_KIND_PRODUCER"
	case ptrace.SpanKindConsumer:
		return "SPAN_KIND_CONSUMER"
	}
	return "SPAN_KIND_UNSPECIFIED"
}

// statusLabel is the connector's value of status_code.
func statusLabel(c ptrace.StatusCode) string {
	switch c {
	case ptrace.StatusCodeOk:
		return "STATUS_CODE_OK"
	case ptrace.StatusCodeError:
		return "STATUS_CODE_ERROR"
	}
	return "STATUS_CODE_UNSET"
}

// appendKey writes the identity of si's series into buf.
func appendKey(buf []byte, si *spanInfo) []byte {
	buf = append(buf, si.service...)
	buf = append(buf, 0xff)
	buf = append(buf, si.name...)
	buf = append(buf, 0xff, byte(si.kind), byte(si.status))
	buf = append(buf, si.model...)
	buf = append(buf, 0xff)
	buf = append(buf, si.provider...)
	buf = append(buf, 0xff)
	buf = append(buf, si.errType...)
	buf = append(buf, 0xff)
	buf = append(buf, si.tenant...)
	return buf
}

// seriesLabels are the labels of si's series; empty optional values are
// left out.
func seriesLabels(si *spanInfo) labels.Labels {
	b := labels.NewScratchBuilder(8)
	b.Add(labelService, si.service)
	b.Add(labelSpanName, si.name)
	b.Add(labelSpanKind, kindLabel(si.kind))
	b.Add(labelStatus, statusLabel(si.status))
	for _, l := range [...][2]string{{labelModel, si.model}, {labelProvider, si.provider}, {labelErrType, si.errType}, {labelTenant, si.tenant}} {
		if l[1] != "" {
			b.Add(l[0], l[1])
		}
	}
	b.Sort()
	return b.Labels()
}

// attrStr is the value of key on the span, else on the resource, as a
// string ("" when neither has it).
func attrStr(span, res pcommon.Map, key string) string {
	if key == "" {
		return ""
	}
	if v, ok := span.Get(key); ok {
		return v.AsString()
	}
	if v, ok := res.Get(key); ok {
		return v.AsString()
	}
	return ""
}

// serviceOf is the resource's service.name.
func serviceOf(res pcommon.Map) string {
	if v, ok := res.Get(attrServiceName); ok && v.Str() != "" {
		return v.Str()
	}
	return unknownService
}

// isTimeout tells whether a span failed by a timeout: its error.type names
// a timeout or a deadline, or its gRPC status is DEADLINE_EXCEEDED.
func isTimeout(errType string, attrs pcommon.Map) bool {
	if errType != "" {
		e := strings.ToLower(errType)
		for _, s := range []string{"timeout", "timed out", "timed_out", "timedout", "deadline"} {
			if strings.Contains(e, s) {
				return true
			}
		}
	}
	if v, ok := attrs.Get(attrGRPCStatus); ok && v.Type() == pcommon.ValueTypeInt && v.Int() == 4 {
		return true
	}
	return false
}

// resendCount is http.request.resend_count, or -1 when absent.
func resendCount(attrs pcommon.Map) int64 {
	v, ok := attrs.Get(attrResendCount)
	if !ok {
		return -1
	}
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int()
	case pcommon.ValueTypeDouble:
		return int64(v.Double())
	}
	return -1
}

// spanSeconds is the span's duration in seconds; a span that ends before
// it starts lasts 0.
func spanSeconds(sp ptrace.Span) float64 {
	s, e := sp.StartTimestamp(), sp.EndTimestamp()
	if e <= s {
		return 0
	}
	return time.Duration(e - s).Seconds()
}

// siblingKey groups the spans that would be retries of each other.
type siblingKey struct {
	trace   pcommon.TraceID
	parent  pcommon.SpanID
	service string
	name    string
	kind    ptrace.SpanKind
}

// failedSibling is the earliest-ending failed span of a sibling group.
type failedSibling struct {
	span pcommon.SpanID
	end  pcommon.Timestamp
}

// failedSiblings maps each group of siblings holding a failed span to the
// earliest-ending one; a later sibling that starts after it ended is a
// retry. Nil when the batch has no failed child span.
func failedSiblings(td ptrace.Traces) map[siblingKey]failedSibling {
	var out map[siblingKey]failedSibling
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		var service string
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				if sp.Status().Code() != ptrace.StatusCodeError || sp.ParentSpanID().IsEmpty() {
					continue
				}
				if service == "" {
					service = serviceOf(rs.Resource().Attributes())
				}
				if out == nil {
					out = map[siblingKey]failedSibling{}
				}
				key := siblingKey{sp.TraceID(), sp.ParentSpanID(), service, sp.Name(), sp.Kind()}
				if f, ok := out[key]; !ok || sp.EndTimestamp() < f.end {
					out[key] = failedSibling{sp.SpanID(), sp.EndTimestamp()}
				}
			}
		}
	}
	return out
}

// isRetry tells whether sp retries an earlier call: it says so with
// http.request.resend_count, or a sibling of the same service, name and
// kind failed and ended before sp started.
func isRetry(sp ptrace.Span, service string, failed map[siblingKey]failedSibling) bool {
	if n := resendCount(sp.Attributes()); n >= 0 {
		return n > 0
	}
	if failed == nil || sp.ParentSpanID().IsEmpty() {
		return false
	}
	f, ok := failed[siblingKey{sp.TraceID(), sp.ParentSpanID(), service, sp.Name(), sp.Kind()}]
	return ok && f.span != sp.SpanID() && f.end <= sp.StartTimestamp()
}

// overflowKey is the key of the span-metric overflow series; real keys
// hold 0xff separators and never equal it.
const overflowKey = "overflow"

// overflowLabels label the overflow series, as the connector's
// otel.metric.overflow attribute does.
var overflowLabels = labels.FromStrings(labelOverflow, "true")
