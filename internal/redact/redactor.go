package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// minSecretLen is the length below which a string cannot hold a secret the
// value patterns would find ("pwd=abc" is the shortest that matters).
const minSecretLen = 6

// maxRounds bounds the passes of the value patterns over one string; a pass
// that changes nothing ends them early (the second pass almost always).
const maxRounds = 4

// Redactor redacts secrets and GenAI content. It is safe for concurrent use.
type Redactor struct {
	rules    []builtin // built-in patterns still enabled, in order
	markers  []string  // "[REDACTED:<name>]" of each rule
	deny     []*regexp.Regexp
	denyMark string
	allow    []*regexp.Regexp
	pf       *prefilter
	keys     *keyRules
	genAI    string
	hashKey  []byte
	counts   map[string]prometheus.Counter
}

// New compiles cfg's rules and registers vigil_redactions_total{rule} with
// reg (nil: not registered). A second Redactor on the same registry shares
// the counter.
func New(cfg Config, reg prometheus.Registerer) (*Redactor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("redaction config: %w", err)
	}
	r := &Redactor{keys: newKeyRules(cfg), genAI: cfg.GenAIContent, hashKey: []byte(cfg.HashKey), denyMark: marker(ruleDeny)}
	if r.genAI == "" {
		r.genAI = GenAIDrop
	}
	for _, b := range builtins {
		if slices.Contains(cfg.DisableRules, b.name) {
			continue
		}
		if b.name == "kv-secret" {
			b.keywords = slices.Clone(kvKeywords)
			for _, d := range cfg.DenyKeys {
				b.keywords = append(b.keywords, strings.TrimSpace(d))
			}
		}
		r.rules = append(r.rules, b)
		r.markers = append(r.markers, marker(b.name))
	}
	r.pf = newPrefilter(r.rules, jsonHints(r.keys.genAI))
	for _, expr := range cfg.Deny {
		r.deny = append(r.deny, regexp.MustCompile(expr)) // Validate compiled it
	}
	for _, expr := range cfg.Allow {
		r.allow = append(r.allow, regexp.MustCompile(expr))
	}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_redactions_total",
		Help: "Values redacted before storage, logging or forwarding, by rule.",
	}, []string{"rule"})
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			are := &prometheus.AlreadyRegisteredError{}
			if !errors.As(err, are) {
				return nil, fmt.Errorf("register redaction metrics: %w", err)
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, fmt.Errorf("register redaction metrics: %w", err)
			}
			vec = existing
		}
	}
	r.counts = map[string]prometheus.Counter{}
	for _, name := range append(RuleNames(), ruleSecretKey, ruleDenyKey, ruleGenAI, ruleDeny) {
		r.counts[name] = vec.WithLabelValues(name)
	}
	return r, nil
}

func marker(rule string) string { return "[REDACTED:" + rule + "]" }

func (r *Redactor) count(rule string) { r.counts[rule].Inc() }

// String redacts the secrets in s found by the value patterns; a string
// holding JSON is redacted by key and value as well. It reports whether
// anything changed.
func (r *Redactor) String(s string) (string, bool) {
	return r.text(s, 0)
}

// maxJSONDepth bounds JSON inside JSON strings.
const maxJSONDepth = 4

// text redacts s, parsing it as JSON when it looks like JSON and holds a
// keyword of some rule (JSON with none cannot change; "\u" escapes could
// hide one).
func (r *Redactor) text(s string, depth int) (string, bool) {
	if len(s) < minSecretLen && len(r.deny) == 0 {
		return s, false
	}
	found := r.pf.scan(s)
	if depth >= maxJSONDepth || !looksJSON(s) {
		return r.patternsFound(s, found)
	}
	if found != r.pf.always || strings.Contains(s, `\u`) {
		if out, changed, ok := r.jsonText(s, depth); ok {
			return out, changed
		}
	}
	out, changed := r.patternsFound(s, found)
	if changed {
		// Redaction can make broken JSON whole (a private key's block
		// takes a raw newline with it); redact what is now JSON as JSON,
		// so that a second pass finds nothing more.
		if out2, _, ok := r.jsonText(out, depth); ok {
			return out2, true
		}
	}
	return out, changed
}

// patterns applies the value patterns until they change nothing.
func (r *Redactor) patterns(s string) (string, bool) {
	return r.patternsFound(s, r.pf.scan(s))
}

// patternsFound is patterns with the first scan of s done.
func (r *Redactor) patternsFound(s string, found uint64) (string, bool) {
	changed := false
	for range maxRounds {
		out, ch := r.pass(s, found)
		if !ch {
			break
		}
		s, changed = out, true
		found = r.pf.scan(s)
	}
	return s, changed
}

// pass applies each value pattern once; found is the scan of s.
func (r *Redactor) pass(s string, found uint64) (string, bool) {
	changed := false
	if len(s) >= minSecretLen {
		for i := range r.rules {
			if found&(1<<i) == 0 {
				continue
			}
			var ch bool
			s, ch = r.apply(&r.rules[i], r.markers[i], s)
			changed = changed || ch
		}
	}
	for _, re := range r.deny {
		var ch bool
		s, ch = r.replace(s, re, nil, nil, nil, ruleDeny, r.denyMark)
		changed = changed || ch
	}
	return s, changed
}

func (r *Redactor) apply(b *builtin, mark, s string) (string, bool) {
	if b.need != nil && !b.need(s) {
		return s, false
	}
	return r.replace(s, b.re, b.find, b.groups, b.check, b.name, mark)
}

// replace replaces the secret of each accepted match in s with mark; the
// matches come from find or, without it, from re. A rejected match does not
// hide what follows its start: the search goes on from its secret (so that
// `a="password=x"` still finds password=x).
func (r *Redactor) replace(s string, re *regexp.Regexp, find func(*Redactor, string, int) []int, groups []int,
	check func(*Redactor, string, []int, string) bool, rule, mark string) (string, bool) {
	var b strings.Builder
	last, pos := 0, 0
	nsub := 0
	if re != nil {
		nsub = re.NumSubexp()
	}
	for pos <= len(s) {
		var m []int
		if find != nil {
			m = find(r, s, pos)
		} else if m = re.FindStringSubmatchIndex(s[pos:]); m != nil {
			for i := range m {
				if m[i] >= 0 {
					m[i] += pos
				}
			}
		}
		if m == nil {
			break
		}
		gs, ge := secretSpan(m, groups, nsub)
		// Markers at the start of the secret are earlier redactions (a
		// pattern's character class may stop inside one): skip them.
		if gs > m[0] && s[gs-1] == '[' && markerLen(s[gs-1:]) > 0 {
			gs-- // the pattern took the marker's '[' as an opening bracket
		}
		for gs < ge {
			if n := markerLen(s[gs:]); n > 0 {
				gs += n
			} else if s[gs] == '[' && markerLen(s[gs+1:]) > 0 {
				gs++
			} else {
				break
			}
		}
		ge = max(ge, min(gs, len(s))) // a marker may end past the span
		secret := s[gs:ge]
		if hasAlnum(secret) && (check == nil || check(r, s, m, secret)) && !r.allowed(secret) {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:gs])
			b.WriteString(mark)
			last = ge
			r.count(rule)
			pos = max(m[1], m[0]+1)
			continue
		}
		pos = m[0] + 1
		if gs > m[0] {
			pos = gs
		}
	}
	if last == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// secretSpan returns the span of the first group of groups that took part
// in match m; with no groups, the first group of a user pattern that has
// one, or else the whole match.
func secretSpan(m, groups []int, nsub int) (int, int) {
	if groups == nil && nsub > 0 {
		groups = []int{1}
	}
	for _, g := range groups {
		if m[2*g] >= 0 {
			return m[2*g], m[2*g+1]
		}
	}
	return m[0], m[1]
}

// allowed reports whether Config.Allow exempts secret.
func (r *Redactor) allowed(secret string) bool {
	for _, re := range r.allow {
		if re.MatchString(secret) {
			return true
		}
	}
	return false
}

// isMarker reports whether s is already the output of redaction: a
// "[REDACTED:<rule>]" marker or a "sha256:<16 hex>" hash.
func isMarker(s string) bool {
	return s != "" && markerLen(s) == len(s)
}

// markerLen returns the length of the marker or hash s starts with, or 0.
func markerLen(s string) int {
	if rest, ok := strings.CutPrefix(s, "[REDACTED:"); ok {
		n := 0
		for n < len(rest) && (rest[n] == '-' || ('a' <= rest[n] && rest[n] <= 'z') || ('0' <= rest[n] && rest[n] <= '9')) {
			n++
		}
		if n > 0 && n < len(rest) && rest[n] == ']' {
			return len("[REDACTED:") + n + 1
		}
		return 0
	}
	if h, ok := strings.CutPrefix(s, "sha256:"); ok && len(h) >= 16 && strings.Trim(h[:16], "0123456789abcdef") == "" &&
		(len(h) == 16 || !isHex(h[16])) {
		return len("sha256:") + 16
	}
	return 0
}

// hasAlnum reports whether s holds an ASCII letter or digit: a secret
// without one is punctuation left around a marker.
func hasAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c >= 0x80 {
			return true
		}
	}
	return false
}

func isHex(c byte) bool { return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') }

// hash returns "sha256:" and the first 16 hex digits of the (keyed) hash of
// s.
func (r *Redactor) hash(s string) string {
	var h hash.Hash
	if len(r.hashKey) > 0 {
		h = hmac.New(sha256.New, r.hashKey)
	} else {
		h = sha256.New()
	}
	h.Write([]byte(s))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// jsonHints are the words a JSON text must hold for a GenAI key rule to
// apply inside it: the last segment of each GenAI key.
func jsonHints(genAI []string) []string {
	hints := make([]string, 0, len(genAI))
	for _, g := range genAI {
		hints = append(hints, g[strings.LastIndexByte(g, '.')+1:])
	}
	return hints
}

// looksJSON reports whether s starts, after white space, with { or [.
func looksJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}
