package forward

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/redact"
)

// Fake secrets, never real ones: random tokens of the providers' shapes.

const (
	alnum    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upperNum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b64url   = alnum + "-_"
)

// fakeSecret is a secret in its context and the random parts of it that
// must not reach the backend.
type fakeSecret struct {
	kind, text string
	cores      []string
}

type secretGen struct{ rnd *rand.Rand }

func (g secretGen) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rnd.IntN(len(alphabet))]
	}
	return string(b)
}

// secretKinds make one fake secret each, in a sentence as logs and
// attributes carry them.
var secretKinds = []func(g secretGen) fakeSecret{
	func(g secretGen) fakeSecret {
		c := g.str(b64url, 74) + "T3BlbkFJ" + g.str(b64url, 74)
		return fakeSecret{"openai", "calling the API with sk-proj-" + c, []string{c}}
	},
	func(g secretGen) fakeSecret {
		c := g.str(upperNum, 16)
		return fakeSecret{"aws", "aws_access_key_id AKIA" + c + " in region us-east-1", []string{c}}
	},
	func(g secretGen) fakeSecret {
		c := g.str(alnum, 36)
		return fakeSecret{"github", "git clone https://github.com/org/repo with ghp_" + c, []string{c}}
	},
	func(g secretGen) fakeSecret {
		payload, _ := json.Marshal(map[string]any{"sub": g.str(alnum, 12), "iat": 1700000000 + g.rnd.IntN(1e6), "scope": "inference"})
		p := base64.RawURLEncoding.EncodeToString(payload)
		sig := g.str(b64url, 43)
		return fakeSecret{"jwt", "session eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + p + "." + sig, []string{p, sig}}
	},
	func(g secretGen) fakeSecret {
		c := g.str(b64url, 40)
		return fakeSecret{"bearer", "Authorization: Bearer " + c, []string{c}}
	},
}

// placements put a secret's text somewhere in traces or logs that the
// redactor must reach.
var placements = []struct {
	name string
	put  func(td ptrace.Traces, ld plog.Logs, i int, text string)
}{
	{"span attribute", func(td ptrace.Traces, _ plog.Logs, i int, text string) {
		span(td, i).Attributes().PutStr("app.note", text)
	}},
	{"span event attribute", func(td ptrace.Traces, _ plog.Logs, i int, text string) {
		ev := span(td, i).Events().AppendEmpty()
		ev.SetName("exception")
		ev.Attributes().PutStr("exception.message", "request failed: "+text)
	}},
	{"span status message", func(td ptrace.Traces, _ plog.Logs, i int, text string) {
		span(td, i).Status().SetCode(ptrace.StatusCodeError)
		span(td, i).Status().SetMessage(text)
	}},
	{"resource attribute", func(td ptrace.Traces, _ plog.Logs, _ int, text string) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("process.command_line", "python serve.py --note '"+text+"'")
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{0: 0xee, 15: byte(rs.Resource().Attributes().Len())})
		sp.SetSpanID(pcommon.SpanID{0: 0xee, 7: byte(td.ResourceSpans().Len())})
		sp.SetName("startup")
	}},
	{"log body", func(_ ptrace.Traces, ld plog.Logs, _ int, text string) {
		logRecord(ld).Body().SetStr("ERROR upstream call failed: " + text)
	}},
	{"JSON log body", func(_ ptrace.Traces, ld plog.Logs, _ int, text string) {
		b, _ := json.Marshal(map[string]any{"level": "error", "msg": text, "status": 500})
		logRecord(ld).Body().SetStr(string(b))
	}},
	{"map log body", func(_ ptrace.Traces, ld plog.Logs, _ int, text string) {
		m := logRecord(ld).Body().SetEmptyMap()
		m.PutStr("message", text)
		m.PutEmptyMap("context").PutStr("detail", text)
	}},
	{"log attribute", func(_ ptrace.Traces, ld plog.Logs, _ int, text string) {
		lr := logRecord(ld)
		lr.Body().SetStr("request")
		lr.Attributes().PutStr("http.request.header.x-debug", text)
	}},
	{"log attribute list", func(_ ptrace.Traces, ld plog.Logs, _ int, text string) {
		lr := logRecord(ld)
		lr.Body().SetStr("argv")
		s := lr.Attributes().PutEmptySlice("process.command_args")
		s.AppendEmpty().SetStr("--token-note")
		s.AppendEmpty().SetStr(text)
	}},
	{"span name", func(td ptrace.Traces, _ plog.Logs, i int, text string) {
		span(td, i).SetName("GET /v1/models?note=" + strings.ReplaceAll(text, " ", "+"))
	}},
}

// span returns the i-th span of the corpus's first resource, adding it.
func span(td ptrace.Traces, i int) ptrace.Span {
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for ss.Len() <= i {
		sp := ss.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{15: byte(ss.Len())})
		sp.SetSpanID(pcommon.SpanID{7: byte(ss.Len())})
		sp.SetName("POST /v1/chat/completions")
		sp.SetKind(ptrace.SpanKindServer)
	}
	return ss.At(i)
}

func logRecord(ld plog.Logs) plog.LogRecord {
	return ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
}

// corpus returns traces and logs with n fake secrets of every kind in
// every placement, and the secrets.
func corpus(seed uint64, n int) (ptrace.Traces, plog.Logs, []fakeSecret) {
	g := secretGen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "inference-gateway")
	rs.ScopeSpans().AppendEmpty()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "inference-gateway")
	rl.ScopeLogs().AppendEmpty()
	var secrets []fakeSecret
	for i := range n {
		s := secretKinds[i%len(secretKinds)](g)
		secrets = append(secrets, s)
		placements[i%len(placements)].put(td, ld, i/len(placements), s.text)
	}
	return td, ld, secrets
}

func TestNoSecretReachesTheBackend(t *testing.T) {
	for _, p := range []int{0, 2} {
		p := protocols[p]
		t.Run(p.name, func(t *testing.T) {
			be := startBackend(t, &sink{})
			r, err := redact.New(redact.Default(), prometheus.NewRegistry())
			require.NoError(t, err)
			f := startForwarder(t, Config{Endpoint: p.url(be)}, nil)

			// 50 secrets: 10 of each of the 5 kinds, in 10 places. The
			// chain is the server's: redaction in place, then the
			// forwarder.
			td, ld, secrets := corpus(7, 50)
			require.Len(t, secrets, 50)
			before := dump(t, td, ld)
			for _, s := range secrets {
				for _, c := range s.cores {
					require.Contains(t, before, c, "the corpus holds %s", s.kind)
				}
			}
			spans, records := td.SpanCount(), ld.LogRecordCount()
			r.Traces(td)
			r.Logs(ld)
			require.NoError(t, f.ConsumeTraces(t.Context(), td))
			require.NoError(t, f.ConsumeLogs(t.Context(), ld))
			eventually(t, func() bool { s, l := be.sink.counts(); return s == spans && l == records }, "everything arrives")

			be.sink.mu.Lock()
			got := dump(t, be.sink.traces[0], be.sink.logs[0])
			be.sink.mu.Unlock()
			for _, s := range secrets {
				for _, c := range s.cores {
					// Not NotContains: its message would print the secrets.
					require.False(t, strings.Contains(got, c), "a %s secret reached the backend", s.kind)
				}
			}
			require.Contains(t, got, "[REDACTED:", "the backend got the redacted data")
			require.Contains(t, got, "inference-gateway", "and the rest of it")
		})
	}
}

// dump marshals traces and logs to OTLP JSON, strings unescaped so that a
// secret cannot hide behind JSON escapes.
func dump(t *testing.T, td ptrace.Traces, ld plog.Logs) string {
	t.Helper()
	tj, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	lj, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	var b strings.Builder
	for _, raw := range [][]byte{tj, lj} {
		var v any
		require.NoError(t, json.Unmarshal(raw, &v))
		collect(&b, v)
	}
	return string(tj) + string(lj) + b.String()
}

// collect writes every string in v, and map keys, one per line.
func collect(b *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []any:
		for _, e := range v {
			collect(b, e)
		}
	case map[string]any:
		for k, e := range v {
			fmt.Fprintln(b, k)
			// Bytes values are base64 in OTLP JSON.
			if s, ok := e.(string); ok && k == "bytesValue" {
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
					b.Write(raw)
					b.WriteByte('\n')
				}
			}
			collect(b, e)
		}
	}
}
