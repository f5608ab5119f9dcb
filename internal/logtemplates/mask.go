package logtemplates

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// wild is the text of a variable: a masked part of a message, or a template
// position that differs between the messages of a cluster.
const wild = "<*>"

// Mask replaces the variable parts of msg with <*>. It reads each byte a
// bounded number of times, with no regular expression, and returns msg itself,
// without allocating, when nothing is variable. The package documentation lists
// the rules; in short, a variable starts at a word boundary and ends at one,
// and is one of:
//
//   - a UUID (8-4-4-4-12 hex digits);
//   - an ISO-8601 or RFC 3339 date or timestamp ("2024-05-12",
//     "2024-05-12T10:11:12.345+02:00"), or a time of day ("10:11:12",
//     "10:11:12,345");
//   - an IPv4 address with an optional port ("10.0.0.1:8080");
//   - a hex number with the 0x prefix, or a run of 8 or more hex digits;
//   - an e-mail address;
//   - the value of a key=value pair, the key kept ("user=<*>"), unless the
//     value is quoted;
//   - a number: a word that starts with a digit, with an optional sign,
//     decimals, an exponent and a unit ("-5", "3.5s", "200MB", "5µs",
//     "61.4%"), but for the line of a source location
//     ("t.s.TravelServiceImpl#451", "controller.go:114": locationAt).
//
// A word that only holds digits past its first character ("v2", "sha256",
// "test9") is kept: it is usually a name, and Drain generalises it where it
// varies. A quoted string is not a variable of its own: its quotes and
// words stay, and the variables in it are masked like any other
// (`Get "http://10.0.0.1:8080/healthz"` masks to `Get "http://<*>/healthz"`).
// Masking never joins or splits the message's whitespace-separated tokens,
// and masking twice changes nothing (FuzzMask checks both). Mask is safe
// for concurrent use.
func Mask(msg string) string {
	b, changed := maskAppend(nil, msg)
	if !changed {
		return msg
	}
	return string(b)
}

// maskAppend appends the masked s to dst. Where nothing is masked it
// appends nothing and reports false, so that the caller can use s itself.
func maskAppend(dst []byte, s string) ([]byte, bool) {
	sc := scanner{s: s, hasAt: strings.IndexByte(s, '@') >= 0, hasEq: strings.IndexByte(s, '=') >= 0}
	last, changed := 0, false
	put := func(start, end int) {
		if dst == nil {
			dst = make([]byte, 0, len(s)+2*len(wild))
		}
		dst = append(dst, s[last:start]...)
		dst = append(dst, wild...)
		last, changed = end, true
	}
	// prevWord says whether the character before i is a word character: a
	// variable starts only after one that is not. A sign right after a
	// variable starts no number, so that "10-20" is two numbers, not a
	// number and a negative one.
	prevWord, varEnd := false, -1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			prevWord = !unicode.IsSpace(r)
			i += n
		case prevWord:
			prevWord = isWordByte(c)
			i++
		case isWordByte(c):
			if start, end := sc.variable(i); end > 0 {
				put(start, end)
				i, varEnd = end, end
				continue
			}
			i = wordEnd(s, i)
			prevWord = true
		case (c == '-' || c == '+') && i != varEnd && i+1 < len(s) && isDigit(s[i+1]):
			end := sc.number(i + 1)
			put(i, end)
			i, varEnd = end, end
		default:
			i++
		}
	}
	if changed {
		dst = append(dst, s[last:]...)
	}
	return dst, changed
}

// scanner holds what one Mask call has learnt about its message, so that
// every byte is looked at a bounded number of times.
type scanner struct {
	s string
	// hasAt and hasEq say whether s holds '@' (an e-mail address may
	// follow) and '=' (a key=value pair may follow).
	hasAt, hasEq bool
	// emailFail and kvFail are where the last failed e-mail address or key
	// ended: one starting before there fails too.
	emailFail, kvFail int
}

// variable returns the part of the variable that starts at s[i] to
// replace, s[start:end], or end 0 where none starts there. s[i] is a word
// character after a non-word character.
func (sc *scanner) variable(i int) (start, end int) {
	s := sc.s
	c := s[i]
	if isDigit(c) && i > 0 && (s[i-1] == '#' || s[i-1] == ':') && locationAt(s, i) {
		return 0, 0 // a log statement's line: kept (location.go)
	}
	if isDigit(c) {
		if e := dateAt(s, i); e > 0 && boundaryAt(s, e) {
			return i, e
		}
		if e := timeAt(s, i); e > 0 && boundaryAt(s, e) {
			return i, e
		}
		if e := ipv4At(s, i); e > 0 && boundaryAt(s, e) {
			return i, e
		}
		if e := hex0xAt(s, i); e > 0 && boundaryAt(s, e) {
			return i, e
		}
	}
	if isHex(c) {
		if e := uuidAt(s, i); e > 0 && boundaryAt(s, e) {
			return i, e
		}
	}
	if sc.hasAt && i >= sc.emailFail {
		if e := sc.email(i); e > 0 {
			return i, e
		}
	}
	if sc.hasEq && i >= sc.kvFail && !isDigit(c) {
		if v, e := sc.keyValue(i); e > 0 {
			return v, e
		}
	}
	if isHex(c) {
		if e := hexRunAt(s, i); e > 0 && boundaryAt(s, e) {
			return i, e
		}
	}
	if isDigit(c) {
		return i, sc.number(i)
	}
	return 0, 0
}

// email returns the end of the e-mail address at s[i], or -1.
func (sc *scanner) email(i int) int {
	s := sc.s
	j := i
	for j < len(s) && isLocalByte(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '@' {
		if e := domainEnd(s, j+1); e > 0 && boundaryAt(s, e) {
			return e
		}
	}
	sc.emailFail = j
	return -1
}

// keyValue returns the value of the key=value pair at s[i], s[v:end], or
// end -1. The key is a letter or '_' followed by letters, digits, '_', '.'
// and '-'; the value runs to a space or one of `,;&)]}"`, and is not
// masked where it is empty, quoted or starts with '='.
func (sc *scanner) keyValue(i int) (v, end int) {
	s := sc.s
	if !isLetter(s[i]) && s[i] != '_' {
		return 0, -1
	}
	j := i + 1
	for j < len(s) && isKeyByte(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '=' {
		if e := valueEnd(s, j+1); e > j+1 {
			return j + 1, e
		}
	}
	sc.kvFail = j
	return 0, -1
}

// number returns the end of the number at s[i], a digit. A number runs
// over word characters (its unit, non-ASCII letters as in "µs" included),
// '.' before a digit, an exponent's sign, and a '%' at its end; so it
// always ends at a word boundary.
func (sc *scanner) number(i int) int {
	s := sc.s
	j := i
	for j < len(s) {
		c := s[j]
		switch {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(r) {
				return j
			}
			j += n
		case isWordByte(c):
			j++
			if (c == 'e' || c == 'E') && j-2 >= i && isDigit(s[j-2]) &&
				j+1 < len(s) && (s[j] == '+' || s[j] == '-') && isDigit(s[j+1]) {
				j += 2
			}
		case c == '.' && j+1 < len(s) && isDigit(s[j+1]):
			j += 2
		case c == '%' && boundaryAt(s, j+1):
			return j + 1
		default:
			return j
		}
	}
	return j
}

// dateAt returns the end of the ISO-8601 date (YYYY-MM-DD) at s[i], with
// the time that follows a 'T', or -1.
func dateAt(s string, i int) int {
	j := digitsAt(s, i, 4)
	if j < 0 || !byteAt(s, j, '-') {
		return -1
	}
	if j = digitsAt(s, j+1, 2); j < 0 || !byteAt(s, j, '-') {
		return -1
	}
	if j = digitsAt(s, j+1, 2); j < 0 {
		return -1
	}
	if byteAt(s, j, 'T') || byteAt(s, j, 't') {
		if e := timeAt(s, j+1); e > 0 {
			return e
		}
	}
	return j
}

// timeAt returns the end of the time of day (HH:MM:SS) at s[i], with its
// fraction (after '.' or ',') and zone (Z, ±HH, ±HHMM, ±HH:MM), or -1.
func timeAt(s string, i int) int {
	j := digitsAt(s, i, 2)
	if j < 0 || !byteAt(s, j, ':') {
		return -1
	}
	if j = digitsAt(s, j+1, 2); j < 0 || !byteAt(s, j, ':') {
		return -1
	}
	if j = digitsAt(s, j+1, 2); j < 0 {
		return -1
	}
	if j+1 < len(s) && (s[j] == '.' || s[j] == ',') && isDigit(s[j+1]) {
		j += 2
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j >= len(s) {
		return j
	}
	switch s[j] {
	case 'Z', 'z':
		return j + 1
	case '+', '-':
		h := digitsAt(s, j+1, 2)
		if h < 0 {
			return j
		}
		if byteAt(s, h, ':') {
			if m := digitsAt(s, h+1, 2); m > 0 {
				return m
			}
		} else if m := digitsAt(s, h, 2); m > 0 {
			return m
		}
		return h
	}
	return j
}

// ipv4At returns the end of the IPv4 address at s[i], with its port, or -1.
func ipv4At(s string, i int) int {
	j := i
	for part := range 4 {
		if part > 0 {
			if !byteAt(s, j, '.') {
				return -1
			}
			j++
		}
		k, v := j, 0
		for k < len(s) && k-j < 3 && isDigit(s[k]) {
			v = 10*v + int(s[k]-'0')
			k++
		}
		if k == j || v > 255 {
			return -1
		}
		j = k
	}
	if j < len(s) && isDigit(s[j]) || byteAt(s, j, '.') && j+1 < len(s) && isDigit(s[j+1]) {
		return -1 // a longer number, or a fifth part
	}
	if byteAt(s, j, ':') {
		k := j + 1
		for k < len(s) && k-j <= 5 && isDigit(s[k]) {
			k++
		}
		if k > j+1 {
			return k
		}
	}
	return j
}

// hex0xAt returns the end of the hex number with the 0x prefix at s[i], or
// -1.
func hex0xAt(s string, i int) int {
	if i+2 >= len(s) || s[i] != '0' || s[i+1] != 'x' && s[i+1] != 'X' || !isHex(s[i+2]) {
		return -1
	}
	j := i + 3
	for j < len(s) && isHex(s[j]) {
		j++
	}
	return j
}

// hexRunAt returns the end of the run of 8 or more hex digits at s[i], or
// -1.
func hexRunAt(s string, i int) int {
	j := i
	for j < len(s) && isHex(s[j]) {
		j++
	}
	if j-i < 8 {
		return -1
	}
	return j
}

// uuidAt returns the end of the UUID at s[i], or -1.
func uuidAt(s string, i int) int {
	if i+36 > len(s) || s[i+8] != '-' {
		return -1
	}
	for k := range 36 {
		c := s[i+k]
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return -1
			}
		} else if !isHex(c) {
			return -1
		}
	}
	return i + 36
}

// domainEnd returns the end of the domain at s[j]: labels of letters,
// digits and '-' joined by '.', up to the last label that holds a letter,
// two labels at least; or -1.
func domainEnd(s string, j int) int {
	labels, end := 0, -1
	for {
		k, letter := j, false
		for k < len(s) && (isAlnum(s[k]) || s[k] == '-') {
			letter = letter || isLetter(s[k])
			k++
		}
		if k == j {
			break
		}
		if labels++; labels >= 2 && letter {
			end = k
		}
		if k+1 < len(s) && s[k] == '.' && isAlnum(s[k+1]) {
			j = k + 1
			continue
		}
		break
	}
	return end
}

// valueEnd returns the end of the value of a key=value pair that starts at
// s[v]; v where it is empty, quoted or starts with '='.
func valueEnd(s string, v int) int {
	if v >= len(s) || s[v] == '"' || s[v] == '\'' || s[v] == '=' {
		return v
	}
	j := v
	for j < len(s) {
		c := s[j]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += n
			continue
		}
		if asciiSpace[c] || strings.IndexByte(`,;&)]}"`, c) >= 0 {
			break
		}
		j++
	}
	return j
}

// wordEnd returns the end of the word at s[i].
func wordEnd(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if !isWordByte(c) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}

// boundaryAt reports whether a word ends before s[j]: s ends there or s[j]
// is not a word character.
func boundaryAt(s string, j int) bool {
	if j >= len(s) {
		return true
	}
	if c := s[j]; c < utf8.RuneSelf {
		return !isWordByte(c)
	}
	r, _ := utf8.DecodeRuneInString(s[j:])
	return unicode.IsSpace(r)
}

// digitsAt returns the end of exactly n digits at s[i], or -1.
func digitsAt(s string, i, n int) int {
	if i < 0 || i+n > len(s) {
		return -1
	}
	for j := i; j < i+n; j++ {
		if !isDigit(s[j]) {
			return -1
		}
	}
	return i + n
}

func byteAt(s string, i int, c byte) bool { return i >= 0 && i < len(s) && s[i] == c }

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isAlnum(c byte) bool  { return isDigit(c) || isLetter(c) }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f' }

// isWordByte reports whether the ASCII byte c is a word character: a
// letter, a digit or '_'. Every non-ASCII character but a space is one too.
func isWordByte(c byte) bool { return wordBytes[c] }

// wordBytes holds isWordByte's answers for the ASCII bytes.
var wordBytes = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = isAlnum(byte(c)) || c == '_'
	}
	return t
}()

// isLocalByte reports whether c may be in the local part of an e-mail
// address.
func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

// isKeyByte reports whether c may follow the first character of a key.
func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }
