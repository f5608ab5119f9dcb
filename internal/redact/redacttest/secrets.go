package redacttest

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Secret is one fake secret in its context, and the strings that must not
// survive redaction.
type Secret struct {
	// Kind names the generator, e.g. "openai-proj" or "url-userinfo".
	Kind string
	// Text is the secret in its context ("password=…", a header, a URL).
	Text string
	// Key, when set, is the only sign of the secret: Text is the raw value
	// and belongs under this attribute key.
	Key string
	// Cores are the secret's random parts; none of them, nor any of their
	// Distinctive substrings, may survive redaction.
	Cores []string
}

// SecretKind generates one kind of fake secret.
type SecretKind struct {
	// Name names the kind; it is the Kind of the secrets New returns.
	Name string
	// New returns a fresh secret of the kind, drawn from g.
	New func(g *Gen) Secret
}

// SecretKinds returns every kind of fake secret, in a fixed order.
func SecretKinds() []SecretKind {
	out := make([]SecretKind, len(secretKinds))
	for i, k := range secretKinds {
		out[i] = SecretKind{Name: k.kind, New: func(g *Gen) Secret {
			s := k.gen(g)
			s.Kind = k.kind
			return s
		}}
	}
	return out
}

// Secrets returns perKind secrets of every kind, kind after kind, drawn
// from one generator seeded with seed.
func Secrets(seed uint64, perKind int) []Secret {
	g := NewGen(seed)
	var out []Secret
	for _, k := range SecretKinds() {
		for range perKind {
			out = append(out, k.New(g))
		}
	}
	return out
}

// Distinctive returns the substrings of core that must not survive: core
// itself and, for a core longer than 16 bytes, windows of 12 bytes every 6.
func Distinctive(core string) []string {
	out := []string{core}
	for i := 0; i+12 <= len(core) && len(core) > 16; i += 6 {
		out = append(out, core[i:i+12])
	}
	return out
}

// secretKinds is the table behind SecretKinds; the generators leave Kind
// for the caller to set.
var secretKinds = []struct {
	kind string
	gen  func(g *Gen) Secret
}{
	{"openai-proj", func(g *Gen) Secret {
		c := g.Str(B64URL, 74) + "T3BlbkFJ" + g.Str(B64URL, 74)
		return Secret{Text: "sk-proj-" + c, Cores: []string{c}}
	}},
	{"openai-svcacct", func(g *Gen) Secret {
		c := g.Str(B64URL, 58) + "T3BlbkFJ" + g.Str(B64URL, 58)
		return Secret{Text: "OPENAI_API_KEY is sk-svcacct-" + c, Cores: []string{c}}
	}},
	{"openai-legacy", func(g *Gen) Secret {
		c := g.Str(Alnum, 20) + "T3BlbkFJ" + g.Str(Alnum, 20)
		return Secret{Text: "using key sk-" + c + " for batch", Cores: []string{c}}
	}},
	{"openai-48", func(g *Gen) Secret {
		c := g.Str(Letters, 10) + g.Str(Digits, 2) + g.Str(Alnum, 36)
		return Secret{Text: "sk-" + c, Cores: []string{c}}
	}},
	{"anthropic-api", func(g *Gen) Secret {
		c := g.Str(B64URL, 93) + "AA"
		return Secret{Text: "x-api-key sk-ant-api03-" + c, Cores: []string{c}}
	}},
	{"anthropic-admin", func(g *Gen) Secret {
		c := g.Str(B64URL, 93) + "AA"
		return Secret{Text: "sk-ant-admin01-" + c, Cores: []string{c}}
	}},
	{"aws-akia", func(g *Gen) Secret {
		c := g.Str(UpperNum, 16)
		return Secret{Text: "aws_access_key_id AKIA" + c, Cores: []string{c}}
	}},
	{"aws-asia", func(g *Gen) Secret {
		c := g.Str(UpperNum, 16)
		return Secret{Text: "temporary creds ASIA" + c + " expire soon", Cores: []string{c}}
	}},
	{"aws-secret-env", func(g *Gen) Secret {
		c := g.Str(Alnum+"/+", 40)
		return Secret{Text: "AWS_SECRET_ACCESS_KEY=" + c, Cores: []string{c}}
	}},
	{"github-pat", func(g *Gen) Secret {
		c := g.Str(Alnum, 36)
		return Secret{Text: "git clone with ghp_" + c, Cores: []string{c}}
	}},
	{"github-app", func(g *Gen) Secret {
		c := g.Str(Alnum, 36)
		return Secret{Text: "ghs_" + c, Cores: []string{c}}
	}},
	{"github-fine-grained", func(g *Gen) Secret {
		c := g.Str(Alnum, 22) + "_" + g.Str(Alnum, 59)
		return Secret{Text: "GH_TOKEN=github_pat_" + c, Cores: []string{c}}
	}},
	{"gitlab-pat", func(g *Gen) Secret {
		c := g.Str(Alnum, 20)
		return Secret{Text: "glpat-" + c, Cores: []string{c}}
	}},
	{"gitlab-runner", func(g *Gen) Secret {
		c := g.Str(B64URL, 20)
		return Secret{Text: "runner token glrt-" + c, Cores: []string{c}}
	}},
	{"slack-bot", func(g *Gen) Secret {
		c := g.Str(Digits, 12) + "-" + g.Str(Digits, 13) + "-" + g.Str(Alnum, 24)
		return Secret{Text: "xoxb-" + c, Cores: []string{c}}
	}},
	{"slack-user", func(g *Gen) Secret {
		c := g.Str(Digits, 12) + "-" + g.Str(Digits, 12) + "-" + g.Str(Digits, 13) + "-" + g.Str(HexLower, 32)
		return Secret{Text: "slack user xoxp-" + c, Cores: []string{c}}
	}},
	{"slack-webhook", func(g *Gen) Secret {
		c := "T" + g.Str(UpperNum, 8) + "/B" + g.Str(UpperNum, 10) + "/" + g.Str(Alnum, 24)
		return Secret{Text: "POST https://hooks.slack.com/services/" + c, Cores: []string{c}}
	}},
	{"stripe-live", func(g *Gen) Secret {
		c := g.Str(Alnum, 99)
		return Secret{Text: "sk_live_" + c, Cores: []string{c}}
	}},
	{"stripe-webhook", func(g *Gen) Secret {
		c := g.Str(Alnum, 32)
		return Secret{Text: "signing secret whsec_" + c, Cores: []string{c}}
	}},
	{"huggingface", func(g *Gen) Secret {
		c := g.Str(Letters, 34)
		return Secret{Text: "HF_TOKEN hf_" + c, Cores: []string{c}}
	}},
	{"gcp-api-key", func(g *Gen) Secret {
		c := g.Str(B64URL, 35)
		return Secret{Text: "AIza" + c, Cores: []string{c}}
	}},
	{"google-oauth", func(g *Gen) Secret {
		c := g.Str(B64URL, 120)
		return Secret{Text: "ya29." + c, Cores: []string{c}}
	}},
	{"groq", func(g *Gen) Secret {
		c := g.Str(Alnum, 52)
		return Secret{Text: "gsk_" + c, Cores: []string{c}}
	}},
	{"replicate", func(g *Gen) Secret {
		c := g.Str(Alnum, 37)
		return Secret{Text: "REPLICATE r8_" + c, Cores: []string{c}}
	}},
	{"langsmith", func(g *Gen) Secret {
		c := g.Str(HexLower, 32) + "_" + g.Str(HexLower, 10)
		return Secret{Text: "lsv2_pt_" + c, Cores: []string{c}}
	}},
	{"npm", func(g *Gen) Secret {
		c := g.Str(Alnum, 36)
		return Secret{Text: "//registry.npmjs.org/:_authToken=npm_" + c, Cores: []string{c}}
	}},
	{"sendgrid", func(g *Gen) Secret {
		c := g.Str(B64URL, 22) + "." + g.Str(B64URL, 43)
		return Secret{Text: "SG." + c, Cores: []string{c}}
	}},
	{"databricks", func(g *Gen) Secret {
		c := g.Str(HexLower, 32)
		return Secret{Text: "dapi" + c, Cores: []string{c}}
	}},
	{"jwt", func(g *Gen) Secret {
		payload, _ := json.Marshal(map[string]any{"sub": g.Str(Alnum, 12), "iat": 1700000000 + g.IntN(1e6), "scope": "inference"})
		p := base64.RawURLEncoding.EncodeToString(payload)
		sig := g.Str(B64URL, 43)
		return Secret{Text: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + p + "." + sig, Cores: []string{p, sig}}
	}},
	{"private-key", func(g *Gen) Secret {
		typ := []string{"RSA ", "EC ", "OPENSSH ", ""}[g.IntN(4)]
		var lines, cores []string
		for range 8 {
			l := base64.StdEncoding.EncodeToString(g.Bytes(48))
			lines, cores = append(lines, l), append(cores, l)
		}
		text := "-----BEGIN " + typ + "PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END " + typ + "PRIVATE KEY-----"
		return Secret{Text: text, Cores: cores}
	}},
	{"auth-bearer-header", func(g *Gen) Secret {
		c := g.Str(B64URL, 40)
		return Secret{Text: "Authorization: Bearer " + c, Cores: []string{c}}
	}},
	{"auth-basic-header", func(g *Gen) Secret {
		pw := g.Password()
		c := base64.StdEncoding.EncodeToString([]byte("svc-" + g.Str(Letters, 5) + ":" + pw))
		return Secret{Text: "GET /v1/models HTTP/1.1\r\nHost: api\r\nAuthorization: Basic " + c + "\r\n", Cores: []string{c, pw}}
	}},
	{"bearer-in-text", func(g *Gen) Secret {
		c := g.Str(B64URL, 32) + g.Str(Digits, 2)
		return Secret{Text: "retrying with bearer " + c + " after 401", Cores: []string{c}}
	}},
	{"cookie", func(g *Gen) Secret {
		a, b := g.Str(Alnum, 32), g.Str(Alnum, 40)
		return Secret{Text: "Cookie: sessionid=" + a + "; csrftoken=" + b, Cores: []string{a, b}}
	}},
	{"url-userinfo", func(g *Gen) Secret {
		pw := g.Str(Alnum, 6) + g.Str(Digits, 2) + g.Str(Alnum+"-_.~", 10)
		return Secret{Text: "connecting to postgres://app_user:" + pw + "@db.internal:5432/app", Cores: []string{pw}}
	}},
	{"url-redis", func(g *Gen) Secret {
		pw := g.Str(Alnum, 24)
		return Secret{Text: "redis://:" + pw + "@cache-0.cache:6379/0", Cores: []string{pw}}
	}},
	{"url-query-key", func(g *Gen) Secret {
		c := g.Str(Alnum, 32)
		return Secret{Text: "https://api.example.com/v1/data?page=2&api_key=" + c + "&sort=asc", Cores: []string{c}}
	}},
	{"url-query-sas", func(g *Gen) Secret {
		c := g.Str(Alnum+"%", 44)
		return Secret{Text: "https://acct.blob.core.windows.net/c/b.bin?sv=2022-11-02&se=2026-01-01&sig=" + c, Cores: []string{c}}
	}},
	{"url-query-amz", func(g *Gen) Secret {
		c := g.Str(HexLower, 64)
		return Secret{Text: "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" + c, Cores: []string{c}}
	}},
	{"kv-password", func(g *Gen) Secret {
		pw := g.Password()
		return Secret{Text: "login user=alice password=" + pw + " ok", Cores: []string{pw}}
	}},
	{"kv-env", func(g *Gen) Secret {
		pw := g.Password()
		return Secret{Text: "DB_PASSWORD=" + pw, Cores: []string{pw}}
	}},
	{"kv-yaml", func(g *Gen) Secret {
		c := g.Str(Alnum, 40)
		return Secret{Text: "client_secret: " + c, Cores: []string{c}}
	}},
	{"kv-json-fragment", func(g *Gen) Secret {
		c := g.Str(Alnum, 30) + " " + g.Str(Alnum, 10)
		return Secret{Text: `truncated body {"user": "bob", "api_key": "` + c + `", "n":`, Cores: []string{c[:30], c[31:]}}
	}},
	{"json-body", func(g *Gen) Secret {
		pw := g.Password()
		b, _ := json.Marshal(map[string]any{"username": "bob", "password": pw, "remember": true})
		return Secret{Text: string(b), Cores: []string{pw}}
	}},
	{"key-password", func(g *Gen) Secret {
		pw := g.Password()
		return Secret{Text: pw, Key: "db.password", Cores: []string{pw}}
	}},
	{"key-api-key-header", func(g *Gen) Secret {
		c := g.Str(Alnum, 40)
		return Secret{Text: c, Key: "http.request.header.x-api-key", Cores: []string{c}}
	}},
	{"key-client-secret", func(g *Gen) Secret {
		c := g.Str(B64URL, 32)
		return Secret{Text: c, Key: "oauth.clientSecret", Cores: []string{c}}
	}},
	{"key-access-token", func(g *Gen) Secret {
		c := g.Str(Alnum, 48)
		return Secret{Text: c, Key: "access_token", Cores: []string{c}}
	}},
}
