package drift

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode"
	"unicode/utf8"
)

// The CSV reader reads what encoding/csv reads with TrimLeadingSpace and
// the header's field count (RFC 4180 with its usual leniencies: \r\n or \n,
// empty lines skipped, leading spaces of a field trimmed), with the same
// records and the same errors, and faster: a record without a quote — the
// common case of numeric features — is split at its commas here, and a
// record with one is handed to encoding/csv itself. FuzzCSVMatchesStdlib
// checks the two agree.
//
// A record's extent follows from the quotes: in RFC 4180 a line break ends
// a record exactly when an even number of quotes precede it in the record
// (an escaped "" counts twice). Input that is not RFC 4180 (a bare quote)
// fails at the same record as with encoding/csv.

const (
	// readSize is what the reader asks its input for at a time, and the
	// size of the chunks of records the parsers share.
	readSize = 256 << 10
	// maxRecordBytes bounds one record (an unterminated quote would
	// otherwise hold the rest of the file in memory).
	maxRecordBytes = 64 << 20
)

// csvSource reads CSV with a header row.
type csvSource struct {
	r    io.Reader
	c    io.Closer
	buf  []byte // buf[off:end] is read and not consumed
	off  int
	end  int
	eof  bool
	line int // lines consumed, as encoding/csv counts them
	cols []string
	// size is what is left of the file after the header, when known
	// (0 otherwise).
	size int64
	// Next's scratch.
	raw    [][]byte
	fields []Field
	q      quotedReader
	arena  []byte
}

// NewCSV reads CSV with a header row from r.
func NewCSV(r io.Reader) (Source, error) { return newCSV(r, io.NopCloser(nil)) }

func newCSV(r io.Reader, c io.Closer) (Source, error) {
	s, err := newCSVSize(r, c, readSize)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newCSVSize is newCSV with a read size of its own (tests make it small to
// cut many chunks).
func newCSVSize(r io.Reader, c io.Closer, size int) (*csvSource, error) {
	s := &csvSource{r: r, c: c, buf: make([]byte, size)}
	head, err := s.next(-1)
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: empty file: no header row", ErrInput)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrInput, err)
	}
	names := make([]string, len(head))
	for i, h := range head {
		names[i] = string(h)
	}
	cols, err := checkColumns(names)
	if err != nil {
		return nil, err
	}
	s.cols = cols
	s.fields = make([]Field, len(cols))
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
				s.size = st.Size() - pos + int64(s.end-s.off)
			}
		}
	}
	return s, nil
}

func (s *csvSource) Columns() []string { return s.cols }

func (s *csvSource) Next() ([]Field, error) {
	raw, err := s.next(len(s.cols))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	for i, v := range raw {
		if isMissingBytes(v) {
			s.fields[i] = Field{Kind: Missing}
		} else {
			s.fields[i] = Field{Kind: Text, Text: string(v)}
		}
	}
	return s.fields, nil
}

func (s *csvSource) Close() error { return s.c.Close() }

// fill reads more input into the buffer, moving what is left to its start
// and growing it when it is full.
func (s *csvSource) fill() error {
	if s.eof {
		return nil
	}
	if s.off > 0 {
		s.end = copy(s.buf, s.buf[s.off:s.end])
		s.off = 0
	}
	if s.end == len(s.buf) {
		if len(s.buf) >= maxRecordBytes {
			return fmt.Errorf("a record is longer than %d MiB (an unterminated quote?)", maxRecordBytes>>20)
		}
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	n, err := s.r.Read(s.buf[s.end:])
	s.end += n
	if errors.Is(err, io.EOF) {
		s.eof = true
		return nil
	}
	return err
}

// next returns the fields of the next record, valid until the next call;
// ncol is the number of fields a record must have (-1: any, the header).
func (s *csvSource) next(ncol int) ([][]byte, error) {
	for {
		rec, more := nextRecord(s.buf[s.off:s.end], s.eof)
		if more {
			if err := s.fill(); err != nil {
				return nil, err
			}
			continue
		}
		s.off += rec.size
		base := s.line
		s.line += rec.lines
		if rec.text == nil {
			return nil, io.EOF
		}
		if rec.quoted {
			strs, err := s.q.read(rec.text, ncol, base+rec.skipped)
			if err != nil {
				return nil, err
			}
			s.arena = s.arena[:0]
			s.raw = s.raw[:0]
			for _, f := range strs {
				at := len(s.arena)
				s.arena = append(s.arena, f...)
				s.raw = append(s.raw, s.arena[at:len(s.arena):len(s.arena)])
			}
			return s.raw, nil
		}
		if ncol < 0 {
			n := splitFields(rec.text, s.raw[:cap(s.raw)])
			if n > cap(s.raw) {
				s.raw = make([][]byte, n)
				splitFields(rec.text, s.raw)
			}
			s.raw = s.raw[:n]
			return s.raw, nil
		}
		if cap(s.raw) < ncol {
			s.raw = make([][]byte, ncol)
		}
		s.raw = s.raw[:ncol]
		if n := splitFields(rec.text, s.raw); n != ncol {
			return nil, fieldCountError(base + rec.skipped + 1)
		}
		return s.raw, nil
	}
}

// fieldCountError is encoding/csv's error for a record whose number of
// fields differs from the header's.
func fieldCountError(line int) error {
	return &csv.ParseError{StartLine: line, Line: line, Column: 1, Err: csv.ErrFieldCount}
}

// record is the next record of a buffer.
type record struct {
	// text is the record's line without its line end, or the whole
	// extent of a quoted record (what encoding/csv gets); nil at the end
	// of the input.
	text   []byte
	quoted bool
	// size is the bytes consumed, empty lines before the record included;
	// lines the lines consumed, skipped the empty lines.
	size, lines, skipped int
}

// nextRecord finds the first record of data, which starts at a record
// boundary; final says data ends the input. more reports that data ends
// before the record does and more input may complete it.
func nextRecord(data []byte, final bool) (rec record, more bool) {
	pos := 0
	for {
		rest := data[pos:]
		if len(rest) == 0 {
			return record{size: pos, lines: rec.skipped, skipped: rec.skipped}, !final
		}
		nl := bytes.IndexByte(rest, '\n')
		line, size := rest, len(rest)
		if nl >= 0 {
			line, size = rest[:nl], nl+1
		} else if !final {
			return record{}, true
		}
		content := line
		if n := len(content); n > 0 && content[n-1] == '\r' {
			content = content[:n-1]
		}
		if len(content) == 0 {
			// An empty line, as encoding/csv skips it.
			pos += size
			rec.skipped++
			continue
		}
		if bytes.IndexByte(line, '"') < 0 {
			return record{text: content, size: pos + size, lines: rec.skipped + 1, skipped: rec.skipped}, false
		}
		ext := quotedExtent(rest)
		if ext < 0 {
			if !final {
				return record{}, true
			}
			ext = len(rest)
		}
		text := rest[:ext]
		lines := bytes.Count(text, []byte{'\n'})
		if text[len(text)-1] != '\n' {
			lines++
		}
		return record{text: text, quoted: true, size: pos + ext, lines: rec.skipped + lines, skipped: rec.skipped}, false
	}
}

// quotedExtent returns the length of the record at the start of b, its
// line end included: up to the first line break after an even number of
// quotes; -1 when b holds none.
func quotedExtent(b []byte) int {
	even := true
	for i := 0; ; {
		q := bytes.IndexByte(b[i:], '"')
		seg := b[i:]
		if q >= 0 {
			seg = seg[:q]
		}
		if even {
			if nl := bytes.IndexByte(seg, '\n'); nl >= 0 {
				return i + nl + 1
			}
		}
		if q < 0 {
			return -1
		}
		even = !even
		i += q + 1
	}
}

// lastBoundary returns the length of the longest prefix of data, which
// starts at a record boundary, that ends at one (0: none).
func lastBoundary(data []byte) int {
	if bytes.IndexByte(data, '"') < 0 {
		return bytes.LastIndexByte(data, '\n') + 1
	}
	last, even := 0, true
	for i := 0; ; {
		q := bytes.IndexByte(data[i:], '"')
		seg := data[i:]
		if q >= 0 {
			seg = seg[:q]
		}
		if even {
			if nl := bytes.LastIndexByte(seg, '\n'); nl >= 0 {
				last = i + nl + 1
			}
		}
		if q < 0 {
			return last
		}
		even = !even
		i += q + 1
	}
}

// splitFields splits a record without quotes at its commas into out,
// trimming each field's leading white space as encoding/csv's
// TrimLeadingSpace does, and returns the number of fields (those beyond
// len(out) are counted, not stored).
func splitFields(line []byte, out [][]byte) int {
	n := 0
	for {
		if len(line) > 0 && (line[0] <= ' ' || line[0] >= utf8.RuneSelf) {
			line = trimLeadingSpace(line)
		}
		i := bytes.IndexByte(line, ',')
		f := line
		if i >= 0 {
			f = line[:i:i]
		}
		if n < len(out) {
			out[n] = f
		}
		n++
		if i < 0 {
			return n
		}
		line = line[i+1:]
	}
}

// trimLeadingSpace drops the leading Unicode white space of b.
func trimLeadingSpace(b []byte) []byte {
	for len(b) > 0 {
		if c := b[0]; c < utf8.RuneSelf {
			if !unicode.IsSpace(rune(c)) {
				return b
			}
			b = b[1:]
			continue
		}
		r, n := utf8.DecodeRune(b)
		if !unicode.IsSpace(r) {
			return b
		}
		b = b[n:]
	}
	return b
}

// isMissing tells the spellings of a missing value in CSV.
func isMissing(v string) bool {
	switch v {
	case "", "NA", "N/A", "NaN", "nan", "null", "NULL", "None":
		return true
	}
	return false
}

// isMissingBytes is isMissing of a field's bytes.
func isMissingBytes(b []byte) bool {
	return len(b) <= 4 && isMissing(string(b))
}

// quotedReader reads records with quotes through encoding/csv, one
// record's bytes at a time.
type quotedReader struct {
	src   bytes.Reader
	r     *csv.Reader
	lines int // lines r has read
}

// read returns the fields of the record text (the whole of it), which
// begins after line lines of the input; errors carry the input's lines.
// ncol is the number of fields the record must have (-1: any).
func (q *quotedReader) read(text []byte, ncol, line int) ([]string, error) {
	if q.r == nil {
		q.src.Reset(nil)
		q.r = csv.NewReader(&q.src)
		q.r.TrimLeadingSpace = true
		q.r.ReuseRecord = true
		q.lines = 0
	}
	q.r.FieldsPerRecord = ncol
	q.src.Reset(text)
	rec, err := q.r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			pe.StartLine += line - q.lines
			pe.Line += line - q.lines
		}
		q.r = nil
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	q.lines += bytes.Count(text, []byte{'\n'})
	if text[len(text)-1] != '\n' {
		q.lines++
	}
	return rec, nil
}
