package logtemplates

import (
	"strings"
	"unicode/utf8"
)

// sourceExts are the file extensions of source code that a log layout
// writes before ":line" (Go's log.Lshortfile and klog "controller.go:114",
// Python's "%(filename)s:%(lineno)d", Node's "server.js:42").
var sourceExts = []string{".go", ".py", ".java", ".kt", ".scala", ".js", ".mjs", ".ts", ".rb", ".rs",
	".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cs", ".php", ".ex", ".exs", ".swift", ".m", ".lua", ".pl"}

// locationAt reports whether the number at s[i] (a digit) is the line of
// a source location: it follows '#' after a qualified or capitalised name
// (Logback's and Log4j's "%logger#%line" or "%class#%line":
// "t.s.TravelServiceImpl#451"), or ':' after a file name with a source
// extension ("controller.go:114"), and runs to a word boundary. The line
// of a log statement is no variable: it is the statement's identity, the
// one thing two lines of the same text written from two places differ in.
func locationAt(s string, i int) bool { return locationStart(s, i) >= 0 }

// locationStart is where the name of locationAt's source location starts,
// or -1 where the number at s[i] is no line of one. The name starts a
// word as Mask reads words, and holds no variable of its own.
func locationStart(s string, i int) int {
	if i < 2 || (s[i-1] != '#' && s[i-1] != ':') {
		return -1
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if !boundaryAt(s, j) {
		return -1
	}
	k := i - 1
	for k > 0 && isNameByte(s[k-1]) {
		k--
	}
	if k > 0 && s[k-1] >= utf8.RuneSelf {
		return -1 // the name goes on a word of other characters
	}
	name := s[k : i-1]
	if len(name) < 2 || !isLetter(name[0]) && name[0] != '_' || Mask(name) != name {
		return -1 // a name with a variable in it ("A$00") is none
	}
	if s[i-1] == ':' {
		for _, ext := range sourceExts {
			if len(name) > len(ext) && strings.HasSuffix(name, ext) {
				return k
			}
		}
		return -1
	}
	if strings.IndexByte(name, '.') > 0 || 'A' <= name[0] && name[0] <= 'Z' {
		return k
	}
	return -1
}

// isNameByte reports whether c can be part of a qualified name or a file
// name: a word byte, '.', '$', '/' or '-'.
func isNameByte(c byte) bool {
	return isWordByte(c) || c == '.' || c == '$' || c == '/' || c == '-'
}

// Location is the source location of a log statement among the first
// three tokens of msg ("t.s.TravelServiceImpl#451", "controller.go:114",
// with what closes it in the layout, such as klog's ']', cut), and false
// when none of them is one. The statement's location identifies its
// template better than any likeness of texts: two statements whose texts
// are alike but for their variables are still two steps of the code.
func Location(msg string) (string, bool) {
	rest := msg
	for range 3 {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			return "", false
		}
		tok := rest
		if e := strings.IndexAny(rest, " \t"); e >= 0 {
			tok, rest = rest[:e], rest[e:]
		} else {
			rest = ""
		}
		// The line: digits after the last '#' or ':', to the token's end
		// or to what closes it.
		tok = strings.TrimRight(tok, "]):,;")
		k := strings.LastIndexAny(tok, "#:")
		if k <= 0 || k+1 >= len(tok) || strings.TrimLeft(tok[k+1:], "0123456789") != "" {
			continue
		}
		if start := locationStart(tok, k+1); start >= 0 {
			// Where a rule of Mask's takes the token for something else
			// (the value of a key=value pair), it is no location.
			if loc := tok[start:]; strings.Contains(Mask(msg), loc) {
				return loc, true
			}
			return "", false
		}
	}
	return "", false
}
