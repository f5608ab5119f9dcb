package traces

import (
	"encoding/binary"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Every key starts with its partition: the hour of the span's start or the
// log's time, 4 bytes big-endian, hours since the Unix epoch. Then a kind
// byte. Retention deletes whole partitions with one range deletion.
const (
	partWidth = time.Hour
	partLen   = 4
)

// Key kinds. Spans: S is the span itself, T marks a trace present in the
// partition (looked up with Get, so the bloom filters skip most tables), R a
// resource and scope shared by spans or logs, the others are span indexes
// whose keys end in start, trace id and span id and whose values are the
// span's summary. Logs: L is the record, keyed by time and a sequence
// number; l, r and g index it by trace id, correlation id and service; U
// marks a trace's logs in the partition. K marks a correlation id carried by
// a span or a log in the partition.
const (
	kindSpan      byte = 'S'
	kindTrace     byte = 'T'
	kindResource  byte = 'R'
	kindTime      byte = 'm'
	kindService   byte = 'v'
	kindOperation byte = 'o'
	kindTenant    byte = 'n'
	kindError     byte = 'e'
	kindDuration  byte = 'd'
	kindSpanCorr  byte = 'c'
	kindCorr      byte = 'K'
	kindLog       byte = 'L'
	kindLogTrace  byte = 'l'
	kindLogTraceP byte = 'U'
	kindLogCorr   byte = 'r'
	kindLogSvc    byte = 'g'
)

// spanRefLen is the length of the tail of every span index key: start (8),
// trace id (16), span id (8).
const spanRefLen = 8 + 16 + 8

// logRefLen is the length of the tail of every log key: time (8), sequence (8).
const logRefLen = 16

// partOf is the partition of a time in Unix nanoseconds.
func partOf(ns uint64) uint32 {
	return uint32(ns / uint64(partWidth))
}

// partStart is the first nanosecond of partition p.
func partStart(p uint32) uint64 { return uint64(p) * uint64(partWidth) }

// prefix starts a key: partition and kind.
func prefix(dst []byte, p uint32, kind byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, p)
	return append(dst, kind)
}

// appendStr appends s and a 0 separator.
func appendStr(dst []byte, s string) []byte {
	dst = append(dst, s...)
	return append(dst, 0)
}

// appendSpanRef appends the tail of a span index key.
func appendSpanRef(dst []byte, start uint64, tid pcommon.TraceID, sid pcommon.SpanID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, start)
	dst = append(dst, tid[:]...)
	return append(dst, sid[:]...)
}

// spanRef is a span index entry's tail.
type spanRef struct {
	part  uint32
	start uint64
	tid   pcommon.TraceID
	sid   pcommon.SpanID
}

// parseSpanRef reads the partition and the tail of a span index key.
func parseSpanRef(key []byte) (spanRef, bool) {
	if len(key) < partLen+1+spanRefLen {
		return spanRef{}, false
	}
	t := key[len(key)-spanRefLen:]
	r := spanRef{part: binary.BigEndian.Uint32(key), start: binary.BigEndian.Uint64(t)}
	copy(r.tid[:], t[8:24])
	copy(r.sid[:], t[24:])
	return r, true
}

// spanKey is the key of the span itself.
func spanKey(dst []byte, p uint32, tid pcommon.TraceID, sid pcommon.SpanID) []byte {
	dst = prefix(dst, p, kindSpan)
	dst = append(dst, tid[:]...)
	return append(dst, sid[:]...)
}

// traceKey is the key marking (kind T) or prefixing (kind S) a trace in p.
func traceKey(dst []byte, p uint32, kind byte, tid pcommon.TraceID) []byte {
	dst = prefix(dst, p, kind)
	return append(dst, tid[:]...)
}

// resourceKey is the key of a resource record.
func resourceKey(dst []byte, p uint32, h uint64) []byte {
	dst = prefix(dst, p, kindResource)
	return binary.BigEndian.AppendUint64(dst, h)
}

// logRef names one log record.
type logRef struct {
	part uint32
	t    uint64
	seq  uint64
}

func (r logRef) less(o logRef) bool {
	if r.t != o.t {
		return r.t < o.t
	}
	if r.part != o.part {
		return r.part < o.part
	}
	return r.seq < o.seq
}

// logKey is the key of a log record.
func logKey(dst []byte, r logRef) []byte {
	dst = prefix(dst, r.part, kindLog)
	dst = binary.BigEndian.AppendUint64(dst, r.t)
	return binary.BigEndian.AppendUint64(dst, r.seq)
}

// parseLogRef reads the partition and the tail of a log key or log index key.
func parseLogRef(key []byte) (logRef, bool) {
	if len(key) < partLen+1+logRefLen {
		return logRef{}, false
	}
	t := key[len(key)-logRefLen:]
	return logRef{
		part: binary.BigEndian.Uint32(key),
		t:    binary.BigEndian.Uint64(t),
		seq:  binary.BigEndian.Uint64(t[8:]),
	}, true
}

// prefixEnd is the smallest key after every key that starts with p, or nil
// when there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// be64 is v as 8 big-endian bytes appended to dst.
func be64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }
