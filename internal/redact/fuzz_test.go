package redact

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

// fuzzSeeds are the fake secrets and look-alikes of the corpus.
func fuzzSeeds() []string {
	g := redacttest.NewGen(3)
	var seeds []string
	for _, k := range redacttest.SecretKinds() {
		s := k.New(g)
		seeds = append(seeds, s.Text, s.Key+"="+s.Text)
	}
	for _, k := range redacttest.LookAlikeKinds() {
		seeds = append(seeds, k.New(g, 0))
	}
	return append(seeds, "", "[REDACTED:jwt]", "password=[REDACTED:kv-secret]x", "authorization:[[REDACTED:auth-header]]",
		"sha256:0123456789abcdef", `{"a":"\u0000"}`, "Bearer \xff\xfe")
}

// FuzzString checks that redaction never panics, is idempotent and never
// makes a valid UTF-8 string invalid:
//
//	go test ./internal/redact -run '^$' -fuzz FuzzString -fuzztime 60s
func FuzzString(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	r, err := New(Config{Deny: []string{`acme-[0-9]+`}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once, _ := r.String(s)
		twice, changed := r.String(once)
		if changed || twice != once {
			t.Fatalf("not idempotent:\n in: %q\n 1st: %q\n 2nd: %q", s, once, twice)
		}
		if utf8.ValidString(s) && !utf8.ValidString(once) {
			t.Fatalf("invalid UTF-8 out of %q: %q", s, once)
		}
	})
}

// FuzzValueJSON checks pcommon values holding JSON (or not quite JSON)
// under a key: no panic, idempotent, and a secret key's value never
// survives.
//
//	go test ./internal/redact -run '^$' -fuzz FuzzValueJSON -fuzztime 60s
func FuzzValueJSON(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add("app.body", `{"note":"`+strings.ReplaceAll(s, `"`, `\"`)+`","n":[1,2.50,{"password":"pw-`+s[:min(len(s), 8)]+`"}]}`)
	}
	f.Add("gen_ai.input.messages", `[{"role":"user","content":"hi"}]`)
	f.Add("db.password", `{"x":1}`)
	f.Add("app.body", `{"a":{"b":{"c":"{\"token\":\"t0k3n-xyz\"}"}}}`)
	modes := []*Redactor{}
	for _, mode := range []string{GenAIDrop, GenAIHash, GenAIKeep} {
		r, err := New(Config{GenAIContent: mode}, nil)
		if err != nil {
			f.Fatal(err)
		}
		modes = append(modes, r)
	}
	f.Fuzz(func(t *testing.T, key, body string) {
		for _, r := range modes {
			v := pcommon.NewValueStr(body)
			r.Value(key, v)
			once := v.AsString()
			r.Value(key, v)
			if twice := v.AsString(); twice != once {
				t.Fatalf("%s: not idempotent for %q=%q:\n 1st: %q\n 2nd: %q", r.genAI, key, body, once, twice)
			}
			if kind := r.keys.kind(key); (kind == keySecret || kind == keyDenied) && body != "" && !isMarker(body) && once != marker(keyRule(kind)) {
				t.Fatalf("secret key %q kept %q", key, once)
			}
		}
	})
}

// FuzzJSONParser checks the JSON parser against encoding/json: it accepts
// exactly what json.Valid accepts, and what it writes back decodes to the
// same value.
//
//	go test ./internal/redact -run '^$' -fuzz FuzzJSONParser -fuzztime 60s
func FuzzJSONParser(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"]}`, `[]`, `{}`, ` 0 `,
		`"\ud800"`, `"\xff"`, `{"a":1,}`, `01`, `1.`, `[1 2]`, `"\u12"`, `{"a" 1}`, "\"\x01\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseJSON(s)
		if valid := json.Valid([]byte(s)); valid != (err == nil) {
			if !errors.Is(err, errTooDeep) {
				t.Fatalf("json.Valid %v, parseJSON %v for %q", valid, err, s)
			}
			return
		}
		if err != nil {
			return
		}
		var b strings.Builder
		writeJSON(&b, n)
		decode := func(s string) any {
			d := json.NewDecoder(strings.NewReader(s))
			d.UseNumber()
			var v any
			if err := d.Decode(&v); err != nil {
				t.Fatalf("decode %q: %v", s, err)
			}
			return v
		}
		if want, got := decode(s), decode(b.String()); !reflect.DeepEqual(want, got) {
			t.Fatalf("%q written back as %q: %#v != %#v", s, b.String(), got, want)
		}
	})
}
