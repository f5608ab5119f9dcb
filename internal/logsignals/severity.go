package logsignals

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Severity is a record's level, in OpenTelemetry's ranges of
// SeverityNumber: the levels below Warn are not told apart here.
type Severity uint8

// The levels.
const (
	// SeverityUnknown is a record that states no level.
	SeverityUnknown Severity = iota
	// SeverityLow is TRACE, DEBUG and INFO (SeverityNumber 1–12).
	SeverityLow
	// SeverityWarn is WARN (13–16).
	SeverityWarn
	// SeverityError is ERROR (17–20).
	SeverityError
	// SeverityFatal is FATAL (21–24).
	SeverityFatal
)

// String returns the level as in the severity label.
func (s Severity) String() string {
	switch s {
	case SeverityLow:
		return "info"
	case SeverityWarn:
		return "warn"
	case SeverityError:
		return "error"
	case SeverityFatal:
		return "fatal"
	}
	return "unknown"
}

// severityNumber maps OpenTelemetry's SeverityNumber to a level.
func severityNumber(n plog.SeverityNumber) Severity {
	switch {
	case n <= 0:
		return SeverityUnknown
	case n < plog.SeverityNumberWarn:
		return SeverityLow
	case n < plog.SeverityNumberError:
		return SeverityWarn
	case n < plog.SeverityNumberFatal:
		return SeverityError
	}
	return SeverityFatal
}

// levelWord maps a level as loggers write it (any case, a few
// abbreviations, syslog's and java.util.logging's names) to a level.
func levelWord(w string) Severity {
	if len(w) < 3 || len(w) > 9 {
		return SeverityUnknown
	}
	switch strings.ToLower(w) {
	case "trace", "debug", "info", "notice", "fine", "finer", "finest", "config", "verbose":
		return SeverityLow
	case "warn", "warning":
		return SeverityWarn
	case "error", "err", "severe", "crit", "critical", "alert":
		return SeverityError
	case "fatal", "panic", "emerg", "emergency":
		return SeverityFatal
	}
	return SeverityUnknown
}

// levelKeys are the fields and key=value keys that hold a record's level.
var levelKeys = []string{"level", "lvl", "severity", "loglevel", "log.level", "levelname"}

// maxLevelTokens is how many leading tokens of a text are searched for its
// level: past a timestamp, a thread and a logger name, a level word is
// part of the message.
const maxLevelTokens = 6

// textLevel finds the level of a line of text: a level word among its
// first tokens, bare or in brackets ("[ERROR]", "ERROR:", "<warn>"), a
// level=… pair (logfmt, Go's slog), or klog's and glog's leading letter
// ("E0129 08:42:22.383 …").
func textLevel(s string) Severity {
	sev, _ := textLevelRest(s)
	return sev
}

// textLevelRest is textLevel, and the text after the level: the message
// without the header its layout writes before it (a timestamp, a thread,
// the level itself), which every line shares and which would make any two
// lines of a length look alike to the miner. Without a level, or with
// nothing after it, rest is s.
func textLevelRest(s string) (Severity, string) {
	sev, rest := textLevelAt(s)
	if strings.TrimSpace(rest) == "" {
		return sev, s
	}
	return sev, strings.TrimLeft(rest, " \t")
}

// textLevelAt is textLevelRest before its trimming.
func textLevelAt(s string) (Severity, string) {
	line := s
	for n := 0; n < maxLevelTokens; n++ {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return SeverityUnknown, line
		}
		end := strings.IndexAny(s, " \t\n")
		if end < 0 {
			end = len(s)
		}
		tok := s[:end]
		s = s[end:]
		if n == 0 && len(tok) == 5 && strings.IndexByte("IWEF", tok[0]) >= 0 && allDigits(tok[1:]) {
			return [...]Severity{SeverityLow, SeverityWarn, SeverityError, SeverityFatal}[strings.IndexByte("IWEF", tok[0])], s
		}
		if k, v, ok := strings.Cut(tok, "="); ok {
			for _, lk := range levelKeys {
				if strings.EqualFold(k, lk) {
					if sev := levelWord(strings.Trim(v, `"'`)); sev != SeverityUnknown {
						return sev, s
					}
					return SeverityUnknown, line
				}
			}
			continue
		}
		if sev := levelWord(strings.Trim(tok, "[]<>():|,")); sev != SeverityUnknown {
			return sev, s
		}
		if head, tail, ok := strings.Cut(tok, ":"); ok && n == 0 {
			if sev := levelWord(strings.TrimLeft(head, "[<(")); sev != SeverityUnknown {
				return sev, tail + s // Python's logging: "ERROR:root:…"
			}
		}
	}
	return SeverityUnknown, line
}

func allDigits(s string) bool {
	for i := range len(s) {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// severityOf returns a record's level and its message text: the level from
// SeverityNumber, else SeverityText, else the body's level field (a map, or
// a JSON object in text) or the text's own level; the message is a text
// body, or a structured body's message field, after the level where the
// level came from the text (textLevelRest). With floor at warn, a text
// with no level word of warning or above is not read further: its level
// is SeverityUnknown, whatever it states.
func severityOf(lr plog.LogRecord, floor Severity) (Severity, string) {
	sev := severityNumber(lr.SeverityNumber())
	if sev == SeverityUnknown {
		sev = levelWord(lr.SeverityText())
	}
	body := lr.Body()
	switch body.Type() {
	case pcommon.ValueTypeStr:
		s := body.Str()
		if sev == SeverityUnknown && floor >= SeverityWarn && !mayBeWarn(s) {
			return SeverityUnknown, s // no level word of warning or above anywhere
		}
		if t := strings.TrimSpace(s); len(t) > 1 && t[0] == '{' && t[len(t)-1] == '}' && strings.Contains(t, `"`) {
			var obj map[string]any
			if json.Unmarshal([]byte(t), &obj) == nil {
				return structuredLevel(sev, jsonFields(obj))
			}
		}
		if sev == SeverityUnknown {
			return textLevelRest(s)
		}
		return sev, s
	case pcommon.ValueTypeMap:
		return structuredLevel(sev, pmapFields{body.Map()})
	}
	return sev, body.AsString()
}

// structuredLevel returns the level and message of a structured body; sev
// is the record's own level, which wins.
func structuredLevel(sev Severity, f fields) (Severity, string) {
	msg := ""
	for _, k := range messageKeys {
		if s, ok := f.str(k); ok {
			msg = s
			break
		}
	}
	if sev == SeverityUnknown {
		for _, k := range levelKeys {
			if s, ok := f.str(k); ok {
				if sev = levelWord(s); sev != SeverityUnknown {
					break
				}
			}
		}
	}
	if sev == SeverityUnknown && msg != "" {
		return textLevelRest(msg) // a container runtime's {"log": "… ERROR …"}
	}
	return sev, msg
}

// warnWords are the starts of the level words of warning and above,
// lower case, by their first letter.
var warnWords = [26][]string{
	0:         {"alert"},
	'c' - 'a': {"crit"},
	'e' - 'a': {"err", "emerg"},
	'f' - 'a': {"fatal"},
	'p' - 'a': {"panic"},
	's' - 'a': {"severe"},
	'w' - 'a': {"warn"},
}

// mayBeWarn is a cheap gate, one pass over s: whether s holds, in any
// case, the start of a level word of warning or above, or starts as klog's
// and glog's W, E and F lines do. Without one, neither the text nor a
// JSON object in it can state such a level.
func mayBeWarn(s string) bool {
	if len(s) >= 5 && strings.IndexByte("WEF", s[0]) >= 0 && allDigits(s[1:5]) {
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			continue
		}
		for _, w := range warnWords[c-'a'] {
			if i+len(w) <= len(s) && asciiFoldPrefix(s[i:], w) {
				return true
			}
		}
	}
	return false
}

// asciiFoldPrefix reports whether s starts with the lower-case word w, in
// any case.
func asciiFoldPrefix(s, w string) bool {
	for j := range len(w) {
		if s[j]|0x20 != w[j] {
			return false
		}
	}
	return true
}
