package traces

import (
	"encoding/json"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Limits of correlation id extraction: what a record may make the store do.
const (
	maxCorrIDs     = 8        // ids kept per span or record
	maxCorrIDLen   = 256      // longer values are not ids
	maxJSONBody    = 64 << 10 // string bodies parsed as JSON up to this size
	maxBodyDepth   = 4        // nesting searched in structured bodies
	maxSliceValues = 4        // elements read from an array attribute
)

// correlator finds correlation ids in attributes and log bodies.
type correlator struct {
	keys []string
}

func newCorrelator(keys []string) correlator {
	return correlator{keys: append([]string(nil), keys...)}
}

func (c correlator) isKey(k string) bool {
	for _, want := range c.keys {
		if strings.EqualFold(k, want) {
			return true
		}
	}
	return false
}

// fromMap appends the ids found at the top level of m (attributes).
func (c correlator) fromMap(dst []string, m pcommon.Map) []string {
	if len(c.keys) == 0 {
		return dst
	}
	m.Range(func(k string, v pcommon.Value) bool {
		if c.isKey(k) {
			dst = appendValue(dst, v)
		}
		return len(dst) < maxCorrIDs
	})
	return dst
}

// fromBody appends the ids found in a log body: a map (searched a few
// levels deep), or a string holding a JSON object.
func (c correlator) fromBody(dst []string, body pcommon.Value) []string {
	if len(c.keys) == 0 {
		return dst
	}
	switch body.Type() {
	case pcommon.ValueTypeMap:
		return c.fromBodyMap(dst, body.Map(), 0)
	case pcommon.ValueTypeStr:
		s := strings.TrimSpace(body.Str())
		if len(s) < 2 || len(s) > maxJSONBody || s[0] != '{' {
			return dst
		}
		var obj map[string]any
		if json.Unmarshal([]byte(s), &obj) != nil {
			return dst
		}
		return c.fromJSON(dst, obj, 0)
	}
	return dst
}

func (c correlator) fromBodyMap(dst []string, m pcommon.Map, depth int) []string {
	m.Range(func(k string, v pcommon.Value) bool {
		switch {
		case c.isKey(k):
			dst = appendValue(dst, v)
		case v.Type() == pcommon.ValueTypeMap && depth+1 < maxBodyDepth:
			dst = c.fromBodyMap(dst, v.Map(), depth+1)
		}
		return len(dst) < maxCorrIDs
	})
	return dst
}

func (c correlator) fromJSON(dst []string, obj map[string]any, depth int) []string {
	for k, v := range obj {
		if len(dst) >= maxCorrIDs {
			break
		}
		switch v := v.(type) {
		case string:
			if c.isKey(k) {
				dst = appendID(dst, v)
			}
		case float64:
			if c.isKey(k) {
				dst = appendID(dst, strconv.FormatFloat(v, 'f', -1, 64))
			}
		case []any:
			if c.isKey(k) {
				for i, e := range v {
					if s, ok := e.(string); ok && i < maxSliceValues {
						dst = appendID(dst, s)
					}
				}
			}
		case map[string]any:
			if depth+1 < maxBodyDepth {
				dst = c.fromJSON(dst, v, depth+1)
			}
		}
	}
	return dst
}

// appendValue appends the id(s) in an attribute value: a string, an integer
// or an array of strings (as http.request.header.* attributes are).
func appendValue(dst []string, v pcommon.Value) []string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendID(dst, v.Str())
	case pcommon.ValueTypeInt:
		return appendID(dst, strconv.FormatInt(v.Int(), 10))
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		for i := 0; i < s.Len() && i < maxSliceValues; i++ {
			if e := s.At(i); e.Type() == pcommon.ValueTypeStr {
				dst = appendID(dst, e.Str())
			}
		}
	}
	return dst
}

// appendID appends id unless it is empty, too long, holds a 0 byte (the
// index separator) or is there already.
func appendID(dst []string, id string) []string {
	id = strings.TrimSpace(id)
	if id == "" || len(id) > maxCorrIDLen || strings.IndexByte(id, 0) >= 0 || len(dst) >= maxCorrIDs {
		return dst
	}
	for _, d := range dst {
		if d == id {
			return dst
		}
	}
	return append(dst, id)
}
