package redact

import (
	"encoding/base64"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Rule names that are not value patterns.
const (
	// ruleSecretKey redacts the value of a key named like a secret.
	ruleSecretKey = "secret-key"
	// ruleDenyKey redacts the value of a key listed in Config.DenyKeys.
	ruleDenyKey = "deny-key"
	// ruleGenAI drops GenAI content.
	ruleGenAI = "genai-content"
	// ruleDeny is a pattern of Config.Deny.
	ruleDeny = "deny"
)

// builtin is one value pattern.
type builtin struct {
	name string
	// keywords gate the pattern: it runs only on strings that contain one
	// of them (without case when fold is set, else exactly).
	keywords []string
	fold     bool
	re       *regexp.Regexp
	// groups are the capture groups that hold the secret; the first that
	// took part in a match is replaced. None: the whole match.
	groups []int
	// check, when set, must accept a match (s is the whole string, m the
	// submatch indexes, secret the part to replace).
	check func(r *Redactor, s string, m []int, secret string) bool
	// need, when set, is a cheaper test than re that s must pass.
	need func(s string) bool
	// find, when set, replaces re: it returns the submatch indexes of the
	// first match at or after pos, or nil.
	find func(r *Redactor, s string, pos int) []int
}

// needSep is the test of the rules that need a separator.
func needSep(s string) bool {
	return strings.IndexByte(s, ':') >= 0 || strings.IndexByte(s, '=') >= 0
}

// needSpace is the test of the rules that need white space.
func needSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) {
			return true
		}
	}
	return false
}

// The value patterns, in the order they run: provider tokens first, so that
// a token inside a header or a key=value pair is named by its provider, then
// the generic rules that look at the context. Shapes follow gitleaks' rules
// (cmd/generate/config/rules/<provider>.go); the expressions are our own and
// slightly broader (minimum lengths rather than exact ones).
var builtins = []builtin{
	{
		// gitleaks private-key: any PEM "… PRIVATE KEY" block, or the
		// start of one up to where its base64 ends when it is cut short.
		name:     "private-key",
		keywords: []string{"-----BEGIN"},
		re:       regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,.-]*)`),
	},
	{
		// gitleaks jwt: base64url header and payload, both JSON objects.
		name:     "jwt",
		keywords: []string{"eyJ"},
		re:       regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`),
	},
	{
		// gitleaks anthropic-api-key, -admin-api-key, -oauth-token:
		// sk-ant-api03-…, sk-ant-admin01-…, sk-ant-oat01-….
		name:     "anthropic-api-key",
		keywords: []string{"sk-ant-"},
		re:       regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`),
		check:    checkEntropy(3),
	},
	{
		// gitleaks openai-api-key: sk-proj-, sk-svcacct-, sk-admin-, the
		// legacy sk-…T3BlbkFJ… and 48-character keys; OpenRouter's
		// sk-or-v1- has the same shape.
		name:     "openai-api-key",
		keywords: []string{"sk-"},
		re:       regexp.MustCompile(`\bsk-(?:proj|svcacct|admin|None|or-v1)-[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9]{32,}`),
		check:    checkAll(checkEntropy(3), checkDigit),
	},
	{
		// gitleaks aws-access-token: access key ids (AKIA), temporary
		// ones (ASIA) and the rarer prefixes.
		name:     "aws-access-key",
		keywords: []string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T"},
		re:       regexp.MustCompile(`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`),
		check:    checkEntropy(3),
	},
	{
		// gitleaks github-pat, -oauth, -app-token, -refresh-token,
		// github-fine-grained-pat.
		name:     "github-token",
		keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		re:       regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}|\bgithub_pat_[A-Za-z0-9_]{22,}`),
	},
	{
		// gitleaks gitlab-*: personal, deploy, runner, trigger, feed,
		// mail, OAuth, SCIM, CI job, feature-flag and agent tokens, and
		// runner registration tokens.
		name:     "gitlab-token",
		keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "gloas-", "glsoat-", "glcbt-", "glffct-", "glagent-", "GR1348941"},
		re:       regexp.MustCompile(`\bgl(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt|ffct|agent)-[A-Za-z0-9_.-]{20,}|\bGR1348941[A-Za-z0-9_-]{20,}`),
		check:    checkEntropy(3),
	},
	{
		// gitleaks slack-bot-token, -user-token, -app-token,
		// -config-access-token, -legacy-*.
		name:     "slack-token",
		keywords: []string{"xox", "xapp-"},
		re:       regexp.MustCompile(`\b(?:xoxe\.)?xox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}`),
		check:    checkDigit,
	},
	{
		// gitleaks slack-webhook-url: the path is the secret.
		name:     "slack-webhook",
		keywords: []string{"hooks.slack.com"},
		re:       regexp.MustCompile(`hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})`),
		groups:   []int{1},
	},
	{
		// gitleaks stripe-access-token: secret and restricted keys, and
		// webhook signing secrets.
		name:     "stripe-key",
		keywords: []string{"sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_", "whsec_"},
		re:       regexp.MustCompile(`\b[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9+/=]{20,}`),
	},
	{
		// gitleaks huggingface-access-token, -organization-api-token.
		name:     "huggingface-token",
		keywords: []string{"hf_", "api_org_"},
		re:       regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}|\bapi_org_[A-Za-z0-9]{30,}`),
		check:    checkEntropy(3),
	},
	{
		// gitleaks gcp-api-key.
		name:     "gcp-api-key",
		keywords: []string{"AIza"},
		re:       regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`),
	},
	{
		// Google OAuth access tokens.
		name:     "google-oauth-token",
		keywords: []string{"ya29."},
		re:       regexp.MustCompile(`\bya29\.[0-9A-Za-z_-]{20,}`),
	},
	{
		// gitleaks groq-api-key, xai-api-key (-like), replicate,
		// langsmith-api-key, npm-access-token, pypi-upload-token,
		// sendgrid-api-token, databricks-api-token.
		name:     "ai-platform-token",
		keywords: []string{"gsk_", "xai-", "r8_", "lsv2_"},
		re:       regexp.MustCompile(`\bgsk_[A-Za-z0-9]{40,}|\bxai-[A-Za-z0-9]{60,}|\br8_[A-Za-z0-9]{30,}|\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}`),
		check:    checkEntropy(3),
	},
	{
		name:     "package-registry-token",
		keywords: []string{"npm_", "pypi-"},
		re:       regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36,}|\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`),
		check:    checkEntropy(3),
	},
	{
		name:     "sendgrid-key",
		keywords: []string{"SG."},
		re:       regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{40,}`),
	},
	{
		name:     "databricks-token",
		keywords: []string{"dapi"},
		re:       regexp.MustCompile(`\bdapi[a-f0-9]{32}(?:-[0-9])?\b`),
		check:    checkEntropy(3),
	},
	{
		// An Authorization header with any scheme: the value up to the
		// end of the line or the closing quote. Also "authorization":
		// "…" and a header list ["Bearer …"].
		name:     "auth-header",
		keywords: []string{"authorization"},
		fold:     true,
		re:       regexp.MustCompile(`(?i)\b(?:proxy-)?authorization\\?["']?\s*[:=]\s*\[?\s*\\?["']?([^\r\n"'\\\],;]+)`),
		groups:   []int{1},
		need:     needSep,
	},
	{
		// A Cookie or Set-Cookie header: all of its value.
		name:     "cookie-header",
		keywords: []string{"cookie"},
		fold:     true,
		re:       regexp.MustCompile(`(?i)\b(?:set-)?cookie\\?["']?\s*[:=]\s*\[?\s*\\?["']?([^\r\n"'\\\]]+)`),
		groups:   []int{1},
		need:     needSep,
	},
	{
		// "Bearer <token>" without a header name; the token must look
		// random (a digit or a symbol), so that English prose passes.
		name:     "bearer-token",
		keywords: []string{"bearer"},
		fold:     true,
		re:       regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)(?:$|[\s"',;)\]}\\])`),
		groups:   []int{1},
		need:     needSpace,
		check:    checkRandom,
	},
	{
		// "Basic <base64 of user:password>" without a header name.
		name:     "basic-auth",
		keywords: []string{"basic"},
		fold:     true,
		re:       regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})`),
		groups:   []int{1},
		need:     needSpace,
		check:    checkBasic,
	},
	{
		// gitleaks' URL-credentials idea: scheme://user:password@host;
		// the password is replaced.
		name:     "url-credentials",
		keywords: []string{"://"},
		re:       regexp.MustCompile(`://[^\s/?#@:"'<>]*:([^\s/?#@"'<>]+)@`),
		groups:   []int{1},
		need:     func(s string) bool { return strings.IndexByte(s, '@') >= 0 },
	},
	{
		// Secrets in query strings: parameters whose name ends in a secret
		// word, and the short names that are secrets only there (key,
		// sig, code, …; AWS and Google signed URLs).
		name:     "url-query-secret",
		keywords: []string{"pass", "pwd", "token", "secret", "key", "sig", "code", "auth", "session", "sid", "jwt", "credential", "x-amz-", "x-goog-"},
		fold:     true,
		re:       regexp.MustCompile(`(?i)[?&;](?:[a-z0-9_.-]*(?:password|passwd|token|secret|api[_-]?key|apikey|access[_-]?key|signature|credential)|pwd|pass|key|sig|code|auth|session|sid|jwt|x-amz-security-token)=([^&#\s"'<>]+)`),
		groups:   []int{1},
		need: func(s string) bool {
			return strings.IndexByte(s, '=') >= 0 && (strings.IndexByte(s, '?') >= 0 || strings.IndexByte(s, '&') >= 0 || strings.IndexByte(s, ';') >= 0)
		},
	},
	{
		// key=value, key: value, "key": "value" (also with escaped
		// quotes) and key => value, where the key is a secret by the key
		// rules (keyKind); quoted values may hold spaces. Found by findKV,
		// without a regular expression: the keys are judged at each
		// separator.
		name:   "kv-secret",
		fold:   true,
		groups: []int{2, 3, 4},
		need:   needSep,
		find:   findKV,
		// keywords: kvKeywords and Config.DenyKeys, filled in by New.
	},
}

// kvKeywords gate kv-secret: parts of every secret word of the key rules.
var kvKeywords = []string{"pass", "pwd", "secret", "token", "key", "credential", "auth", "cookie", "jwt", "bearer"}

// RuleNames returns the names of the built-in value patterns, in the order
// they run; these are the values of the rule label besides secret-key,
// deny-key, genai-content and deny.
func RuleNames() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}

func checkAll(checks ...func(*Redactor, string, []int, string) bool) func(*Redactor, string, []int, string) bool {
	return func(r *Redactor, s string, m []int, secret string) bool {
		for _, c := range checks {
			if !c(r, s, m, secret) {
				return false
			}
		}
		return true
	}
}

// checkEntropy accepts secrets whose Shannon entropy is at least bits per
// character, as gitleaks' Entropy does: placeholders such as
// AKIAXXXXXXXXXXXXXXXX pass.
func checkEntropy(bits float64) func(*Redactor, string, []int, string) bool {
	return func(_ *Redactor, _ string, _ []int, secret string) bool {
		return entropy(secret) >= bits
	}
}

func checkDigit(_ *Redactor, _ string, _ []int, secret string) bool {
	return strings.ContainsAny(secret, "0123456789")
}

// checkRandom accepts a token that looks random: a digit, a symbol other
// than '_', or both cases in 16 characters or more.
func checkRandom(_ *Redactor, _ string, _ []int, secret string) bool {
	if strings.ContainsAny(secret, "0123456789.~+/=-") {
		return true
	}
	return len(secret) >= 16 && strings.ContainsAny(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		strings.ContainsAny(secret, "abcdefghijklmnopqrstuvwxyz")
}

// checkBasic accepts base64 that decodes to printable "user:password".
func checkBasic(_ *Redactor, _ string, _ []int, secret string) bool {
	b, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(secret, "="))
	}
	if err != nil || !utf8.Valid(b) {
		return false
	}
	for _, c := range string(b) {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	i := strings.IndexByte(string(b), ':')
	return i >= 0 && i < len(b)-1
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
