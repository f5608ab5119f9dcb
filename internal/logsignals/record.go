package logsignals

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// messageKeys are the fields of a structured log record that hold its
// message: the common JSON loggers' (message, msg), Docker's and
// Fluent Bit's (log), journald's (MESSAGE) and error fields.
var messageKeys = []string{"message", "msg", "log", "MESSAGE", "error", "err", "exception"}

// statusPaths are the fields of a structured record that hold an HTTP
// response status: common names, OpenTelemetry's (flat and nested),
// Envoy's response_code.
var statusPaths = [][]string{
	{"status"}, {"status_code"}, {"statusCode"}, {"response_code"},
	{"http.response.status_code"}, {"http.status_code"},
	{"http", "response", "status_code"}, {"http", "status_code"},
}

// statusAttrs are the log-record attributes that hold an HTTP response
// status: OpenTelemetry's current and older semantic conventions.
var statusAttrs = []string{"http.response.status_code", "http.status_code"}

// maxFieldDepth bounds how deep a structured body is searched.
const maxFieldDepth = 4

// MatchRecord finds the events of one log record: in its body (text, a
// JSON object in text, or a map: its message fields and HTTP status) and
// in its attributes (an HTTP response status).
func MatchRecord(lr plog.LogRecord) Match {
	var m Match
	body := lr.Body()
	switch body.Type() {
	case pcommon.ValueTypeStr:
		m = matchBodyText(body.Str())
	case pcommon.ValueTypeMap:
		m = matchFields(pmapFields{body.Map()}, 0)
	}
	if httpStatusAttr(lr.Attributes()) {
		m.Events.Add(EventHTTP5xx)
	}
	return m
}

// matchBodyText matches a text body; one that holds a JSON object is
// matched by its fields.
func matchBodyText(s string) Match {
	if !mayMatch(s) {
		return Match{}
	}
	if t := strings.TrimSpace(s); len(t) > 1 && t[0] == '{' && t[len(t)-1] == '}' {
		var obj map[string]any
		if json.Unmarshal([]byte(t), &obj) == nil {
			return matchFields(jsonFields(obj), 0)
		}
	}
	return MatchText(s)
}

// fields is a structured body: a JSON object or a pcommon.Map.
type fields interface {
	// str returns the text of a string field.
	str(key string) (string, bool)
	// status returns a field's value as an HTTP status, when it is an
	// integer or a string of one.
	status(key string) (int, bool)
	// sub returns an object field.
	sub(key string) (fields, bool)
}

// matchFields matches the message fields of f and its HTTP status.
func matchFields(f fields, depth int) Match {
	var m Match
	for _, k := range messageKeys {
		if s, ok := f.str(k); ok {
			m.merge(MatchText(s))
		} else if sub, ok := f.sub(k); ok && depth < maxFieldDepth {
			// ECS and others nest the message: {"error": {"message": …}}.
			m.merge(matchFields(sub, depth+1))
		}
	}
	for _, path := range statusPaths {
		if code, ok := statusAt(f, path); ok && code >= 500 && code <= 599 {
			m.Events.Add(EventHTTP5xx)
			break
		}
	}
	return m
}

// statusAt returns the status at path below f.
func statusAt(f fields, path []string) (int, bool) {
	for _, k := range path[:len(path)-1] {
		sub, ok := f.sub(k)
		if !ok {
			return 0, false
		}
		f = sub
	}
	return f.status(path[len(path)-1])
}

// statusNumber returns an HTTP status from a number.
func statusNumber(f float64) (int, bool) {
	if f != math.Trunc(f) || f < 100 || f > 999 {
		return 0, false
	}
	return int(f), true
}

// statusText returns an HTTP status from text ("503").
func statusText(s string) (int, bool) {
	if len(s) != 3 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	return statusNumber(float64(n))
}

// jsonFields are the fields of a decoded JSON object.
type jsonFields map[string]any

func (j jsonFields) str(key string) (string, bool) {
	s, ok := j[key].(string)
	return s, ok
}

func (j jsonFields) status(key string) (int, bool) {
	switch v := j[key].(type) {
	case float64:
		return statusNumber(v)
	case string:
		return statusText(v)
	}
	return 0, false
}

func (j jsonFields) sub(key string) (fields, bool) {
	o, ok := j[key].(map[string]any)
	return jsonFields(o), ok
}

// pmapFields are the fields of a map body.
type pmapFields struct{ m pcommon.Map }

func (p pmapFields) str(key string) (string, bool) {
	v, ok := p.m.Get(key)
	if !ok || v.Type() != pcommon.ValueTypeStr {
		return "", false
	}
	return v.Str(), true
}

func (p pmapFields) status(key string) (int, bool) {
	v, ok := p.m.Get(key)
	if !ok {
		return 0, false
	}
	return valueStatus(v)
}

func (p pmapFields) sub(key string) (fields, bool) {
	v, ok := p.m.Get(key)
	if !ok || v.Type() != pcommon.ValueTypeMap {
		return nil, false
	}
	return pmapFields{v.Map()}, true
}

// valueStatus returns an HTTP status from an attribute value.
func valueStatus(v pcommon.Value) (int, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return statusNumber(float64(v.Int()))
	case pcommon.ValueTypeDouble:
		return statusNumber(v.Double())
	case pcommon.ValueTypeStr:
		return statusText(v.Str())
	}
	return 0, false
}

// httpStatusAttr reports a 5xx status in the record's attributes.
func httpStatusAttr(attrs pcommon.Map) bool {
	for _, k := range statusAttrs {
		if v, ok := attrs.Get(k); ok {
			if code, ok := valueStatus(v); ok && code >= 500 && code <= 599 {
				return true
			}
		}
	}
	return false
}
