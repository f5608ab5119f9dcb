package redact

import (
	"encoding/json"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Value redacts v, the value of attribute key, in place: by key (a secret
// key or GenAI content replaces the whole value, maps and slices
// included), then member by member for maps and slices, and by pattern for
// strings (JSON strings by key and value) and UTF-8 bytes.
func (r *Redactor) Value(key string, v pcommon.Value) {
	r.value(key, v, false)
}

// Attributes redacts every value of m in place.
func (r *Redactor) Attributes(m pcommon.Map) {
	r.attributes(m, "", false)
}

// attributes redacts m, whose keys sit below prefix; inEvent says m belongs
// to a GenAI event, whose content keys are GenAI content.
func (r *Redactor) attributes(m pcommon.Map, prefix string, inEvent bool) bool {
	changed := false
	for k, v := range m.All() {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		if r.value(path, v, inEvent && genAIEventKeys[k]) {
			changed = true
		}
	}
	return changed
}

// value redacts v under key; genAI forces the GenAI content rule.
func (r *Redactor) value(key string, v pcommon.Value, genAI bool) bool {
	kind := r.keys.kind(key)
	if genAI {
		kind = keyGenAI
	}
	switch kind {
	case keySecret, keyDenied:
		return r.replaceValue(v, keyRule(kind))
	case keyGenAI:
		switch r.genAI {
		case GenAIDrop:
			return r.replaceValue(v, ruleGenAI)
		case GenAIHash:
			return r.hashValue(v)
		}
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if out, ch := r.text(v.Str(), 0); ch {
			v.SetStr(out)
			return true
		}
	case pcommon.ValueTypeBytes:
		b := v.Bytes().AsRaw()
		if utf8.Valid(b) {
			if out, ch := r.text(string(b), 0); ch {
				v.Bytes().FromRaw([]byte(out))
				return true
			}
		}
	case pcommon.ValueTypeMap:
		return r.attributes(v.Map(), key, false)
	case pcommon.ValueTypeSlice:
		changed := false
		s := v.Slice()
		for i := range s.Len() {
			if r.value(key, s.At(i), genAI) {
				changed = true
			}
		}
		return changed
	}
	return false
}

// empty reports whether v holds nothing to hide: empty, or already
// redacted.
func empty(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
		return true
	case pcommon.ValueTypeStr:
		return v.Str() == "" || isMarker(v.Str())
	case pcommon.ValueTypeBytes:
		return v.Bytes().Len() == 0
	case pcommon.ValueTypeMap:
		return v.Map().Len() == 0
	case pcommon.ValueTypeSlice:
		return v.Slice().Len() == 0
	}
	return false
}

// replaceValue replaces v with the marker of rule unless Config.Allow
// exempts it.
func (r *Redactor) replaceValue(v pcommon.Value, rule string) bool {
	if empty(v) || (len(r.allow) > 0 && r.allowed(valueText(v))) {
		return false
	}
	r.count(rule)
	v.SetStr(marker(rule))
	return true
}

// hashValue replaces GenAI content v with its hash.
func (r *Redactor) hashValue(v pcommon.Value) bool {
	if empty(v) {
		return false
	}
	r.count(ruleGenAI)
	v.SetStr(r.hash(valueText(v)))
	return true
}

// valueText is a string value itself, and any other value as JSON (maps
// with sorted keys, so that equal content hashes equally).
func valueText(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str()
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		b, err := json.Marshal(v.AsRaw())
		if err == nil {
			return string(b)
		}
	}
	return v.AsString()
}
