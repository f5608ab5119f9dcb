package logtemplates

import (
	"unicode"
	"unicode/utf8"
)

// span is a token of the masked message: buf[lo:hi].
type span struct{ lo, hi int }

// asciiSpace is the set of ASCII bytes that strings.Fields splits on.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// fieldsEnd returns the end of s's first max fields (strings.Fields
// semantics): the end of the max-th field where another follows, else
// len(s).
func fieldsEnd(s string, max int) int {
	if len(s) < 2*max {
		return len(s) // too short for more than max fields
	}
	n := 0
	for i := 0; ; {
		start := skipSpace(s, i)
		if start == len(s) {
			return len(s)
		}
		if n == max {
			return i
		}
		n++
		i = skipField(s, start)
	}
}

// appendFields appends the spans of b's first max fields (strings.Fields
// semantics) to dst.
func appendFields(dst []span, b []byte, max int) []span {
	for i, n := 0, 0; n < max; n++ {
		start := skipSpace(b, i)
		if start == len(b) {
			break
		}
		i = skipField(b, start)
		dst = append(dst, span{start, i})
	}
	return dst
}

// skipSpace returns the index of the first character at or after s[i] that
// is not a space.
func skipSpace[T string | []byte](s T, i int) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if !asciiSpace[c] {
				return i
			}
			i++
			continue
		}
		r, n := decodeRune(s, i)
		if !unicode.IsSpace(r) {
			return i
		}
		i += n
	}
	return i
}

// skipField returns the index of the first space at or after s[i], or
// len(s).
func skipField[T string | []byte](s T, i int) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiSpace[c] {
				return i
			}
			i++
			continue
		}
		r, n := decodeRune(s, i)
		if unicode.IsSpace(r) {
			return i
		}
		i += n
	}
	return i
}

// decodeRune decodes the character at s[i], as utf8.DecodeRune does.
func decodeRune[T string | []byte](s T, i int) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[i:])
	return utf8.DecodeRune(buf[:n])
}

// hasDigit reports whether s holds a decimal digit (drain3's has_numbers,
// which routes such a token through the <*> child of a tree node).
func hasDigit(s string) bool {
	for _, r := range s {
		if '0' <= r && r <= '9' || r >= utf8.RuneSelf && unicode.IsDigit(r) {
			return true
		}
	}
	return false
}
