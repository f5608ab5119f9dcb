// Package tracestest makes realistic OTLP spans and logs for the tests and
// benchmarks of the trace store and its callers: an LLM-serving request
// path of five services, with the resource and span attributes their SDKs
// and the Kubernetes attributes processor set.
package tracestest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Services are the services of a generated request, caller first.
var Services = []string{"gateway", "auth", "router", "retriever", "vllm"}

// TenantAttribute is the attribute carrying the tenant in generated spans.
const TenantAttribute = "tenant.id"

// Trace describes one generated trace.
type Trace struct {
	ID        pcommon.TraceID
	RequestID string // on the root span as request_id
	Tenant    string
	Start     time.Time
	Duration  time.Duration
	Spans     int
	Error     bool
	Services  []string
}

// Gen makes traces deterministically from a seed.
type Gen struct {
	rng   *rand.Rand
	next  time.Time
	step  time.Duration
	count uint64
}

// NewGen starts traces at start, one every step.
func NewGen(seed uint64, start time.Time, step time.Duration) *Gen {
	return &Gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), next: start, step: step}
}

// Batch returns the spans of traces traces of spans spans each (at least
// one), one ResourceSpans per service as an SDK exporter batches them.
func (g *Gen) Batch(traces, spans int) (ptrace.Traces, []Trace) {
	td := ptrace.NewTraces()
	scopes := make(map[string]ptrace.SpanSlice, len(Services))
	infos := make([]Trace, 0, traces)
	for range traces {
		infos = append(infos, g.trace(td, scopes, spans))
	}
	return td, infos
}

// Batches returns n batches of Batch(traces, spans).
func (g *Gen) Batches(n, traces, spans int) ([]ptrace.Traces, []Trace) {
	out := make([]ptrace.Traces, 0, n)
	var infos []Trace
	for range n {
		td, in := g.Batch(traces, spans)
		out = append(out, td)
		infos = append(infos, in...)
	}
	return out, infos
}

func (g *Gen) scope(td ptrace.Traces, scopes map[string]ptrace.SpanSlice, svc string) ptrace.SpanSlice {
	if s, ok := scopes[svc]; ok {
		return s
	}
	rs := td.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	setResource(rs.Resource().Attributes(), svc, int(g.rng.IntN(3)))
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
	ss.Scope().SetVersion("0.72.0")
	scopes[svc] = ss.Spans()
	return ss.Spans()
}

// setResource sets the attributes of pod replica of svc.
func setResource(a pcommon.Map, svc string, replica int) {
	a.PutStr("service.name", svc)
	a.PutStr("service.version", "1.4.2")
	a.PutStr("service.namespace", "inference")
	a.PutStr("deployment.environment.name", "production")
	a.PutStr("k8s.namespace.name", "inference")
	a.PutStr("k8s.deployment.name", svc)
	a.PutStr("k8s.pod.name", fmt.Sprintf("%s-7d9f8c6b5-%c%c%c%c%c", svc, 'a'+replica, 'x', 'k', 'q', 'z'))
	a.PutStr("k8s.node.name", fmt.Sprintf("gpu-node-%02d", replica+1))
	a.PutStr("host.name", fmt.Sprintf("gpu-node-%02d", replica+1))
	a.PutStr("telemetry.sdk.name", "opentelemetry")
	a.PutStr("telemetry.sdk.language", "go")
	a.PutStr("telemetry.sdk.version", "1.47.0")
}

// trace appends one trace: a chain through the services, then extra spans
// under the model server (token streaming, cache lookups).
func (g *Gen) trace(td ptrace.Traces, scopes map[string]ptrace.SpanSlice, n int) Trace {
	g.count++
	var tid pcommon.TraceID
	binary.BigEndian.PutUint64(tid[:8], g.rng.Uint64())
	binary.BigEndian.PutUint64(tid[8:], g.count)
	start := g.next
	g.next = g.next.Add(g.step)
	info := Trace{
		ID: tid, Start: start, RequestID: "req-" + tid.String(),
		Tenant: fmt.Sprintf("tenant-%d", g.rng.IntN(8)), Spans: max(n, 1),
	}
	total := time.Duration(200+g.rng.IntN(3000)) * time.Millisecond
	info.Duration = total
	info.Error = g.rng.IntN(50) == 0
	var parent pcommon.SpanID
	for i := range info.Spans {
		svc := Services[min(i, len(Services)-1)]
		sp := g.scope(td, scopes, svc).AppendEmpty()
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], g.rng.Uint64()|1)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetParentSpanID(parent)
		off := time.Duration(i) * time.Millisecond
		dur := total - 2*off
		if i >= len(Services) {
			off = time.Duration(len(Services)+i) * time.Millisecond
			dur = time.Duration(1+g.rng.IntN(40)) * time.Millisecond
		}
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(off)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(off + max(dur, time.Millisecond))))
		g.spanAttrs(sp, svc, i, &info)
		if i < len(Services) {
			parent = sid
		}
		if !contains(info.Services, svc) {
			info.Services = append(info.Services, svc)
		}
	}
	return info
}

func (g *Gen) spanAttrs(sp ptrace.Span, svc string, i int, info *Trace) {
	a := sp.Attributes()
	a.PutStr(TenantAttribute, info.Tenant)
	switch {
	case i == 0:
		sp.SetName("POST /v1/chat/completions")
		sp.SetKind(ptrace.SpanKindServer)
		a.PutStr("http.request.method", "POST")
		a.PutStr("http.route", "/v1/chat/completions")
		a.PutStr("url.path", "/v1/chat/completions")
		a.PutStr("url.scheme", "https")
		a.PutStr("server.address", "api.example.com")
		a.PutStr("user_agent.original", "openai-python/1.54.0")
		a.PutStr("request_id", info.RequestID)
	case svc == "vllm" && i == len(Services)-1:
		sp.SetName("chat llama-3.1-70b")
		sp.SetKind(ptrace.SpanKindServer)
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.system", "vllm")
		a.PutStr("gen_ai.request.model", "meta-llama/Llama-3.1-70B-Instruct")
		a.PutInt("gen_ai.usage.input_tokens", int64(100+g.rng.IntN(4000)))
		a.PutInt("gen_ai.usage.output_tokens", int64(10+g.rng.IntN(800)))
		a.PutDouble("gen_ai.request.temperature", 0.7)
	case svc == "vllm":
		sp.SetName("decode_step")
		sp.SetKind(ptrace.SpanKindInternal)
		a.PutInt("vllm.batch_size", int64(1+g.rng.IntN(64)))
	default:
		sp.SetName(fmt.Sprintf("POST /internal/%s", svc))
		sp.SetKind(ptrace.SpanKindServer)
		a.PutStr("http.request.method", "POST")
		a.PutStr("http.route", "/internal/"+svc)
		a.PutInt("http.response.status_code", 200)
		a.PutStr("network.peer.address", fmt.Sprintf("10.42.%d.%d", g.rng.IntN(8), g.rng.IntN(250)))
	}
	if info.Error && i == min(info.Spans, len(Services))-1 {
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("CUDA out of memory")
	}
}

// Logs returns one log record per span of td, as the services would log
// them: the record carries the span's trace and span ids, and the root
// span's record a JSON string body holding the request id.
func Logs(td ptrace.Traces, requestIDs map[pcommon.TraceID]string) plog.Logs {
	ld := plog.NewLogs()
	for i := range td.ResourceSpans().Len() {
		rs := td.ResourceSpans().At(i)
		rl := ld.ResourceLogs().AppendEmpty()
		rs.Resource().CopyTo(rl.Resource())
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName("log/slog")
		for j := range rs.ScopeSpans().Len() {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				lr := sl.LogRecords().AppendEmpty()
				lr.SetTimestamp(sp.StartTimestamp())
				lr.SetObservedTimestamp(sp.StartTimestamp())
				lr.SetTraceID(sp.TraceID())
				lr.SetSpanID(sp.SpanID())
				lr.SetSeverityNumber(plog.SeverityNumberInfo)
				lr.SetSeverityText("INFO")
				if sp.ParentSpanID().IsEmpty() {
					lr.Body().SetStr(fmt.Sprintf(`{"msg":"request received","request_id":%q,"path":"/v1/chat/completions"}`, requestIDs[sp.TraceID()]))
				} else {
					lr.Body().SetStr("handled " + sp.Name())
				}
			}
		}
	}
	return ld
}

func contains(s []string, v string) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}
