package hops

import (
	"flag"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the golden files")

// t0 is when the hand-built traces start.
var t0 = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

const ms = time.Millisecond

// tspan is a hand-built span: ids are single bytes, times offsets from t0.
type tspan struct {
	service, name string
	kind          ptrace.SpanKind
	id, parent    byte
	start, dur    time.Duration
	err           bool
	// followsFrom links the span to that span as FOLLOWS_FROM.
	followsFrom byte
	attrs       map[string]any
}

// build makes one trace of spans, one resource per span.
func build(spans ...tspan) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, s := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", s.service)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{0: 0xab, 15: 1})
		sp.SetSpanID(pcommon.SpanID{7: s.id})
		if s.parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{7: s.parent})
		}
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.start)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.start + s.dur)))
		if s.err {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		if s.followsFrom != 0 {
			l := sp.Links().AppendEmpty()
			l.SetTraceID(sp.TraceID())
			l.SetSpanID(pcommon.SpanID{7: s.followsFrom})
			l.Attributes().PutStr("opentracing.ref_type", "follows_from")
		}
		if err := sp.Attributes().FromRaw(s.attrs); err != nil {
			panic(err)
		}
	}
	return td
}

// exclusive maps each service of t to its exclusive time.
func exclusive(t Trace) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, s := range t.Services {
		out[s.Service] = s.Exclusive.D()
	}
	return out
}

// spanByName finds the row of the span named name.
func spanByName(t *testing.T, tr Trace, name string) Span {
	t.Helper()
	for _, s := range tr.Spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return Span{}
}

// byTrace splits td into one Traces per trace id, in first-seen order.
func byTrace(td ptrace.Traces) []ptrace.Traces {
	index := map[pcommon.TraceID]int{}
	var out []ptrace.Traces
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j)
			for k := range ss.Spans().Len() {
				sp := ss.Spans().At(k)
				n, ok := index[sp.TraceID()]
				if !ok {
					n = len(out)
					index[sp.TraceID()] = n
					out = append(out, ptrace.NewTraces())
				}
				nrs := out[n].ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(nrs.Resource())
				nss := nrs.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(nss.Scope())
				sp.CopyTo(nss.Spans().AppendEmpty())
			}
		}
	}
	return out
}
