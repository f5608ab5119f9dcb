package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Fake secrets for the tests: random tokens of the right shape, never real
// ones. Every generator is deterministic for a seed.

const (
	alnum    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	letters  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	upperNum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b64url   = alnum + "-_"
	hexLower = "0123456789abcdef"
	digits   = "0123456789"
	pwChars  = alnum + "!$*-_.~^"
)

type gen struct{ rnd *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rnd.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *gen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rnd.IntN(256))
	}
	return b
}

// password returns a random password that holds a digit and a symbol.
func (g *gen) password() string {
	return g.str(letters, 4) + g.str(digits, 2) + g.str("!$*-_.~^", 1) + g.str(pwChars, 9+g.rnd.IntN(8))
}

// fakeSecret is one secret placed in text, and the strings that must not
// survive redaction (the secret's random parts).
type fakeSecret struct {
	// text is the secret in its context ("password=…", a header, a URL).
	text string
	// key, when set, is the only sign of the secret: text is the raw
	// value and goes under this key.
	key   string
	cores []string
}

// secretKinds generate one fake secret each; the corpus uses each several
// times.
var secretKinds = []struct {
	kind string
	gen  func(g *gen) fakeSecret
}{
	{"openai-proj", func(g *gen) fakeSecret {
		c := g.str(b64url, 74) + "T3BlbkFJ" + g.str(b64url, 74)
		return fakeSecret{text: "sk-proj-" + c, cores: []string{c}}
	}},
	{"openai-svcacct", func(g *gen) fakeSecret {
		c := g.str(b64url, 58) + "T3BlbkFJ" + g.str(b64url, 58)
		return fakeSecret{text: "OPENAI_API_KEY is sk-svcacct-" + c, cores: []string{c}}
	}},
	{"openai-legacy", func(g *gen) fakeSecret {
		c := g.str(alnum, 20) + "T3BlbkFJ" + g.str(alnum, 20)
		return fakeSecret{text: "using key sk-" + c + " for batch", cores: []string{c}}
	}},
	{"openai-48", func(g *gen) fakeSecret {
		c := g.str(letters, 10) + g.str(digits, 2) + g.str(alnum, 36)
		return fakeSecret{text: "sk-" + c, cores: []string{c}}
	}},
	{"anthropic-api", func(g *gen) fakeSecret {
		c := g.str(b64url, 93) + "AA"
		return fakeSecret{text: "x-api-key sk-ant-api03-" + c, cores: []string{c}}
	}},
	{"anthropic-admin", func(g *gen) fakeSecret {
		c := g.str(b64url, 93) + "AA"
		return fakeSecret{text: "sk-ant-admin01-" + c, cores: []string{c}}
	}},
	{"aws-akia", func(g *gen) fakeSecret {
		c := g.str(upperNum, 16)
		return fakeSecret{text: "aws_access_key_id AKIA" + c, cores: []string{c}}
	}},
	{"aws-asia", func(g *gen) fakeSecret {
		c := g.str(upperNum, 16)
		return fakeSecret{text: "temporary creds ASIA" + c + " expire soon", cores: []string{c}}
	}},
	{"aws-secret-env", func(g *gen) fakeSecret {
		c := g.str(alnum+"/+", 40)
		return fakeSecret{text: "AWS_SECRET_ACCESS_KEY=" + c, cores: []string{c}}
	}},
	{"github-pat", func(g *gen) fakeSecret {
		c := g.str(alnum, 36)
		return fakeSecret{text: "git clone with ghp_" + c, cores: []string{c}}
	}},
	{"github-app", func(g *gen) fakeSecret {
		c := g.str(alnum, 36)
		return fakeSecret{text: "ghs_" + c, cores: []string{c}}
	}},
	{"github-fine-grained", func(g *gen) fakeSecret {
		c := g.str(alnum, 22) + "_" + g.str(alnum, 59)
		return fakeSecret{text: "GH_TOKEN=github_pat_" + c, cores: []string{c}}
	}},
	{"gitlab-pat", func(g *gen) fakeSecret {
		c := g.str(alnum, 20)
		return fakeSecret{text: "glpat-" + c, cores: []string{c}}
	}},
	{"gitlab-runner", func(g *gen) fakeSecret {
		c := g.str(b64url, 20)
		return fakeSecret{text: "runner token glrt-" + c, cores: []string{c}}
	}},
	{"slack-bot", func(g *gen) fakeSecret {
		c := g.str(digits, 12) + "-" + g.str(digits, 13) + "-" + g.str(alnum, 24)
		return fakeSecret{text: "xoxb-" + c, cores: []string{c}}
	}},
	{"slack-user", func(g *gen) fakeSecret {
		c := g.str(digits, 12) + "-" + g.str(digits, 12) + "-" + g.str(digits, 13) + "-" + g.str(hexLower, 32)
		return fakeSecret{text: "slack user xoxp-" + c, cores: []string{c}}
	}},
	{"slack-webhook", func(g *gen) fakeSecret {
		c := "T" + g.str(upperNum, 8) + "/B" + g.str(upperNum, 10) + "/" + g.str(alnum, 24)
		return fakeSecret{text: "POST https://hooks.slack.com/services/" + c, cores: []string{c}}
	}},
	{"stripe-live", func(g *gen) fakeSecret {
		c := g.str(alnum, 99)
		return fakeSecret{text: "sk_live_" + c, cores: []string{c}}
	}},
	{"stripe-webhook", func(g *gen) fakeSecret {
		c := g.str(alnum, 32)
		return fakeSecret{text: "signing secret whsec_" + c, cores: []string{c}}
	}},
	{"huggingface", func(g *gen) fakeSecret {
		c := g.str(letters, 34)
		return fakeSecret{text: "HF_TOKEN hf_" + c, cores: []string{c}}
	}},
	{"gcp-api-key", func(g *gen) fakeSecret {
		c := g.str(b64url, 35)
		return fakeSecret{text: "AIza" + c, cores: []string{c}}
	}},
	{"google-oauth", func(g *gen) fakeSecret {
		c := g.str(b64url, 120)
		return fakeSecret{text: "ya29." + c, cores: []string{c}}
	}},
	{"groq", func(g *gen) fakeSecret {
		c := g.str(alnum, 52)
		return fakeSecret{text: "gsk_" + c, cores: []string{c}}
	}},
	{"replicate", func(g *gen) fakeSecret {
		c := g.str(alnum, 37)
		return fakeSecret{text: "REPLICATE r8_" + c, cores: []string{c}}
	}},
	{"langsmith", func(g *gen) fakeSecret {
		c := g.str(hexLower, 32) + "_" + g.str(hexLower, 10)
		return fakeSecret{text: "lsv2_pt_" + c, cores: []string{c}}
	}},
	{"npm", func(g *gen) fakeSecret {
		c := g.str(alnum, 36)
		return fakeSecret{text: "//registry.npmjs.org/:_authToken=npm_" + c, cores: []string{c}}
	}},
	{"sendgrid", func(g *gen) fakeSecret {
		c := g.str(b64url, 22) + "." + g.str(b64url, 43)
		return fakeSecret{text: "SG." + c, cores: []string{c}}
	}},
	{"databricks", func(g *gen) fakeSecret {
		c := g.str(hexLower, 32)
		return fakeSecret{text: "dapi" + c, cores: []string{c}}
	}},
	{"jwt", func(g *gen) fakeSecret {
		payload, _ := json.Marshal(map[string]any{"sub": g.str(alnum, 12), "iat": 1700000000 + g.rnd.IntN(1e6), "scope": "inference"})
		p := base64.RawURLEncoding.EncodeToString(payload)
		sig := g.str(b64url, 43)
		return fakeSecret{text: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + p + "." + sig, cores: []string{p, sig}}
	}},
	{"private-key", func(g *gen) fakeSecret {
		typ := []string{"RSA ", "EC ", "OPENSSH ", ""}[g.rnd.IntN(4)]
		var lines, cores []string
		for range 8 {
			l := base64.StdEncoding.EncodeToString(g.bytes(48))
			lines, cores = append(lines, l), append(cores, l)
		}
		text := "-----BEGIN " + typ + "PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END " + typ + "PRIVATE KEY-----"
		return fakeSecret{text: text, cores: cores}
	}},
	{"auth-bearer-header", func(g *gen) fakeSecret {
		c := g.str(b64url, 40)
		return fakeSecret{text: "Authorization: Bearer " + c, cores: []string{c}}
	}},
	{"auth-basic-header", func(g *gen) fakeSecret {
		pw := g.password()
		c := base64.StdEncoding.EncodeToString([]byte("svc-" + g.str(letters, 5) + ":" + pw))
		return fakeSecret{text: "GET /v1/models HTTP/1.1\r\nHost: api\r\nAuthorization: Basic " + c + "\r\n", cores: []string{c, pw}}
	}},
	{"bearer-in-text", func(g *gen) fakeSecret {
		c := g.str(b64url, 32) + g.str(digits, 2)
		return fakeSecret{text: "retrying with bearer " + c + " after 401", cores: []string{c}}
	}},
	{"cookie", func(g *gen) fakeSecret {
		a, b := g.str(alnum, 32), g.str(alnum, 40)
		return fakeSecret{text: "Cookie: sessionid=" + a + "; csrftoken=" + b, cores: []string{a, b}}
	}},
	{"url-userinfo", func(g *gen) fakeSecret {
		pw := g.str(alnum, 6) + g.str(digits, 2) + g.str(alnum+"-_.~", 10)
		return fakeSecret{text: "connecting to postgres://app_user:" + pw + "@db.internal:5432/app", cores: []string{pw}}
	}},
	{"url-redis", func(g *gen) fakeSecret {
		pw := g.str(alnum, 24)
		return fakeSecret{text: "redis://:" + pw + "@cache-0.cache:6379/0", cores: []string{pw}}
	}},
	{"url-query-key", func(g *gen) fakeSecret {
		c := g.str(alnum, 32)
		return fakeSecret{text: "https://api.example.com/v1/data?page=2&api_key=" + c + "&sort=asc", cores: []string{c}}
	}},
	{"url-query-sas", func(g *gen) fakeSecret {
		c := g.str(alnum+"%", 44)
		return fakeSecret{text: "https://acct.blob.core.windows.net/c/b.bin?sv=2022-11-02&se=2026-01-01&sig=" + c, cores: []string{c}}
	}},
	{"url-query-amz", func(g *gen) fakeSecret {
		c := g.str(hexLower, 64)
		return fakeSecret{text: "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" + c, cores: []string{c}}
	}},
	{"kv-password", func(g *gen) fakeSecret {
		pw := g.password()
		return fakeSecret{text: "login user=alice password=" + pw + " ok", cores: []string{pw}}
	}},
	{"kv-env", func(g *gen) fakeSecret {
		pw := g.password()
		return fakeSecret{text: "DB_PASSWORD=" + pw, cores: []string{pw}}
	}},
	{"kv-yaml", func(g *gen) fakeSecret {
		c := g.str(alnum, 40)
		return fakeSecret{text: "client_secret: " + c, cores: []string{c}}
	}},
	{"kv-json-fragment", func(g *gen) fakeSecret {
		c := g.str(alnum, 30) + " " + g.str(alnum, 10)
		return fakeSecret{text: `truncated body {"user": "bob", "api_key": "` + c + `", "n":`, cores: []string{c[:30], c[31:]}}
	}},
	{"json-body", func(g *gen) fakeSecret {
		pw := g.password()
		b, _ := json.Marshal(map[string]any{"username": "bob", "password": pw, "remember": true})
		return fakeSecret{text: string(b), cores: []string{pw}}
	}},
	{"key-password", func(g *gen) fakeSecret {
		pw := g.password()
		return fakeSecret{text: pw, key: "db.password", cores: []string{pw}}
	}},
	{"key-api-key-header", func(g *gen) fakeSecret {
		c := g.str(alnum, 40)
		return fakeSecret{text: c, key: "http.request.header.x-api-key", cores: []string{c}}
	}},
	{"key-client-secret", func(g *gen) fakeSecret {
		c := g.str(b64url, 32)
		return fakeSecret{text: c, key: "oauth.clientSecret", cores: []string{c}}
	}},
	{"key-access-token", func(g *gen) fakeSecret {
		c := g.str(alnum, 48)
		return fakeSecret{text: c, key: "access_token", cores: []string{c}}
	}},
}

// distinctive returns the substrings of core that must not survive: core
// itself and, for long cores, windows of 12 bytes every 6.
func distinctive(core string) []string {
	out := []string{core}
	for i := 0; i+12 <= len(core) && len(core) > 16; i += 6 {
		out = append(out, core[i:i+12])
	}
	return out
}

// benignKinds generate look-alikes that must pass unchanged.
var benignKinds = []struct {
	kind string
	gen  func(g *gen, i int) string
}{
	{"uuid", func(g *gen, _ int) string {
		h := g.str(hexLower, 32)
		return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
	}},
	{"trace-id", func(g *gen, _ int) string { return g.str(hexLower, 32) }},
	{"span-id", func(g *gen, _ int) string { return g.str(hexLower, 16) }},
	{"sha1", func(g *gen, _ int) string { return "commit " + g.str(hexLower, 40) }},
	{"sha256", func(g *gen, _ int) string { return g.str(hexLower, 64) }},
	{"image-digest", func(g *gen, _ int) string {
		return "nvcr.io/nvidia/tritonserver:24.08-py3@sha256:" + g.str(hexLower, 64)
	}},
	{"data-uri", func(g *gen, _ int) string {
		return "data:image/png;base64," + base64.StdEncoding.EncodeToString(g.bytes(300+g.rnd.IntN(300)))
	}},
	{"base64-blob", func(g *gen, _ int) string { return base64.StdEncoding.EncodeToString(g.bytes(48)) }},
	{"pod-name", func(g *gen, _ int) string {
		return "llm-pretrain-worker-" + g.str("bcdfghjklmnpqrstvwxz2456789", 10) + "-" + g.str("bcdfghjklmnpqrstvwxz2456789", 5)
	}},
	{"model-name", func(_ *gen, i int) string {
		return []string{"meta-llama/Llama-3.1-70B-Instruct", "gpt-4o-2024-08-06", "claude-3-5-sonnet-20241022",
			"mistralai/Mixtral-8x7B-Instruct-v0.1", "Qwen/Qwen2.5-72B-Instruct", "deepseek-ai/DeepSeek-R1",
			"text-embedding-3-large", "o3-mini-2025-01-31", "google/gemma-2-27b-it", "nvidia/Llama-3.1-Nemotron-70B"}[i%10]
	}},
	{"sklearn", func(_ *gen, i int) string {
		return []string{"sk-learn", "scikit-learn==1.5.2", "sklearn.ensemble.RandomForestClassifier", "pip install sk-learn",
			"sk-learn pipeline fitted in 3.2s", "risk-assessment-v2", "desk-booking-api", "task-sk-learn-7"}[i%8]
	}},
	{"task-id", func(g *gen, _ int) string { return "task-" + g.str(hexLower, 12) }},
	{"english", func(_ *gen, i int) string {
		return []string{"User requested a password reset; a reset link was sent to their email",
			"Password reset token expired for user 4411", "Forgot your password? Use the reset link",
			"The secret to good latency is continuous batching", "Rotating API keys every 90 days is recommended",
			"Bearer of bad news: the training job failed at step 1200", "Basic authentication is disabled on this endpoint",
			"Authorization header missing from request", "token usage exceeded the monthly budget",
			"the tokenizer split the prompt into 512 tokens"}[i%10]
	}},
	{"token-counts", func(g *gen, i int) string {
		n := g.rnd.IntN(100000)
		return []string{fmt.Sprintf("max_tokens=%d", n), fmt.Sprintf("gen_ai.usage.input_tokens: %d", n),
			fmt.Sprintf("tokens: %d", n), fmt.Sprintf("token_count=%d", n), fmt.Sprintf("eos_token: </s> vocab=%d", n),
			fmt.Sprintf("time_to_first_token=%dms", n)}[i%6]
	}},
	{"gpu-ids", func(g *gen, i int) string {
		h := g.str(hexLower, 32)
		return []string{"GPU-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:],
			"MIG-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:],
			fmt.Sprintf("00000000:%02X:00.0", g.rnd.IntN(256))}[i%3]
	}},
	{"urls", func(g *gen, i int) string {
		return []string{"https://api.openai.com/v1/chat/completions",
			fmt.Sprintf("http://10.0.%d.7:8000/v1/completions?model=llama&stream=true", g.rnd.IntN(255)),
			"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json",
			fmt.Sprintf("GET /api/v1/query?query=up&time=%d 200 12ms", 1700000000+g.rnd.IntN(1e6)),
			"grpc://otel-collector.observability.svc:4317"}[i%5]
	}},
	{"json-body", func(g *gen, i int) string {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "max_tokens": 256 + i, "temperature": 0.2,
			"stream": true, "request_id": g.str(hexLower, 16), "token_type": "Bearer"})
		return string(b)
	}},
	{"k8s-refs", func(g *gen, i int) string {
		return []string{"secretName: tls-cert-" + g.str(hexLower, 5), "kind: Secret name=registry-creds",
			"serviceAccountName: trainer", "password_required=true", "token_type=Bearer expires_in=3600"}[i%5]
	}},
	{"hex-words", func(g *gen, _ int) string {
		return "request " + g.str(hexLower, 24) + " took " + fmt.Sprint(g.rnd.IntN(900)) + "ms"
	}},
	{"upper-ids", func(g *gen, _ int) string { return "ORDER" + g.str(upperNum, 15) }},
	{"not-jwt", func(g *gen, _ int) string {
		return "eyJhbGciOiJub25lIn0 " + base64.RawURLEncoding.EncodeToString([]byte(g.str(alnum, 20)))
	}},
	{"hash-hex", func(g *gen, _ int) string { return "md5:" + hex.EncodeToString(g.bytes(16)) }},
}
