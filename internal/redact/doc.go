// Package redact removes secrets and generative-AI content from telemetry
// before anything is stored, indexed, logged, returned or forwarded.
//
// It owns the rules (what a secret looks like, which attribute keys hold
// secrets or prompts), the in-place redaction of OTLP data (ptrace, plog,
// pmetric), an slog.Handler that redacts Vigil's own logs, and the counter
// vigil_redactions_total{rule}. It does not own the OTLP receiver, the
// stores, or the wiring: callers run Redactor.Traces, Logs and Metrics on
// data they own before handing it on, and wrap their slog handler with
// NewHandler.
//
// # Rules
//
// Three kinds of rule, applied in this order to every value:
//
//   - Key rules. A value whose key names a secret (the key's last word is
//     password, secret, token, cookie, authorization, credentials, …, or its
//     last two words are api key, private key, access key, …; camelCase,
//     dots, dashes and underscores all split words) is replaced as a whole,
//     maps and slices included. Counters such as max_tokens, input_token or
//     eos_token are not secrets. Config.DenyKeys adds key names and
//     Config.AllowKeys exempts some.
//   - GenAI content. Prompts, completions, system instructions and tool
//     arguments (gen_ai.input.messages, gen_ai.output.messages,
//     gen_ai.system_instructions, the older gen_ai.prompt and
//     gen_ai.completion, OpenInference's llm.* and input.value, Vercel AI's
//     ai.*, and the content of gen_ai.*.message events) are dropped by
//     default, hashed with Config.GenAIContent "hash", or kept with "keep"
//     (kept content still goes through the value patterns).
//   - Value patterns. Provider tokens (OpenAI, Anthropic, AWS, GitHub,
//     GitLab, Slack, Stripe, Hugging Face, Google, Groq, xAI, Replicate,
//     LangSmith, npm, PyPI, SendGrid, Databricks), JWTs, private-key blocks,
//     Authorization and Cookie headers, Bearer and Basic credentials,
//     passwords in URLs (user:pass@ and ?password=), and key=value or
//     "key": "value" pairs whose key is a secret by the key rules. The
//     provider shapes follow gitleaks' rules (github.com/gitleaks/gitleaks,
//     cmd/generate/config/rules); the regular expressions are our own.
//     Config.Deny adds patterns, Config.Allow exempts matches.
//
// A redacted value becomes "[REDACTED:<rule>]"; only the secret part of a
// match is replaced ("password=[REDACTED:kv-secret]"), so the context stays
// readable. A hashed GenAI value becomes "sha256:" and the first 16 hex
// digits of its SHA-256 (HMAC-SHA256 when Config.HashKey is set), so equal
// prompts can still be grouped. Strings that hold JSON are parsed, redacted
// by key and value, and written back compactly (key order kept); strings
// that do not parse fall back to the value patterns. Redaction is
// idempotent: redacting redacted data changes nothing.
//
// # Cost
//
// Regular expressions are Go's (RE2, linear time) and compiled once. Before
// any of them runs, one pass over the string looks up each byte pair in a
// table of the rules' keywords (gitleaks' "keywords" idea) and only the
// rules whose keyword occurs are run, after a cheaper test still (a
// separator, white space, an '@'). key=value pairs are found without a
// regular expression: only the keys before each ':' or '=' are judged.
// JSON is parsed by a small parser of our own (strings without escapes are
// not copied) and only when the text holds a keyword; it accepts exactly
// what encoding/json accepts (FuzzJSONParser). Verdicts on keys are cached.
// BenchmarkRedactSpans measures the cost per span against a walk of the
// same attributes that redacts nothing.
package redact
