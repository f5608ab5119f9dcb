package redact

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// errNotJSON says a string is not one JSON value (RFC 8259).
var errNotJSON = errors.New("not JSON")

// jsonParser parses one JSON value into jsonNodes. Strings without escapes
// are slices of the input; invalid UTF-8 and lone surrogates become U+FFFD,
// as encoding/json does.
type jsonParser struct {
	s string
	i int
}

// parseJSON parses s, which must hold exactly one JSON value.
func parseJSON(s string) (*jsonNode, error) {
	p := jsonParser{s: s}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(s) {
		return nil, errNotJSON
	}
	return n, nil
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(nesting int) (*jsonNode, error) {
	if nesting > maxJSONNesting {
		return nil, errTooDeep
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, errNotJSON
	}
	switch c := p.s[p.i]; c {
	case '{', '[':
		return p.container(c, nesting)
	case '"':
		str, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jsonNode{kind: 's', str: str}, nil
	case 't':
		return p.literal("true", 't')
	case 'f':
		return p.literal("false", 't')
	case 'n':
		return p.literal("null", 'z')
	}
	return p.number()
}

func (p *jsonParser) container(open byte, nesting int) (*jsonNode, error) {
	n := &jsonNode{kind: open}
	closing := byte('}')
	if open == '[' {
		closing = ']'
	}
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == closing {
		p.i++
		return n, nil
	}
	for {
		if open == '{' {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, errNotJSON
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, errNotJSON
			}
			p.i++
			n.keys = append(n.keys, k)
		}
		kid, err := p.value(nesting + 1)
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, kid)
		p.space()
		if p.i >= len(p.s) {
			return nil, errNotJSON
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case closing:
			p.i++
			return n, nil
		default:
			return nil, errNotJSON
		}
	}
}

func (p *jsonParser) literal(word string, kind byte) (*jsonNode, error) {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return nil, errNotJSON
	}
	p.i += len(word)
	return &jsonNode{kind: kind, str: word}, nil
}

// number takes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and keeps
// its text.
func (p *jsonParser) number() (*jsonNode, error) {
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.i < len(p.s) && '1' <= p.s[p.i] && p.s[p.i] <= '9':
		p.digits()
	default:
		return nil, errNotJSON
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, errNotJSON
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, errNotJSON
		}
	}
	return &jsonNode{kind: 'n', str: p.s[start:p.i]}, nil
}

func (p *jsonParser) digits() int {
	start := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// str parses the string at p.i (at its opening quote).
func (p *jsonParser) str() (string, error) {
	p.i++
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			out := p.s[start:p.i]
			p.i++
			if !utf8.ValidString(out) {
				out = fixUTF8(out)
			}
			return out, nil
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return "", errNotJSON
		}
		p.i++
	}
	return "", errNotJSON
}

// escaped finishes a string that has escapes; start is after its quote.
func (p *jsonParser) escaped(start int) (string, error) {
	var b strings.Builder
	b.WriteString(fixUTF8(p.s[start:p.i]))
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", errNotJSON
		case c != '\\':
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteRune(r) // RuneError for invalid UTF-8
			p.i += size
			continue
		}
		if p.i+1 >= len(p.s) {
			return "", errNotJSON
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", errNotJSON
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(utf8.RuneError)
				if strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					if lo, ok := p.hex4(); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
						r2 = utf16.DecodeRune(r, lo)
					} else {
						p.i = save
					}
				}
				r = r2
			}
			b.WriteRune(r)
		default:
			return "", errNotJSON
		}
	}
	return "", errNotJSON
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil || strings.ContainsAny(p.s[p.i:p.i+4], "+-_") {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

// fixUTF8 replaces each invalid byte of s with U+FFFD, as encoding/json
// does (strings.ToValidUTF8 replaces runs).
func fixUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String()
}
