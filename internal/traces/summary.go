package traces

import (
	"context"
	"encoding/binary"
	"errors"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/vigil-obs/vigil/internal/tenant"
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
	// owner is the Vigil tenant that wrote the span (tenancy): empty
	// when tenancy was off.
	owner []byte
}

func (s *spanSummary) isError() bool { return s.flags&flagError != 0 }
func (s *spanSummary) isRoot() bool  { return s.flags&flagRoot != 0 }

// appendSummary encodes a span summary. The owner comes last and only
// when set, so summaries written before tenancy read the same.
func appendSummary(dst []byte, start, dur uint64, flags byte, service, name, tenant, owner string) []byte {
	dst = binary.AppendUvarint(dst, start)
	dst = binary.AppendUvarint(dst, dur)
	dst = append(dst, flags)
	for _, v := range []string{service, name, tenant} {
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	if owner != "" {
		dst = protowire.AppendBytes(dst, []byte(owner))
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
	if len(b) > 0 {
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return s, errCorrupt
		}
		s.owner = v
	}
	return s, nil
}

// appendLogSummary encodes a log record's summary: its service, and its
// owner when set.
func appendLogSummary(dst []byte, service, owner string) []byte {
	dst = protowire.AppendBytes(dst, []byte(service))
	if owner != "" {
		dst = protowire.AppendBytes(dst, []byte(owner))
	}
	return dst
}

// decodeLogSummary reverses appendLogSummary.
func decodeLogSummary(b []byte) (service, owner []byte, err error) {
	service, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, nil, errCorrupt
	}
	if b = b[n:]; len(b) > 0 {
		if owner, n = protowire.ConsumeBytes(b); n < 0 {
			return nil, nil, errCorrupt
		}
	}
	return service, owner, nil
}

// readable is what a read in ctx may see of the stored records: those of
// the tenants of its principal (tenancy), or everything when it carries
// none (tenancy off, or Vigil's own reads).
type readable struct {
	p  tenant.Principal
	on bool
}

func readableIn(ctx context.Context) readable {
	p, ok := tenant.FromContext(ctx)
	return readable{p, ok}
}

// has reports whether a record of owner may be read.
func (r readable) has(owner []byte) bool {
	return !r.on || len(owner) > 0 && r.p.Has(string(owner))
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
