package redact

import "strings"

// findKV finds the first key=value pair at or after pos whose key is a
// secret (keySecret or keyDenied). It returns submatch indexes: the whole
// pair, the key, then the value as a double-quoted string (also with
// escaped quotes, \"…\"), a single-quoted string, or a bare word; the
// groups not taken are -1. The grammar:
//
//	key   = [A-Za-z0-9_.-]*[A-Za-z0-9]
//	pair  = key \\?["']? \s* ("=>" | ":" | "=") \s* value
//	value = \\?" ([^"\\] | \\[^"])* \\?" | ' [^'\r\n]* ' | [^\s"'\\&,;}\])<>]+
//
// Only the separators are searched for, and only the keys before them are
// judged, so a string without secret keys costs one pass.
func findKV(r *Redactor, s string, pos int) []int {
	for j := pos; j < len(s); j++ {
		i := strings.IndexAny(s[j:], ":=")
		if i < 0 {
			return nil
		}
		j += i
		ks, ke := kvKey(s, pos, j)
		if ks < 0 {
			continue
		}
		if k := r.keys.kind(s[ks:ke]); k != keySecret && k != keyDenied {
			continue
		}
		v := j + 1
		if s[j] == '=' && v < len(s) && s[v] == '>' {
			v++
		}
		for v < len(s) && isSpace(s[v]) {
			v++
		}
		if m := kvValue(s, v); m != nil {
			return []int{ks, m[0], ks, ke, m[1], m[2], m[3], m[4], m[5], m[6]}
		}
	}
	return nil
}

// kvKey returns the key that ends before the separator at sep, not
// starting before lo, or -1.
func kvKey(s string, lo, sep int) (int, int) {
	k := sep
	for k > lo && isSpace(s[k-1]) {
		k--
	}
	if k > lo && (s[k-1] == '"' || s[k-1] == '\'') {
		k--
		if k > lo && s[k-1] == '\\' {
			k--
		}
	}
	ke := k
	if ke == lo || !isAlnum(s[ke-1]) {
		return -1, -1
	}
	ks := ke - 1
	for ks > lo && isKeyChar(s[ks-1]) {
		ks--
	}
	return ks, ke
}

// kvValue parses the value at v: it returns its end, then the spans of the
// double-quoted, single-quoted and bare forms (-1 when not taken), or nil.
func kvValue(s string, v int) []int {
	if v >= len(s) {
		return nil
	}
	switch {
	case s[v] == '"' || (s[v] == '\\' && v+1 < len(s) && s[v+1] == '"'):
		start := v + 1
		if s[v] == '\\' {
			start++
		}
		for i := start; i < len(s); {
			switch {
			case s[i] == '"':
				return []int{i + 1, start, i, -1, -1, -1, -1}
			case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
				return []int{i + 2, start, i, -1, -1, -1, -1}
			case s[i] == '\\':
				i += 2
			default:
				i++
			}
		}
		return nil
	case s[v] == '\'':
		for i := v + 1; i < len(s); i++ {
			switch s[i] {
			case '\'':
				return []int{i + 1, -1, -1, v + 1, i, -1, -1}
			case '\r', '\n':
				return nil
			}
		}
		return nil
	}
	e := v
	for e < len(s) && !strings.ContainsRune(" \t\n\v\f\r\"'\\&,;})]<>", rune(s[e])) {
		e++
	}
	if e == v {
		return nil
	}
	return []int{e, -1, -1, -1, -1, v, e}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isAlnum(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isKeyChar(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }
