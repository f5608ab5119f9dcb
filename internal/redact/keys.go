package redact

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// keyKind is the verdict on an attribute key.
type keyKind uint8

const (
	keyPlain  keyKind = iota // the value goes through the value patterns
	keySecret                // the key names a secret: the value goes
	keyDenied                // the key is in Config.DenyKeys
	keyGenAI                 // the value is GenAI content
)

// genAIKeys hold prompts, completions and tool payloads: OpenTelemetry's
// GenAI semantic conventions (current and older), OpenLLMetry, OpenInference,
// the Vercel AI SDK, Langfuse and MLflow. A key matches itself and the keys
// below it.
var genAIKeys = []string{
	"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
	"gen_ai.prompt", "gen_ai.completion",
	"llm.prompts", "llm.completions", "llm.input_messages", "llm.output_messages",
	"llm.prompt_template.template", "llm.prompt_template.variables",
	"input.value", "output.value", "retrieval.documents", "embedding.embeddings",
	"traceloop.entity.input", "traceloop.entity.output",
	"ai.prompt", "ai.response.text", "ai.response.object", "ai.response.toolcalls",
	"ai.toolcall.args", "ai.toolcall.result",
	"langfuse.observation.input", "langfuse.observation.output",
	"mlflow.spaninputs", "mlflow.spanoutputs",
}

// genAIEvents are span-event and log-record event names whose content
// attributes (genAIEventKeys) or log body are GenAI content.
var genAIEvents = map[string]bool{
	"gen_ai.system.message": true, "gen_ai.user.message": true, "gen_ai.assistant.message": true,
	"gen_ai.tool.message": true, "gen_ai.choice": true,
	"gen_ai.content.prompt": true, "gen_ai.content.completion": true,
	"gen_ai.client.inference.operation.details": true,
}

// genAIEventKeys are the attributes of a GenAI event that hold content.
var genAIEventKeys = map[string]bool{"content": true, "message": true, "messages": true, "tool_calls": true, "arguments": true}

// secretWords are last words of a key that make it a secret.
var secretWords = map[string]bool{
	"password": true, "passwd": true, "passphrase": true, "secret": true, "token": true,
	"cookie": true, "cookies": true, "authorization": true, "credential": true, "credentials": true,
	"apikey": true, "privatekey": true, "secretkey": true, "accesskey": true, "jwt": true, "bearer": true,
}

// secretPairs are last two words of a key that make it a secret.
var secretPairs = map[string]bool{
	"apikey": true, "privatekey": true, "accesskey": true, "secretkey": true, "accountkey": true,
	"authkey": true, "masterkey": true, "signingkey": true, "encryptionkey": true, "clientkey": true,
	"sessionkey": true,
}

// tokenNotSecret are words before "token" that make it a count or a
// tokenizer setting rather than a credential (max_token, eos_token).
var tokenNotSecret = map[string]bool{
	"max": true, "min": true, "num": true, "count": true, "total": true, "input": true, "output": true,
	"prompt": true, "completion": true, "cached": true, "reasoning": true, "first": true, "last": true,
	"next": true, "prev": true, "previous": true, "per": true, "page": true, "eos": true, "bos": true,
	"pad": true, "unk": true, "sep": true, "cls": true, "mask": true, "special": true, "stop": true,
	"start": true, "end": true, "vocab": true,
}

// maxCachedKeys bounds the verdict cache, so that data with ever new keys
// cannot grow it without limit.
const maxCachedKeys = 1 << 14

// keyRules classifies keys and caches the verdicts.
type keyRules struct {
	genAI []string        // lowercased
	deny  map[string]bool // lowercased
	allow map[string]bool // lowercased
	cache sync.Map        // string → keyKind
	n     atomic.Int64
}

func newKeyRules(cfg Config) *keyRules {
	k := &keyRules{deny: map[string]bool{}, allow: map[string]bool{}}
	k.genAI = append(k.genAI, genAIKeys...)
	for _, g := range cfg.GenAIKeys {
		k.genAI = append(k.genAI, strings.ToLower(strings.TrimSpace(g)))
	}
	for _, d := range cfg.DenyKeys {
		k.deny[strings.ToLower(strings.TrimSpace(d))] = true
	}
	for _, a := range cfg.AllowKeys {
		k.allow[strings.ToLower(strings.TrimSpace(a))] = true
	}
	return k
}

// kind returns the verdict on key.
func (k *keyRules) kind(key string) keyKind {
	if key == "" {
		return keyPlain
	}
	if v, ok := k.cache.Load(key); ok {
		return v.(keyKind)
	}
	v := k.classify(key)
	if k.n.Load() < maxCachedKeys {
		if _, loaded := k.cache.LoadOrStore(strings.Clone(key), v); !loaded {
			k.n.Add(1)
		}
	}
	return v
}

func (k *keyRules) classify(key string) keyKind {
	if strings.Contains(key, "[REDACTED:") {
		// A key that held a secret: judge what is left of it, so that the
		// rule names in markers do not make it a secret.
		key = stripMarkers(key)
	}
	lk := strings.ToLower(key)
	for _, g := range k.genAI {
		if lk == g || (len(lk) > len(g) && lk[len(g)] == '.' && strings.HasPrefix(lk, g)) {
			return keyGenAI
		}
	}
	if k.allow[lk] {
		return keyPlain
	}
	last := lk
	if i := strings.LastIndexByte(lk, '.'); i >= 0 {
		last = lk[i+1:]
	}
	if k.deny[lk] || k.deny[last] {
		return keyDenied
	}
	if secretKey(key) {
		return keySecret
	}
	return keyPlain
}

// secretKey reports whether the words of key (split at non-alphanumerics
// and camelCase) end like the name of a secret.
func secretKey(key string) bool {
	w := words(key)
	n := len(w)
	if n == 0 {
		return false
	}
	last := w[n-1]
	if secretWords[last] {
		return last != "token" || n == 1 || !tokenNotSecret[w[n-2]]
	}
	// "pwd" alone is the shell's working directory; db_pwd is a password.
	return n >= 2 && (last == "pwd" || secretPairs[w[n-2]+last])
}

// words splits key into lowercased words at non-alphanumerics and at
// camelCase boundaries ("xApiKey" → x, api, key; "APIKey" → api, key).
func words(key string) []string {
	var out []string
	start := -1
	var prev rune
	for i, c := range key {
		alnum := unicode.IsLetter(c) || unicode.IsDigit(c)
		if !alnum {
			if start >= 0 {
				out = append(out, strings.ToLower(key[start:i]))
				start = -1
			}
			prev = c
			continue
		}
		if start >= 0 && unicode.IsUpper(c) {
			next, _ := utf8.DecodeRuneInString(key[i+utf8.RuneLen(c):])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && unicode.IsLower(next)) {
				out = append(out, strings.ToLower(key[start:i]))
				start = i
			}
		}
		if start < 0 {
			start = i
		}
		prev = c
	}
	if start >= 0 {
		out = append(out, strings.ToLower(key[start:]))
	}
	return out
}

// stripMarkers removes the redaction markers from s.
func stripMarkers(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "[REDACTED:")
		if i < 0 {
			break
		}
		n := markerLen(s[i:])
		if n == 0 { // not a whole marker: keep its '[' and go on
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		s = s[i+n:]
	}
	b.WriteString(s)
	return b.String()
}
