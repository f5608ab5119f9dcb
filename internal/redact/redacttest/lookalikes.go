package redacttest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// LookAlike is a benign value that resembles a secret and must pass
// redaction unchanged.
type LookAlike struct {
	// Kind names the generator, e.g. "uuid" or "data-uri".
	Kind string
	// Text is the value.
	Text string
}

// LookAlikeKind generates one kind of look-alike.
type LookAlikeKind struct {
	// Name names the kind; it is the Kind of LookAlikes.
	Name string
	// New returns the i-th look-alike of the kind, drawn from g (some kinds
	// cycle through fixed texts by i).
	New func(g *Gen, i int) string
}

// LookAlikeKinds returns every kind of look-alike, in a fixed order.
func LookAlikeKinds() []LookAlikeKind {
	out := make([]LookAlikeKind, len(lookAlikeKinds))
	for i, k := range lookAlikeKinds {
		out[i] = LookAlikeKind{Name: k.kind, New: k.gen}
	}
	return out
}

// LookAlikes returns perKind look-alikes of every kind, kind after kind,
// drawn from one generator seeded with seed.
func LookAlikes(seed uint64, perKind int) []LookAlike {
	g := NewGen(seed)
	var out []LookAlike
	for _, k := range LookAlikeKinds() {
		for i := range perKind {
			out = append(out, LookAlike{Kind: k.Name, Text: k.New(g, i)})
		}
	}
	return out
}

// lookAlikeKinds is the table behind LookAlikeKinds.
var lookAlikeKinds = []struct {
	kind string
	gen  func(g *Gen, i int) string
}{
	{"uuid", func(g *Gen, _ int) string {
		h := g.Str(HexLower, 32)
		return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
	}},
	{"trace-id", func(g *Gen, _ int) string { return g.Str(HexLower, 32) }},
	{"span-id", func(g *Gen, _ int) string { return g.Str(HexLower, 16) }},
	{"sha1", func(g *Gen, _ int) string { return "commit " + g.Str(HexLower, 40) }},
	{"sha256", func(g *Gen, _ int) string { return g.Str(HexLower, 64) }},
	{"image-digest", func(g *Gen, _ int) string {
		return "nvcr.io/nvidia/tritonserver:24.08-py3@sha256:" + g.Str(HexLower, 64)
	}},
	{"data-uri", func(g *Gen, _ int) string {
		return "data:image/png;base64," + base64.StdEncoding.EncodeToString(g.Bytes(300+g.IntN(300)))
	}},
	{"base64-blob", func(g *Gen, _ int) string { return base64.StdEncoding.EncodeToString(g.Bytes(48)) }},
	{"pod-name", func(g *Gen, _ int) string {
		return "llm-pretrain-worker-" + g.Str("bcdfghjklmnpqrstvwxz2456789", 10) + "-" + g.Str("bcdfghjklmnpqrstvwxz2456789", 5)
	}},
	{"model-name", func(_ *Gen, i int) string {
		return []string{"meta-llama/Llama-3.1-70B-Instruct", "gpt-4o-2024-08-06", "claude-3-5-sonnet-20241022",
			"mistralai/Mixtral-8x7B-Instruct-v0.1", "Qwen/Qwen2.5-72B-Instruct", "deepseek-ai/DeepSeek-R1",
			"text-embedding-3-large", "o3-mini-2025-01-31", "google/gemma-2-27b-it", "nvidia/Llama-3.1-Nemotron-70B"}[i%10]
	}},
	{"sklearn", func(_ *Gen, i int) string {
		return []string{"sk-learn", "scikit-learn==1.5.2", "sklearn.ensemble.RandomForestClassifier", "pip install sk-learn",
			"sk-learn pipeline fitted in 3.2s", "risk-assessment-v2", "desk-booking-api", "task-sk-learn-7"}[i%8]
	}},
	{"task-id", func(g *Gen, _ int) string { return "task-" + g.Str(HexLower, 12) }},
	{"english", func(_ *Gen, i int) string {
		return []string{"User requested a password reset; a reset link was sent to their email",
			"Password reset token expired for user 4411", "Forgot your password? Use the reset link",
			"The secret to good latency is continuous batching", "Rotating API keys every 90 days is recommended",
			"Bearer of bad news: the training job failed at step 1200", "Basic authentication is disabled on this endpoint",
			"Authorization header missing from request", "token usage exceeded the monthly budget",
			"the tokenizer split the prompt into 512 tokens"}[i%10]
	}},
	{"token-counts", func(g *Gen, i int) string {
		n := g.IntN(100000)
		return []string{fmt.Sprintf("max_tokens=%d", n), fmt.Sprintf("gen_ai.usage.input_tokens: %d", n),
			fmt.Sprintf("tokens: %d", n), fmt.Sprintf("token_count=%d", n), fmt.Sprintf("eos_token: </s> vocab=%d", n),
			fmt.Sprintf("time_to_first_token=%dms", n)}[i%6]
	}},
	{"gpu-ids", func(g *Gen, i int) string {
		h := g.Str(HexLower, 32)
		return []string{"GPU-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:],
			"MIG-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:],
			fmt.Sprintf("00000000:%02X:00.0", g.IntN(256))}[i%3]
	}},
	{"urls", func(g *Gen, i int) string {
		return []string{"https://api.openai.com/v1/chat/completions",
			fmt.Sprintf("http://10.0.%d.7:8000/v1/completions?model=llama&stream=true", g.IntN(255)),
			"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json",
			fmt.Sprintf("GET /api/v1/query?query=up&time=%d 200 12ms", 1700000000+g.IntN(1e6)),
			"grpc://otel-collector.observability.svc:4317"}[i%5]
	}},
	{"json-body", func(g *Gen, i int) string {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "max_tokens": 256 + i, "temperature": 0.2,
			"stream": true, "request_id": g.Str(HexLower, 16), "token_type": "Bearer"})
		return string(b)
	}},
	{"k8s-refs", func(g *Gen, i int) string {
		return []string{"secretName: tls-cert-" + g.Str(HexLower, 5), "kind: Secret name=registry-creds",
			"serviceAccountName: trainer", "password_required=true", "token_type=Bearer expires_in=3600"}[i%5]
	}},
	{"hex-words", func(g *Gen, _ int) string {
		return "request " + g.Str(HexLower, 24) + " took " + fmt.Sprint(g.IntN(900)) + "ms"
	}},
	{"upper-ids", func(g *Gen, _ int) string { return "ORDER" + g.Str(UpperNum, 15) }},
	{"not-jwt", func(g *Gen, _ int) string {
		return "eyJhbGciOiJub25lIn0 " + base64.RawURLEncoding.EncodeToString([]byte(g.Str(Alnum, 20)))
	}},
	{"hash-hex", func(g *Gen, _ int) string { return "md5:" + hex.EncodeToString(g.Bytes(16)) }},
}
