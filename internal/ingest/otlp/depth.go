package otlp

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// The decoders of pdata recurse into nested attribute values without a
// limit, so a request of a few megabytes of nested lists could exhaust the
// stack, which kills the process. These scanners measure the nesting before
// anything is decoded, in one pass over the bytes.

// errTooDeep is wrapped by the scanners' errors for values nested too deeply.
var errTooDeep = errors.New("attribute value nested too deeply")

// msgKind names the OTLP messages that lead to attribute values.
type msgKind uint8

const (
	kindNone msgKind = iota
	kindTracesRequest
	kindLogsRequest
	kindMetricsRequest
	kindResourceSpans
	kindResourceLogs
	kindResourceMetrics
	kindResource
	kindScope
	kindScopeSpans
	kindScopeLogs
	kindScopeMetrics
	kindSpan
	kindSpanEvent
	kindSpanLink
	kindLogRecord
	kindMetric
	kindNumberPoints // Gauge and Sum
	kindHistogram
	kindExpHistogram
	kindSummary
	kindNumberPoint
	kindHistogramPoint
	kindExpHistogramPoint
	kindSummaryPoint
	kindExemplar
	kindKeyValue
	kindAnyValue
	kindArrayValue
	kindKeyValueList
	kindCount
)

// field is a message field that holds a message of kind.
type field struct {
	num  protowire.Number
	kind msgKind
}

// protoSchema lists, per message kind, the fields of the OTLP protos (as
// pdata decodes them, deprecated fields included) that lead to attribute
// values; the scanners skip every other field.
var protoSchema = [kindCount][]field{
	kindTracesRequest:     {{1, kindResourceSpans}},
	kindLogsRequest:       {{1, kindResourceLogs}},
	kindMetricsRequest:    {{1, kindResourceMetrics}},
	kindResourceSpans:     {{1, kindResource}, {2, kindScopeSpans}, {1000, kindScopeSpans}},
	kindResourceLogs:      {{1, kindResource}, {2, kindScopeLogs}, {1000, kindScopeLogs}},
	kindResourceMetrics:   {{1, kindResource}, {2, kindScopeMetrics}, {1000, kindScopeMetrics}},
	kindResource:          {{1, kindKeyValue}},
	kindScope:             {{3, kindKeyValue}},
	kindScopeSpans:        {{1, kindScope}, {2, kindSpan}},
	kindScopeLogs:         {{1, kindScope}, {2, kindLogRecord}},
	kindScopeMetrics:      {{1, kindScope}, {2, kindMetric}},
	kindSpan:              {{9, kindKeyValue}, {11, kindSpanEvent}, {13, kindSpanLink}},
	kindSpanEvent:         {{3, kindKeyValue}},
	kindSpanLink:          {{4, kindKeyValue}},
	kindLogRecord:         {{5, kindAnyValue}, {6, kindKeyValue}},
	kindMetric:            {{5, kindNumberPoints}, {7, kindNumberPoints}, {9, kindHistogram}, {10, kindExpHistogram}, {11, kindSummary}, {12, kindKeyValue}},
	kindNumberPoints:      {{1, kindNumberPoint}},
	kindHistogram:         {{1, kindHistogramPoint}},
	kindExpHistogram:      {{1, kindExpHistogramPoint}},
	kindSummary:           {{1, kindSummaryPoint}},
	kindNumberPoint:       {{5, kindExemplar}, {7, kindKeyValue}},
	kindHistogramPoint:    {{8, kindExemplar}, {9, kindKeyValue}},
	kindExpHistogramPoint: {{1, kindKeyValue}, {11, kindExemplar}},
	kindSummaryPoint:      {{7, kindKeyValue}},
	kindExemplar:          {{7, kindKeyValue}},
	kindKeyValue:          {{2, kindAnyValue}},
	kindAnyValue:          {{5, kindArrayValue}, {6, kindKeyValueList}},
	kindArrayValue:        {{1, kindAnyValue}},
	kindKeyValueList:      {{1, kindKeyValue}},
}

// childTable is protoSchema indexed by field number; numbers over 15
// other than 1000 lead nowhere.
var childTable = func() (t [kindCount][16]msgKind) {
	for k, fields := range protoSchema {
		for _, f := range fields {
			if f.num < 16 {
				t[k][f.num] = f.kind
			}
		}
	}
	return t
}()

func (k msgKind) child(num protowire.Number) msgKind {
	if num < 16 {
		return childTable[k][num]
	}
	if num == 1000 {
		return k.deprecatedScopes()
	}
	return kindNone
}

// deprecatedScopes is the kind of field 1000 of the resource messages
// (instrumentation_library_*, which pdata still reads).
func (k msgKind) deprecatedScopes() msgKind {
	switch k {
	case kindResourceSpans:
		return kindScopeSpans
	case kindResourceLogs:
		return kindScopeLogs
	case kindResourceMetrics:
		return kindScopeMetrics
	}
	return kindNone
}

// protoDepth checks that no attribute value of the binary protobuf message
// b, of kind, nests arrays and maps more than max deep. It also fails on a
// message whose framing is broken.
func protoDepth(b []byte, kind msgKind, max int) error {
	return scanProto(b, kind, 0, max)
}

func scanProto(b []byte, kind msgKind, depth, max int) error {
	for len(b) > 0 {
		tag, n := varint(b)
		if n < 0 {
			return fmt.Errorf("proto: %w", protowire.ParseError(n))
		}
		b = b[n:]
		num, typ := protowire.Number(tag>>3), protowire.Type(tag&7)
		if num < protowire.MinValidNumber || tag>>3 > uint64(protowire.MaxValidNumber) {
			return fmt.Errorf("proto: invalid field number %d", tag>>3)
		}
		if typ != protowire.BytesType {
			if n = skipValue(num, typ, b); n < 0 {
				return fmt.Errorf("proto: field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		size, n := varint(b)
		if n < 0 || size > uint64(len(b)-n) {
			return fmt.Errorf("proto: field %d: %w", num, io.ErrUnexpectedEOF)
		}
		v := b[n : n+int(size)]
		b = b[n+int(size):]
		child := kind.child(num)
		if child == kindNone {
			continue
		}
		d := depth
		if child == kindArrayValue || child == kindKeyValueList {
			if d++; d > max {
				return fmt.Errorf("%w: arrays and maps nested more than %d deep", errTooDeep, max)
			}
		}
		// Each array or map nested in another takes at least 4 bytes
		// (the tags and lengths of two fields) and the innermost 2, so
		// a short value cannot nest too deeply: most attributes are
		// not scanned at all.
		if d+(len(v)+2)/4 <= max {
			continue
		}
		if err := scanProto(v, child, d, max); err != nil {
			return err
		}
	}
	return nil
}

// varint decodes the varint at the start of b, one-byte values inline.
func varint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return protowire.ConsumeVarint(b)
}

// skipValue returns the length of the value of a field of type typ that
// is not length-delimited at the start of b, or a negative error code.
func skipValue(num protowire.Number, typ protowire.Type, b []byte) int {
	switch typ {
	case protowire.VarintType:
		for i := 0; i < len(b) && i < binary.MaxVarintLen64; i++ {
			if b[i] < 0x80 {
				return i + 1
			}
		}
	case protowire.Fixed64Type:
		if len(b) >= 8 {
			return 8
		}
	case protowire.Fixed32Type:
		if len(b) >= 4 {
			return 4
		}
	default:
		return protowire.ConsumeFieldValue(num, typ, b)
	}
	return protowire.ConsumeFieldValue(num, typ, b) // reports the error
}

// jsonStructure is how deeply the objects and arrays of an OTLP JSON
// request nest outside attribute values, with room to spare; each level of
// an attribute value adds at most 4 (kvlistValue, values, the key-value,
// value).
const jsonStructure = 32

// jsonDepth checks that no attribute value of the OTLP JSON request b nests
// arrays and maps (objects under arrayValue or kvlistValue) more than max
// deep, and that nothing in b nests more than the OTLP structure needs.
// Malformed JSON is left to the decoder to report.
func jsonDepth(b []byte, max int) error {
	limit := jsonStructure + 4*max
	// stack holds, per open object or array, whether it is an attribute
	// container (the object under arrayValue or kvlistValue).
	var stack []bool
	depth := 0
	container := false // the last key named an attribute container
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\r', '\n', ':', ',':
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return nil
			}
			k := skipSpace(b, end+1)
			container = false
			if k < len(b) && b[k] == ':' {
				container = isContainerKey(b[i : end+1])
			}
			i = end
		case '{', '[':
			counted := c == '{' && container
			container = false
			if counted {
				if depth++; depth > max {
					return fmt.Errorf("%w: arrays and maps nested more than %d deep", errTooDeep, max)
				}
			}
			if stack = append(stack, counted); len(stack) > limit {
				return fmt.Errorf("%w: JSON nested more than %d deep", errTooDeep, limit)
			}
		case '}', ']':
			if len(stack) == 0 {
				return nil
			}
			if stack[len(stack)-1] {
				depth--
			}
			stack = stack[:len(stack)-1]
		default:
			container = false
		}
	}
	return nil
}

// stringEnd returns the index of the quote that closes the JSON string
// opening at b[start], or -1.
func stringEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// isContainerKey reports whether the quoted JSON string q is a key whose
// value is an attribute array or map, as pdata's decoder reads keys.
func isContainerKey(q []byte) bool {
	key := string(q[1 : len(q)-1])
	for _, c := range q {
		if c == '\\' {
			if err := json.Unmarshal(q, &key); err != nil {
				return false
			}
			break
		}
	}
	switch key {
	case "arrayValue", "array_value", "kvlistValue", "kvlist_value":
		return true
	}
	return false
}
