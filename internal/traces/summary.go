package traces

import (
	"encoding/binary"
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// Summary flags.
const (
	flagError byte = 1 << iota
	flagRoot
)

// spanSummary is what the indexes keep of a span: enough to filter a
// search and to summarise a trace without decoding its spans. The byte
// slices alias the value it was decoded from.
type spanSummary struct {
	start, duration uint64
	flags           byte
	service, name   []byte
	tenant          []byte
}

func (s *spanSummary) isError() bool { return s.flags&flagError != 0 }
func (s *spanSummary) isRoot() bool  { return s.flags&flagRoot != 0 }

// appendSummary encodes a span summary.
func appendSummary(dst []byte, start, dur uint64, flags byte, service, name, tenant string) []byte {
	dst = binary.AppendUvarint(dst, start)
	dst = binary.AppendUvarint(dst, dur)
	dst = append(dst, flags)
	for _, v := range []string{service, name, tenant} {
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

var errCorrupt = errors.New("corrupt value")

// decodeSpanSummary reverses appendSummary.
func decodeSpanSummary(b []byte) (spanSummary, error) {
	var s spanSummary
	var n int
	if s.start, n = binary.Uvarint(b); n <= 0 {
		return s, errCorrupt
	}
	b = b[n:]
	if s.duration, n = binary.Uvarint(b); n <= 0 || len(b) == n {
		return s, errCorrupt
	}
	s.flags, b = b[n], b[n+1:]
	for _, f := range []*[]byte{&s.service, &s.name, &s.tenant} {
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return s, errCorrupt
		}
		*f, b = v, b[n:]
	}
	return s, nil
}

// appendRecord encodes the value of a span or log record: its summary, the
// hash of its resource record and its own protobuf bytes.
func appendRecord(dst, summary []byte, res uint64, item []byte) []byte {
	dst = protowire.AppendBytes(dst, summary)
	dst = be64(dst, res)
	return append(dst, item...)
}

// decodeRecord reverses appendRecord; the slices alias b.
func decodeRecord(b []byte) (summary []byte, res uint64, item []byte, err error) {
	summary, n := protowire.ConsumeBytes(b)
	if n < 0 || len(b) < n+8 {
		return nil, 0, nil, errCorrupt
	}
	b = b[n:]
	return summary, binary.BigEndian.Uint64(b), b[8:], nil
}
