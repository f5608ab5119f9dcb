package redact

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// jsonNode is a parsed JSON value that keeps the order of object keys and
// the text of numbers, so that redacted JSON reads like the original.
type jsonNode struct {
	kind byte   // '{', '[', 's' (string), 'n' (number), 't' (true/false), 'z' (null)
	str  string // string value, number text, "true" or "false"
	keys []string
	kids []*jsonNode
}

// maxJSONNesting bounds the nesting of parsed JSON; deeper text falls back
// to the value patterns.
const maxJSONNesting = 256

var errTooDeep = errors.New("JSON nested too deeply")

// jsonText redacts s as one JSON value: object members by key, strings by
// pattern (and as JSON again when they hold it). ok is false when s is not
// one JSON value; the text is then left to the value patterns.
func (r *Redactor) jsonText(s string, depth int) (out string, changed, ok bool) {
	n, err := parseJSON(s)
	if err != nil {
		return "", false, false
	}
	if !r.jsonNode(n, "", depth) {
		return s, false, true
	}
	var b strings.Builder
	b.Grow(len(s))
	writeJSON(&b, n)
	return b.String(), true, true
}

// jsonNode redacts n in place; path is the dotted key path of n.
func (r *Redactor) jsonNode(n *jsonNode, path string, depth int) bool {
	changed := false
	switch n.kind {
	case '{':
		for i, k := range n.keys {
			if nk, ch := r.patterns(k); ch {
				n.keys[i], changed = nk, true
			}
			kidPath := k
			if path != "" {
				kidPath = path + "." + k
			}
			if r.jsonMember(n.kids[i], kidPath, depth) {
				changed = true
			}
		}
	case '[':
		for _, kid := range n.kids {
			if r.jsonMember(kid, path, depth) {
				changed = true
			}
		}
	case 's':
		if out, ch := r.text(n.str, depth+1); ch {
			n.str, changed = out, true
		}
	}
	return changed
}

// jsonMember redacts the value n of key path.
func (r *Redactor) jsonMember(n *jsonNode, path string, depth int) bool {
	switch kind := r.keys.kind(path); kind {
	case keySecret, keyDenied:
		if n.kind == 'z' || (n.kind == 's' && (n.str == "" || isMarker(n.str))) {
			return false
		}
		if r.allowed(jsonString(n)) {
			return false
		}
		r.count(keyRule(kind))
		*n = jsonNode{kind: 's', str: marker(keyRule(kind))}
		return true
	case keyGenAI:
		switch r.genAI {
		case GenAIKeep:
			return r.jsonNode(n, path, depth)
		case GenAIHash:
			if n.kind == 'z' || (n.kind == 's' && (n.str == "" || isMarker(n.str))) {
				return false
			}
			r.count(ruleGenAI)
			*n = jsonNode{kind: 's', str: r.hash(jsonString(n))}
			return true
		default:
			if n.kind == 'z' || (n.kind == 's' && (n.str == "" || isMarker(n.str))) {
				return false
			}
			r.count(ruleGenAI)
			*n = jsonNode{kind: 's', str: marker(ruleGenAI)}
			return true
		}
	}
	return r.jsonNode(n, path, depth)
}

func keyRule(k keyKind) string {
	if k == keyDenied {
		return ruleDenyKey
	}
	return ruleSecretKey
}

// jsonString is a string node's value, or the JSON text of any other node.
func jsonString(n *jsonNode) string {
	if n.kind == 's' {
		return n.str
	}
	var b strings.Builder
	writeJSON(&b, n)
	return b.String()
}

// writeJSON writes n as compact JSON.
func writeJSON(b *strings.Builder, n *jsonNode) {
	switch n.kind {
	case '{', '[':
		b.WriteByte(n.kind)
		for i, kid := range n.kids {
			if i > 0 {
				b.WriteByte(',')
			}
			if n.kind == '{' {
				writeJSONString(b, n.keys[i])
				b.WriteByte(':')
			}
			writeJSON(b, kid)
		}
		if n.kind == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	case 's':
		writeJSONString(b, n.str)
	case 'n', 't':
		b.WriteString(n.str)
	default:
		b.WriteString("null")
	}
}

// writeJSONString writes s as a JSON string, escaping only what JSON
// requires (no HTML escaping); invalid UTF-8 becomes U+FFFD.
func writeJSONString(b *strings.Builder, s string) {
	const hexDigits = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\ufffd`)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}
