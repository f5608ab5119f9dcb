package remotewrite

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
)

// A Remote-Write 1.0 request is decoded here from its protobuf wire format
// instead of by gogo's generated prompb.WriteRequest.Unmarshal, which
// allocates a string for every label name and value and a slice of labels
// for every series, only for ToLabels to copy them into labels.Labels. The
// decoder walks the body once, keeps the labels as sub-slices of the body,
// the float samples in a flat buffer that a pool reuses between requests,
// and builds each series' labels.Labels straight from the body's bytes.
// Histograms, exemplars and metadata, rare next to float samples, are
// decoded by their gogo messages' own Unmarshal.
//
// It accepts and refuses exactly what prompb.WriteRequest.Unmarshal does:
// its varints, tags, lengths and unknown fields follow gogo's generated
// code (its errors too), which FuzzDecodeV1Differential checks.

// requestV1 is a decoded Remote-Write 1.0 request. Its labels point into
// the body, which must outlive it; labelsOf copies them into the
// labels.Labels it returns.
type requestV1 struct {
	// body is the decoded body, which the labels point into.
	body       []byte
	series     []seriesV1
	labels     []labelV1
	samples    []sampleV1
	histograms []prompb.Histogram
	exemplars  []prompb.Exemplar
	// unknown is set when the request has fields that 1.0 does not have.
	unknown bool
}

// seriesV1 is one TimeSeries: the ranges of its labels, samples,
// histograms and exemplars in the request's buffers.
type seriesV1 struct {
	labels, samples, histograms, exemplars span
	// raw is the range of the body that holds the series' label fields,
	// when they are one run of fields (as every known sender writes
	// them); empty otherwise. The reference cache is keyed by it.
	raw span
}

// span is the range [lo, hi) of a buffer.
type span struct{ lo, hi int32 }

// labelV1 is a label as the body holds it.
type labelV1 struct{ name, value []byte }

// sampleV1 is a float sample.
type sampleV1 struct {
	t int64
	v float64
}

// maxPooledSeries is the most series a pooled requestV1 keeps room for;
// the buffers of a bigger request are left to the garbage collector.
const maxPooledSeries = 1 << 16

// getRequestV1 returns an empty requestV1, reused when one is free.
func (h *Handler) getRequestV1() *requestV1 {
	if r, ok := h.requestsV1.Get().(*requestV1); ok {
		return r
	}
	return &requestV1{}
}

// putRequestV1 frees r for reuse once its request is stored.
func (h *Handler) putRequestV1(r *requestV1) {
	if cap(r.series) > maxPooledSeries {
		return
	}
	r.reset()
	h.requestsV1.Put(r)
}

// reset empties the request for reuse, dropping its references into the
// last body and the last histograms and exemplars.
func (r *requestV1) reset() {
	clear(r.labels)
	clear(r.histograms)
	clear(r.exemplars)
	r.series, r.labels, r.samples = r.series[:0], r.labels[:0], r.samples[:0]
	r.histograms, r.exemplars = r.histograms[:0], r.exemplars[:0]
	r.unknown = false
	r.body = nil
}

// count is what countV1 counts of the request: samples, histograms and
// exemplars.
func (r *requestV1) count() int {
	return len(r.samples) + len(r.histograms) + len(r.exemplars)
}

// labelsOf builds series i's labels with b, as prompb's ToLabels does (in
// the order given, then sorted); they own their memory.
func (r *requestV1) labelsOf(i int, b *labels.ScratchBuilder) labels.Labels {
	b.Reset()
	s := r.series[i].labels
	for _, l := range r.labels[s.lo:s.hi] {
		b.Add(labelString(l.name), labelString(l.value))
	}
	b.Sort()
	return b.Labels()
}

// rawLabelsOf returns the bytes of series i's label fields as the body
// holds them (tags and lengths included), nil when they are not one run
// of fields.
func (r *requestV1) rawLabelsOf(i int) []byte {
	s := r.series[i].raw
	if s.hi == s.lo {
		return nil
	}
	return r.body[s.lo:s.hi]
}

// wireLabelsOf returns series i's labels as the body holds them, in the
// order given.
func (r *requestV1) wireLabelsOf(i int) []labelV1 {
	s := r.series[i].labels
	return r.labels[s.lo:s.hi]
}

// samplesOf returns series i's float samples.
func (r *requestV1) samplesOf(i int) []sampleV1 {
	s := r.series[i].samples
	return r.samples[s.lo:s.hi]
}

// histogramsOf returns series i's histograms.
func (r *requestV1) histogramsOf(i int) []prompb.Histogram {
	s := r.series[i].histograms
	return r.histograms[s.lo:s.hi]
}

// exemplarsOf returns series i's exemplars.
func (r *requestV1) exemplarsOf(i int) []prompb.Exemplar {
	s := r.series[i].exemplars
	return r.exemplars[s.lo:s.hi]
}

// decode decodes a WriteRequest body into r, which is reset first.
func (r *requestV1) decode(b []byte) error {
	r.reset()
	r.body = b
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i, "WriteRequest")
		if err != nil {
			return err
		}
		switch num {
		case 1:
			lo, hi, err := message(b, next, typ, "Timeseries")
			if err != nil {
				return err
			}
			if err := r.decodeSeries(b[lo:hi], lo); err != nil {
				return err
			}
			i = hi
		case 3:
			lo, hi, err := message(b, next, typ, "Metadata")
			if err != nil {
				return err
			}
			// The receiver does not store metadata, but a malformed
			// one fails the request, as it does with gogo.
			var md prompb.MetricMetadata
			if err := md.Unmarshal(b[lo:hi]); err != nil {
				return err
			}
			i = hi
		default:
			if i, err = skip(b, i); err != nil {
				return err
			}
			r.unknown = true
		}
	}
	return nil
}

// decodeSeries decodes a TimeSeries message, at offset base of the body,
// and appends it to r.
func (r *requestV1) decodeSeries(b []byte, base int) error {
	s := seriesV1{
		labels:     span{lo: int32(len(r.labels))},
		samples:    span{lo: int32(len(r.samples))},
		histograms: span{lo: int32(len(r.histograms))},
		exemplars:  span{lo: int32(len(r.exemplars))},
	}
	// The label fields' run: [rawLo, rawHi), split once another field
	// comes between two labels.
	rawLo, rawHi, split := -1, -1, false
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i, "TimeSeries")
		if err != nil {
			return err
		}
		if num < 1 || num > 4 {
			if i, err = skip(b, i); err != nil {
				return err
			}
			continue
		}
		lo, hi, err := message(b, next, typ, seriesFields[num])
		if err != nil {
			return err
		}
		switch num {
		case 1:
			l, err := decodeLabel(b[lo:hi])
			if err != nil {
				return err
			}
			r.labels = append(r.labels, l)
			switch {
			case rawLo < 0:
				rawLo = i
			case rawHi != i:
				split = true
			}
			rawHi = hi
		case 2:
			smp, err := decodeSample(b[lo:hi])
			if err != nil {
				return err
			}
			r.samples = append(r.samples, smp)
		case 3:
			r.exemplars = append(r.exemplars, prompb.Exemplar{})
			if err := r.exemplars[len(r.exemplars)-1].Unmarshal(b[lo:hi]); err != nil {
				return err
			}
		case 4:
			r.histograms = append(r.histograms, prompb.Histogram{})
			if err := r.histograms[len(r.histograms)-1].Unmarshal(b[lo:hi]); err != nil {
				return err
			}
		}
		i = hi
	}
	s.labels.hi = int32(len(r.labels))
	s.samples.hi = int32(len(r.samples))
	s.histograms.hi = int32(len(r.histograms))
	s.exemplars.hi = int32(len(r.exemplars))
	if rawLo >= 0 && !split {
		s.raw = span{lo: int32(base + rawLo), hi: int32(base + rawHi)}
	}
	r.series = append(r.series, s)
	return nil
}

// seriesFields names TimeSeries' fields in errors, as gogo does.
var seriesFields = [...]string{1: "Labels", 2: "Samples", 3: "Exemplars", 4: "Histograms"}

// decodeLabel decodes a Label message; a repeated field's last value
// wins, as in gogo.
func decodeLabel(b []byte) (labelV1, error) {
	var l labelV1
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i, "Label")
		if err != nil {
			return l, err
		}
		switch num {
		case 1, 2:
			field := "Name"
			if num == 2 {
				field = "Value"
			}
			lo, hi, err := message(b, next, typ, field)
			if err != nil {
				return l, err
			}
			if num == 1 {
				l.name = b[lo:hi]
			} else {
				l.value = b[lo:hi]
			}
			i = hi
		default:
			if i, err = skip(b, i); err != nil {
				return l, err
			}
		}
	}
	return l, nil
}

// decodeSample decodes a Sample message.
func decodeSample(b []byte) (sampleV1, error) {
	var s sampleV1
	for i := 0; i < len(b); {
		num, typ, next, err := tag(b, i, "Sample")
		if err != nil {
			return s, err
		}
		switch num {
		case 1:
			if typ != 1 {
				return s, fmt.Errorf("proto: wrong wireType = %d for field Value", typ)
			}
			if next+8 > len(b) {
				return s, io.ErrUnexpectedEOF
			}
			s.v = math.Float64frombits(binary.LittleEndian.Uint64(b[next:]))
			i = next + 8
		case 2:
			if typ != 0 {
				return s, fmt.Errorf("proto: wrong wireType = %d for field Timestamp", typ)
			}
			v, n, err := varint(b, next)
			if err != nil {
				return s, err
			}
			s.t, i = int64(v), n
		default:
			if i, err = skip(b, i); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// varint decodes the varint at b[i:] as gogo's generated code does (at
// most ten bytes, the bits past 64 dropped) and returns it and the index
// after it.
func varint(b []byte, i int) (uint64, int, error) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1, nil
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, i, prompb.ErrIntOverflowTypes
		}
		if i >= len(b) {
			return 0, i, io.ErrUnexpectedEOF
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
}

// tag decodes the tag of the field at b[i:] of message msg: its number
// (truncated to 32 bits, as in gogo), wire type and the index after it.
func tag(b []byte, i int, msg string) (int32, int, int, error) {
	wire, next, err := varint(b, i)
	if err != nil {
		return 0, 0, 0, err
	}
	num, typ := int32(wire>>3), int(wire&0x7)
	if typ == 4 {
		return 0, 0, 0, fmt.Errorf("proto: %s: wiretype end group for non-group", msg)
	}
	if num <= 0 {
		return 0, 0, 0, fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", msg, num, wire)
	}
	return num, typ, next, nil
}

// message returns the range [lo, hi) of the length-delimited value of
// field at b[i:], whose wire type is typ.
func message(b []byte, i, typ int, field string) (lo, hi int, err error) {
	if typ != 2 {
		return 0, 0, fmt.Errorf("proto: wrong wireType = %d for field %s", typ, field)
	}
	v, lo, err := varint(b, i)
	if err != nil {
		return 0, 0, err
	}
	n := int(v)
	if n < 0 {
		return 0, 0, prompb.ErrInvalidLengthTypes
	}
	hi = lo + n
	if hi < 0 {
		return 0, 0, prompb.ErrInvalidLengthTypes
	}
	if hi > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return lo, hi, nil
}

// skip skips the unknown field that starts (with its tag) at b[i:] and
// returns the index after it.
func skip(b []byte, i int) (int, error) {
	n, err := skipField(b[i:])
	if err != nil {
		return 0, err
	}
	if n < 0 || i+n < 0 {
		return 0, prompb.ErrInvalidLengthTypes
	}
	if i+n > len(b) {
		return 0, io.ErrUnexpectedEOF
	}
	return i + n, nil
}

// skipField is gogo's generated skipTypes: the length of the field at the
// start of b, groups included.
func skipField(b []byte) (int, error) {
	i, depth := 0, 0
	for i < len(b) {
		wire, next, err := varint(b, i)
		if err != nil {
			return 0, err
		}
		i = next
		switch typ := int(wire & 0x7); typ {
		case 0:
			if _, i, err = varint(b, i); err != nil {
				return 0, err
			}
		case 1:
			i += 8
		case 2:
			v, next, err := varint(b, i)
			if err != nil {
				return 0, err
			}
			n := int(v)
			if n < 0 {
				return 0, prompb.ErrInvalidLengthTypes
			}
			i = next + n
		case 3:
			depth++
		case 4:
			if depth == 0 {
				return 0, prompb.ErrUnexpectedEndOfGroupTypes
			}
			depth--
		case 5:
			i += 4
		default:
			return 0, fmt.Errorf("proto: illegal wireType %d", typ)
		}
		if i < 0 {
			return 0, prompb.ErrInvalidLengthTypes
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}
