package redact

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

// benchTraces builds n spans of an LLM gateway: HTTP and GenAI attributes,
// a fifth with prompts and completions, a tenth with an exception event,
// one in twenty with a secret (an Authorization header or a key in a URL).
func benchTraces(n int) ptrace.Traces {
	g := redacttest.NewGen(11)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	res.PutStr("service.name", "inference-gateway")
	res.PutStr("k8s.pod.name", "inference-gateway-7d9f8c6b5-x2k4p")
	res.PutStr("k8s.namespace.name", "llm-serving")
	res.PutStr("host.name", "gpu-node-06")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("github.com/acme/gateway")
	messages := `[{"role":"system","parts":[{"type":"text","content":"You are a helpful assistant for ACME support."}]},` +
		`{"role":"user","parts":[{"type":"text","content":"` + strings.Repeat("My order did not arrive, what can I do? ", 12) + `"}]}]`
	stack := strings.Repeat("goroutine 1 [running]:\nmain.handler(0xc000123456)\n\t/app/handler.go:42 +0x1a\n", 12)
	for i := range n {
		s := ss.Spans().AppendEmpty()
		s.SetName("POST /v1/chat/completions")
		s.SetKind(ptrace.SpanKindServer)
		a := s.Attributes()
		a.PutStr("http.request.method", "POST")
		a.PutStr("url.full", fmt.Sprintf("https://gateway.llm-serving.svc:8443/v1/chat/completions?request=%d", i))
		a.PutStr("server.address", "gateway.llm-serving.svc")
		a.PutInt("http.response.status_code", 200)
		a.PutStr("user_agent.original", "openai-python/1.54.3")
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.provider.name", "openai")
		a.PutStr("gen_ai.request.model", "meta-llama/Llama-3.1-70B-Instruct")
		a.PutStr("gen_ai.response.id", "chatcmpl-"+g.Str(redacttest.Alnum, 24))
		a.PutInt("gen_ai.usage.input_tokens", int64(100+i%900))
		a.PutInt("gen_ai.usage.output_tokens", int64(20+i%300))
		a.PutDouble("gen_ai.request.temperature", 0.7)
		a.PutStr("tenant", fmt.Sprintf("tenant-%d", i%17))
		a.PutStr("request.id", g.Str(redacttest.HexLower, 32))
		if i%5 == 0 {
			a.PutStr("gen_ai.input.messages", messages)
			a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"I am sorry to hear that."}]}]`)
		}
		if i%10 == 3 {
			ev := s.Events().AppendEmpty()
			ev.SetName("exception")
			ev.Attributes().PutStr("exception.type", "*net.OpError")
			ev.Attributes().PutStr("exception.message", "dial tcp 10.0.3.7:8000: connect: connection refused")
			ev.Attributes().PutStr("exception.stacktrace", stack)
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("upstream unavailable")
		}
		if i%20 == 7 {
			a.PutEmptySlice("http.request.header.authorization").AppendEmpty().SetStr("Bearer " + g.Str(redacttest.B64URL, 40))
			a.PutStr("http.upstream.url", "https://api.example.com/v1/embed?api_key="+g.Str(redacttest.Alnum, 32))
		}
	}
	return td
}

// walk is the baseline: it visits every value redaction visits and reads
// each string, redacting nothing.
func walk(td ptrace.Traces) int {
	n := 0
	var value func(v pcommon.Value)
	value = func(v pcommon.Value) {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			n += len(v.Str())
		case pcommon.ValueTypeMap:
			for _, x := range v.Map().All() {
				value(x)
			}
		case pcommon.ValueTypeSlice:
			for _, x := range v.Slice().All() {
				value(x)
			}
		}
	}
	attrs := func(m pcommon.Map) {
		for k, v := range m.All() {
			n += len(k)
			value(v)
		}
	}
	for _, rs := range td.ResourceSpans().All() {
		attrs(rs.Resource().Attributes())
		for _, ss := range rs.ScopeSpans().All() {
			attrs(ss.Scope().Attributes())
			for _, s := range ss.Spans().All() {
				n += len(s.Name()) + len(s.Status().Message())
				attrs(s.Attributes())
				for _, e := range s.Events().All() {
					n += len(e.Name())
					attrs(e.Attributes())
				}
				for _, l := range s.Links().All() {
					attrs(l.Attributes())
				}
			}
		}
	}
	return n
}

// BenchmarkRedactSpans redacts batches of 1000 gateway spans, each
// iteration a fresh copy, and in the same iteration walks another copy as
// the baseline (A B alternating); it reports the cost per span of each and
// their ratio:
//
//	go test ./internal/redact -run '^$' -bench RedactSpans -benchtime 200x -count 3
func BenchmarkRedactSpans(b *testing.B) {
	const spans = 1000
	src := benchTraces(spans)
	r, err := New(Default(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var redactTime, walkTime time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		x, y := ptrace.NewTraces(), ptrace.NewTraces()
		src.CopyTo(x)
		src.CopyTo(y)
		b.StartTimer()
		start := time.Now()
		r.Traces(x)
		redactTime += time.Since(start)
		start = time.Now()
		walk(y)
		walkTime += time.Since(start)
	}
	total := float64(b.N * spans)
	b.ReportMetric(float64(redactTime.Nanoseconds())/total, "ns/span")
	b.ReportMetric(float64(walkTime.Nanoseconds())/total, "walk-ns/span")
	b.ReportMetric(float64(redactTime)/float64(walkTime), "ratio")
}

// BenchmarkString measures the value patterns alone on typical strings.
//
//	go test ./internal/redact -run '^$' -bench 'String' -benchtime 2s
func BenchmarkString(b *testing.B) {
	r, err := New(Default(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, s string }{
		{"short", "gpu-node-06"},
		{"url", "https://gateway.llm-serving.svc:8443/v1/chat/completions?request=42"},
		{"hex", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"log-line", "level=info msg=\"request done\" model=llama-3 tokens=512 duration=1.2s tenant=acme"},
		{"secret", "Authorization: Bearer " + strings.Repeat("aB3-", 10)},
		{"json", `{"model":"gpt-4o","max_tokens":512,"temperature":0.2,"stream":true,"user":"u-42"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				r.String(tc.s)
			}
		})
	}
}
