package redact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const pat = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

func TestJSON(t *testing.T) {
	r := newTestRedactor(t, Default())
	f := func(in, want string) {
		t.Helper()
		got, changed := r.String(in)
		require.Equal(t, want, got)
		require.Equal(t, in != want, changed)
		again, ch := r.String(got)
		require.False(t, ch, "idempotent")
		require.Equal(t, got, again)
	}
	// Key order, number text and HTML characters are kept.
	f(`{"b": 1, "password": "x1", "a": {"token": "abc"}, "list": [{"api_key": "k"}], "n": 1.50, "s": "<b>&", "z": null}`,
		`{"b":1,"password":"[REDACTED:secret-key]","a":{"token":"[REDACTED:secret-key]"},"list":[{"api_key":"[REDACTED:secret-key]"}],"n":1.50,"s":"<b>&","z":null}`)
	// JSON without secrets is left as it was, white space included.
	f(`{ "model": "gpt-4o",  "max_tokens": 512, "token_type": "Bearer" }`, `{ "model": "gpt-4o",  "max_tokens": 512, "token_type": "Bearer" }`)
	// A secret object, number or array goes whole; null and "" stay.
	f(`{"credentials": {"user": "u", "pass": "p"}, "pin_password": 1234, "cookies": ["a=b"], "secret": null, "token": ""}`,
		`{"credentials":"[REDACTED:secret-key]","pin_password":"[REDACTED:secret-key]","cookies":"[REDACTED:secret-key]","secret":null,"token":""}`)
	// Patterns inside string values, and JSON inside JSON strings.
	f(`{"msg": "auth with `+pat+` failed"}`, `{"msg":"auth with [REDACTED:github-token] failed"}`)
	f(`{"payload": "{\"password\": \"hunter2\", \"ok\": true}"}`, `{"payload":"{\"password\":\"[REDACTED:secret-key]\",\"ok\":true}"}`)
	// Escapes cannot hide a key.
	f(`{"pass\u0077ord": "x1", "n": 1}`, `{"password":"[REDACTED:secret-key]","n":1}`)
	// Keys that are secrets themselves.
	f(`{"`+pat+`": 1}`, `{"[REDACTED:github-token]":1}`)
	// Arrays at the top, escapes and non-ASCII.
	f(`["ünïcode \u00e9 \n", "`+pat+`"]`, `["ünïcode é \n","[REDACTED:github-token]"]`)
	// Not JSON: the patterns apply to the text.
	f(`{"password": "hunter2", "broken`, `{"password": "[REDACTED:kv-secret]", "broken`)
	f(`{"a":1} trailing password=x`, `{"a":1} trailing password=[REDACTED:kv-secret]`)
	f(`[`, `[`)
	// GenAI keys inside JSON.
	f(`{"gen_ai.prompt": "tell me a secret", "model": "m"}`, `{"gen_ai.prompt":"[REDACTED:genai-content]","model":"m"}`)
	// Deep nesting falls back to patterns instead of failing.
	deep := strings.Repeat("[", 300) + `"password=x"` + strings.Repeat("]", 300)
	got, _ := r.String(deep)
	require.NotContains(t, got, "password=x")
}

func TestValue(t *testing.T) {
	r := newTestRedactor(t, Default())
	v := pcommon.NewValueMap()
	m := v.Map()
	m.PutStr("url", "https://u:s3cretPass@db/x")
	m.PutInt("db.password", 1234)
	m.PutStr("token", "")
	m.PutEmptyMap("credentials").PutStr("user", "bob")
	nested := m.PutEmptyMap("config")
	nested.PutStr("client_secret", "abc")
	nested.PutEmptySlice("list").AppendEmpty().SetStr(pat)
	m.PutEmptyBytes("raw").FromRaw([]byte("password=hunter2"))
	m.PutEmptyBytes("binary").FromRaw([]byte{0xff, 0xfe, 'p', 'a', 's', 's', 'w', 'o', 'r', 'd', '=', 'x'})
	m.PutDouble("gen_ai.request.temperature", 0.2)
	r.Value("attrs", v)
	require.Equal(t, map[string]any{
		"url":         "https://u:[REDACTED:url-credentials]@db/x",
		"db.password": "[REDACTED:secret-key]",
		"token":       "",
		"credentials": "[REDACTED:secret-key]",
		"config": map[string]any{
			"client_secret": "[REDACTED:secret-key]",
			"list":          []any{"[REDACTED:github-token]"},
		},
		"raw":                        []byte("password=[REDACTED:kv-secret]"),
		"binary":                     []byte{0xff, 0xfe, 'p', 'a', 's', 's', 'w', 'o', 'r', 'd', '=', 'x'},
		"gen_ai.request.temperature": 0.2,
	}, m.AsRaw())

	// A slice under a secret key goes whole.
	s := pcommon.NewValueSlice()
	s.Slice().AppendEmpty().SetStr("Bearer abc")
	r.Value("http.request.header.authorization", s)
	require.Equal(t, "[REDACTED:secret-key]", s.Str())
}

func TestGenAI(t *testing.T) {
	const prompt = "Summarise the quarterly report for ACME"
	build := func() (ptrace.Traces, plog.Logs) {
		td := ptrace.NewTraces()
		span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		span.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"`+prompt+`"}]}]`)
		span.Attributes().PutStr("gen_ai.system_instructions", "You are helpful. key "+pat)
		span.Attributes().PutStr("gen_ai.request.model", "gpt-4o")
		span.Attributes().PutInt("gen_ai.usage.input_tokens", 12)
		out := span.Attributes().PutEmptySlice("llm.output_messages")
		out.AppendEmpty().SetEmptyMap().PutStr("message.content", "the answer")
		ev := span.Events().AppendEmpty()
		ev.SetName("gen_ai.user.message")
		ev.Attributes().PutStr("content", prompt)
		ev.Attributes().PutStr("gen_ai.system", "openai")
		ld := plog.NewLogs()
		lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetEventName("gen_ai.user.message")
		lr.Body().SetEmptyMap().PutStr("content", prompt)
		lr2 := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
		lr2.Attributes().PutStr("event.name", "gen_ai.choice")
		lr2.Body().SetStr(prompt)
		return td, ld
	}
	get := func(td ptrace.Traces, ld plog.Logs) map[string]any {
		span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		recs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		return map[string]any{
			"attrs":  span.Attributes().AsRaw(),
			"event":  span.Events().At(0).Attributes().AsRaw(),
			"body":   recs.At(0).Body().AsRaw(),
			"choice": recs.At(1).Body().AsRaw(),
		}
	}
	t.Run("drop", func(t *testing.T) {
		td, ld := build()
		r := newTestRedactor(t, Config{})
		r.Traces(td)
		r.Logs(ld)
		const d = "[REDACTED:genai-content]"
		require.Equal(t, map[string]any{
			"attrs": map[string]any{"gen_ai.input.messages": d, "gen_ai.system_instructions": d, "gen_ai.request.model": "gpt-4o",
				"gen_ai.usage.input_tokens": int64(12), "llm.output_messages": d},
			"event":  map[string]any{"content": d, "gen_ai.system": "openai"},
			"body":   d,
			"choice": d,
		}, get(td, ld))
	})
	t.Run("hash", func(t *testing.T) {
		td, ld := build()
		r := newTestRedactor(t, Config{GenAIContent: GenAIHash})
		r.Traces(td)
		r.Logs(ld)
		got := get(td, ld)
		h := r.hash(prompt)
		require.Regexp(t, `^sha256:[0-9a-f]{16}$`, h)
		require.Equal(t, h, got["event"].(map[string]any)["content"], "equal prompts hash equally")
		require.Equal(t, h, got["choice"])
		require.Regexp(t, `^sha256:[0-9a-f]{16}$`, got["attrs"].(map[string]any)["gen_ai.input.messages"])
		keyed := newTestRedactor(t, Config{GenAIContent: GenAIHash, HashKey: "k1"})
		require.NotEqual(t, h, keyed.hash(prompt), "a hash key changes the hash")
		// Hashing again keeps the hash.
		r.Traces(td)
		require.Equal(t, got, get(td, ld))
	})
	t.Run("keep", func(t *testing.T) {
		td, ld := build()
		r := newTestRedactor(t, Config{GenAIContent: GenAIKeep})
		r.Traces(td)
		r.Logs(ld)
		got := get(td, ld)
		attrs := got["attrs"].(map[string]any)
		require.Contains(t, attrs["gen_ai.input.messages"], prompt)
		require.Equal(t, "You are helpful. key [REDACTED:github-token]", attrs["gen_ai.system_instructions"], "secrets in kept content still go")
		require.Equal(t, prompt, got["choice"])
	})
}

func TestConfigRules(t *testing.T) {
	t.Run("allow", func(t *testing.T) {
		r := newTestRedactor(t, Config{Allow: []string{`^hunter2$`, `EXAMPLE`}})
		got, _ := r.String("password=hunter2 and password=other1 and AKIAIOSFODNN7EXAMPLE")
		require.Equal(t, "password=hunter2 and password=[REDACTED:kv-secret] and AKIAIOSFODNN7EXAMPLE", got)
		v := pcommon.NewValueStr("hunter2")
		r.Value("db.password", v)
		require.Equal(t, "hunter2", v.Str())
	})
	t.Run("deny", func(t *testing.T) {
		r := newTestRedactor(t, Config{Deny: []string{`acme-[0-9a-f]{8}`, `employee=(\d+)`}})
		got, _ := r.String("id acme-0badc0de for employee=4411")
		require.Equal(t, "id [REDACTED:deny] for employee=[REDACTED:deny]", got)
		got, _ = r.String("acme")
		require.Equal(t, "acme", got, "deny patterns run on short strings too")
	})
	t.Run("keys", func(t *testing.T) {
		r := newTestRedactor(t, Config{DenyKeys: []string{"X-Internal-Sig"}, AllowKeys: []string{"app.session_token"}})
		m := pcommon.NewMap()
		m.PutStr("http.request.header.x-internal-sig", "abc")
		m.PutStr("app.session_token", "visible")
		m.PutStr("app.refresh_token", "hidden")
		r.Attributes(m)
		require.Equal(t, map[string]any{"http.request.header.x-internal-sig": "[REDACTED:deny-key]",
			"app.session_token": "visible", "app.refresh_token": "[REDACTED:secret-key]"}, m.AsRaw())
		got, _ := r.String("x-internal-sig: abc123")
		require.Equal(t, "x-internal-sig: [REDACTED:kv-secret]", got, "deny keys count in text too")
	})
	t.Run("disable", func(t *testing.T) {
		r := newTestRedactor(t, Config{DisableRules: []string{"github-token"}})
		got, _ := r.String(pat)
		require.Equal(t, pat, got)
	})
}

// TestConcurrent redacts from several goroutines at once (run with -race).
func TestConcurrent(t *testing.T) {
	r := newTestRedactor(t, Default())
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range 200 {
				td := benchTraces(5)
				r.Traces(td)
				got, _ := r.String(fmt.Sprintf("k%d_%d_password=secret-%d", i, j, j))
				if strings.Contains(got, "secret-") {
					t.Errorf("not redacted: %q", got)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
