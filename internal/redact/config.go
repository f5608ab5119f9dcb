package redact

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// GenAI content modes of Config.GenAIContent.
const (
	// GenAIDrop replaces GenAI content with "[REDACTED:genai-content]".
	GenAIDrop = "drop"
	// GenAIHash replaces GenAI content with "sha256:" and 16 hex digits.
	GenAIHash = "hash"
	// GenAIKeep keeps GenAI content, still redacting secrets inside it.
	GenAIKeep = "keep"
)

// Config is the user's configuration of redaction (the redaction section of
// vigil.yaml). The zero value is valid and means Default.
type Config struct {
	// GenAIContent says what happens to prompts, completions and other
	// GenAI content: "drop" (the default; "" means drop), "hash" or "keep".
	GenAIContent string `yaml:"genai_content"`
	// GenAIKeys are more attribute keys holding GenAI content; a key
	// matches itself and the keys below it ("x.prompt" matches
	// "x.prompt.0.content"). Case is ignored.
	GenAIKeys []string `yaml:"genai_keys"`
	// HashKey, when set, makes hashed GenAI content an HMAC-SHA256 with
	// this key, so that short prompts cannot be found by hashing guesses.
	HashKey string `yaml:"hash_key"`
	// Allow are regular expressions (RE2) of secrets never redacted: a
	// candidate that any of them matches is kept. Anchor them (^…$) to
	// match the whole candidate.
	Allow []string `yaml:"allow"`
	// Deny are more regular expressions of secrets; the first capture
	// group, or the whole match without one, is replaced with
	// "[REDACTED:deny]".
	Deny []string `yaml:"deny"`
	// DenyKeys are more attribute keys whose values are secrets, matched
	// without case against the whole key or its last dotted segment
	// ("x-internal-auth" matches "http.request.header.x-internal-auth").
	DenyKeys []string `yaml:"deny_keys"`
	// AllowKeys are keys, matched without case against the whole key,
	// that key rules never redact (value patterns still apply).
	AllowKeys []string `yaml:"allow_keys"`
	// DisableRules names built-in value patterns to switch off (see
	// RuleNames).
	DisableRules []string `yaml:"disable_rules"`
	// UnredactedPaths are the metric ingest paths whose label values are
	// stored as received: any of remote_write, push and scrape (none by
	// default: all three are redacted, as OTLP always is).
	UnredactedPaths []string `yaml:"unredacted_paths"`
}

// Metric ingest paths whose label values are redacted unless
// Config.UnredactedPaths names them.
const (
	PathRemoteWrite = "remote_write"
	PathPush        = "push"
	PathScrape      = "scrape"
)

// Redacts tells whether the label values of the metric ingest path are
// redacted.
func (c *Config) Redacts(path string) bool { return !slices.Contains(c.UnredactedPaths, path) }

// Default returns the configuration used when none is given: GenAI content
// dropped, no extra patterns or keys.
func Default() Config {
	return Config{GenAIContent: GenAIDrop}
}

// FieldError is a validation error of one field, named by its YAML path
// relative to the redaction section, with an index for list items
// ("allow[2]").
type FieldError struct {
	// Field is the YAML path, e.g. "deny[0]".
	Field string
	// Msg says what is wrong with the value.
	Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate reports the first invalid field as a *FieldError.
func (c *Config) Validate() error {
	switch c.GenAIContent {
	case "", GenAIDrop, GenAIHash, GenAIKeep:
	default:
		return fieldErr("genai_content", "must be drop, hash or keep, got %q", c.GenAIContent)
	}
	for _, list := range []struct {
		field string
		res   []string
	}{{"allow", c.Allow}, {"deny", c.Deny}} {
		for i, expr := range list.res {
			field := fmt.Sprintf("%s[%d]", list.field, i)
			if expr == "" {
				return fieldErr(field, "must not be empty")
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return fieldErr(field, "invalid regular expression %q: %v", expr, unwrapSyntax(err))
			}
			if re.MatchString("") {
				return fieldErr(field, "%q matches the empty string", expr)
			}
		}
	}
	for _, list := range []struct {
		field string
		keys  []string
	}{{"genai_keys", c.GenAIKeys}, {"deny_keys", c.DenyKeys}, {"allow_keys", c.AllowKeys}} {
		for i, k := range list.keys {
			if strings.TrimSpace(k) == "" {
				return fieldErr(fmt.Sprintf("%s[%d]", list.field, i), "must not be empty")
			}
		}
	}
	for i, p := range c.UnredactedPaths {
		if p != PathRemoteWrite && p != PathPush && p != PathScrape {
			return fieldErr(fmt.Sprintf("unredacted_paths[%d]", i), "unknown path %q (paths: %s, %s, %s)", p, PathRemoteWrite, PathPush, PathScrape)
		}
	}
	names := RuleNames()
	for i, n := range c.DisableRules {
		if !slices.Contains(names, n) {
			return fieldErr(fmt.Sprintf("disable_rules[%d]", i), "unknown rule %q (rules: %s)", n, strings.Join(names, ", "))
		}
	}
	return nil
}

// unwrapSyntax drops the "error parsing regexp: " prefix the regexp package
// puts on its errors, which would repeat what the message already says.
func unwrapSyntax(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}
