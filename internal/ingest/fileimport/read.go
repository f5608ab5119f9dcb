package fileimport

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// Format is the text format of a file.
type Format int

// The formats a File can be in.
const (
	// FormatAuto picks OpenMetrics when the file ends with "# EOF" and
	// Prometheus text otherwise.
	FormatAuto Format = iota
	FormatOpenMetrics
	FormatPrometheus
)

func (f Format) String() string {
	switch f {
	case FormatOpenMetrics:
		return "OpenMetrics"
	case FormatPrometheus:
		return "Prometheus text"
	}
	return "auto"
}

// Options set how files are read and which limits apply.
type Options struct {
	// Format forces a format; FormatAuto detects it.
	Format Format
	// DefaultTime is the time of samples that carry no timestamp (a scrape
	// saved with curl).
	DefaultTime time.Time
	// MinTime and MaxTime bound plausible timestamps; outside them a
	// timestamp is an error (it is usually seconds read as milliseconds or
	// the other way round).
	MinTime, MaxTime time.Time
	// MaxBytes bounds the size of one file after decompression.
	MaxBytes int64
	// MaxLabelNameLength, MaxLabelValueLength and MaxLabels bound each series.
	MaxLabelNameLength  int
	MaxLabelValueLength int
	MaxLabels           int
	// DeriveFromOTLP reads OTLP JSON traces and logs as the series `vigil
	// serve` derives from them (span metrics and the service graph, the
	// log-derived counters); unset, they are ErrOTLPNotMetrics.
	DeriveFromOTLP bool
	// Spans, when set, is shared by the files of one import: the trace
	// files read into it the names of their spans, and the log files read
	// after them count each span's first record under its span's name
	// (vigil_log_span_first_total).
	Spans *SpanIndex
}

// DefaultOptions returns the defaults; samples without a timestamp are taken
// as observed at now.
func DefaultOptions(now time.Time) Options {
	return Options{
		DefaultTime:         now,
		MinTime:             time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		MaxTime:             time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
		MaxBytes:            4 << 30,
		MaxLabelNameLength:  1024,
		MaxLabelValueLength: 16 * 1024,
		MaxLabels:           256,
	}
}

// LineError is an error at one line of one file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// File is one validated input, held in memory until written.
type File struct {
	// Name is the name errors and reports use.
	Name string
	// Format is the detected or forced format.
	Format Format
	// Series and Samples count the distinct series and the samples.
	Series, Samples int
	// Duplicates counts samples repeated with the same timestamp and value;
	// they are written once.
	Duplicates int
	// MinT and MaxT are the oldest and newest timestamps in milliseconds.
	MinT, MaxT int64
	// gaps counts the gaps between a series' consecutive samples, in whole
	// seconds: how often the data was sampled (Interval).
	gaps map[int64]int

	// data is the text, kept only while it is validated (and in tests);
	// validation leaves the samples in series and samples, in file order
	// and without duplicates, so that writing does not parse it again.
	data        []byte
	series      []labels.Labels
	samples     []fileSample
	defaultTime int64
}

// Read reads and validates one file from r. The content is gunzipped when it
// starts with the gzip magic bytes, whatever its name.
func Read(name string, r io.Reader, opts Options) (*File, error) {
	data, err := readAll(name, r, opts.MaxBytes)
	if err != nil {
		return nil, err
	}
	if sig := otlpSignal(data); sig != "" {
		// OTLP JSON (the Collector's file exporter): metrics are translated
		// as Prometheus's OTLP endpoint does; traces and logs are not
		// metrics, but what serve derives from them is (otlp_derive.go).
		switch {
		case sig == otlpMetrics:
			data, _, err = otlpToOpenMetrics(name, data)
		case !opts.DeriveFromOTLP:
			return nil, fmt.Errorf("%s: %w (%s)", name, ErrOTLPNotMetrics, sig)
		case sig == otlpSpans:
			data, err = otlpTracesToOpenMetrics(name, data, opts.Spans)
		default:
			data, err = otlpLogsToOpenMetrics(name, data, opts.Spans)
		}
		if err != nil {
			return nil, err
		}
		opts.Format = FormatOpenMetrics
	}
	f := &File{Name: name, Format: opts.Format, data: data, defaultTime: opts.DefaultTime.UnixMilli()}
	if f.Format == FormatAuto {
		f.Format = detect(data)
	}
	if err := f.validate(opts); err != nil {
		return nil, err
	}
	if !keepData {
		f.data = nil
	}
	return f, nil
}

func readAll(name string, r io.Reader, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = math.MaxInt64 - 1
	}
	br := &peekReader{r: r}
	magic, err := br.peek(2)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	var src io.Reader = br
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read %s: gzip: %w", name, err)
		}
		defer zr.Close()
		src = zr
	}
	data, err := readSized(io.LimitReader(src, maxBytes+1), sizeHint(r, src == io.Reader(br), maxBytes))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) {
			return nil, fmt.Errorf("read %s: gzip stream is truncated or corrupt: %w", name, err)
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("read %s: larger than %d bytes: split it", name, maxBytes)
	}
	// The parsers copy an input that does not end in a newline; make sure it
	// does, so that positions in the parsed entries map back to lines.
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	return data, nil
}

// sizeHint is the size of a plain file being read (0 when unknown: a
// pipe, a gzip stream), capped at maxBytes+1.
func sizeHint(r io.Reader, plain bool, maxBytes int64) int64 {
	st, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !plain || !ok {
		return 0
	}
	fi, err := st.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return min(fi.Size(), maxBytes+1)
}

// readSized reads r to its end into one buffer of size+1 bytes where the
// size is known (room for the newline readAll may add), so that a large
// file is not copied over and over as io.ReadAll's buffer grows.
func readSized(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 || size > math.MaxInt32*4 {
		return io.ReadAll(r)
	}
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // the file grew since its size was read
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// peekReader lets the first bytes be looked at before reading on.
type peekReader struct {
	r   io.Reader
	buf []byte
}

func (p *peekReader) peek(n int) ([]byte, error) {
	for len(p.buf) < n {
		b := make([]byte, n-len(p.buf))
		k, err := p.r.Read(b)
		p.buf = append(p.buf, b[:k]...)
		if err == io.EOF {
			return p.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return p.buf[:n], nil
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	return p.r.Read(b)
}

// detect says OpenMetrics when the last non-empty line is "# EOF".
func detect(data []byte) Format {
	trimmed := bytes.TrimRight(data, " \t\r\n")
	last := trimmed
	if i := bytes.LastIndexByte(trimmed, '\n'); i >= 0 {
		last = trimmed[i+1:]
	}
	if string(bytes.TrimSpace(last)) == "# EOF" {
		return FormatOpenMetrics
	}
	return FormatPrometheus
}

func (f *File) parser() textparse.Parser {
	st := labels.NewSymbolTable()
	if f.Format == FormatOpenMetrics {
		return textparse.NewOpenMetricsParser(f.data, st)
	}
	return textparse.NewPromParser(f.data, st, false)
}

// seriesState is what validation remembers of each series.
type seriesState struct {
	t    int64
	v    float64
	line int
	ref  uint32
}

// fileSample is one validated sample: its series (an index into
// File.series), time and value.
type fileSample struct {
	t   int64
	v   float64
	ref uint32
}

// keepData keeps a file's text after validation (tests look at it).
var keepData = false

// validate parses the whole file once: syntax, labels, timestamps, order.
func (f *File) validate(opts Options) error {
	lines := newLineIndex(f.data)
	// At most a sample a line: one allocation, not a doubling copy.
	f.samples = make([]fileSample, 0, lines.count())
	skipBlank := f.Format == FormatPrometheus
	p := f.parser()
	seen := map[uint64]seriesState{}
	// lastEnd is the line on which the last entry returned by the parser
	// ended: a parse error lies on the first line after it that the parser
	// does not skip.
	lastEnd := 0
	f.MinT, f.MaxT = math.MaxInt64, math.MinInt64
	f.gaps = map[int64]int{}
	var lset labels.Labels
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return f.parseError(lines, lastEnd, err, opts)
		}
		line, end := lines.span(entryBytes(p, entry))
		if line == 0 {
			line = lines.after(lastEnd, skipBlank)
			end = line
		}
		lastEnd = end
		switch entry {
		case textparse.EntrySeries:
		case textparse.EntryHistogram:
			return &LineError{File: f.Name, Line: line, Err: errors.New("native histograms are not supported in text files")}
		default:
			continue
		}
		_, tsp, v := p.Series()
		p.Labels(&lset)
		// A label with an empty value is no label at all, as in a scrape.
		lset = lset.WithoutEmpty()
		if err := checkLabels(lset, opts); err != nil {
			return &LineError{File: f.Name, Line: line, Err: err}
		}
		t := f.defaultTime
		if tsp != nil {
			t = *tsp
			if err := checkTime(t, f.Format, opts); err != nil {
				return &LineError{File: f.Name, Line: line, Err: err}
			}
		} else if err := checkDefaultTime(opts); err != nil {
			return &LineError{File: f.Name, Line: line, Err: err}
		}
		h := lset.Hash()
		prev, ok := seen[h]
		switch {
		case !ok:
			f.Series++
			prev.ref = uint32(len(f.series))
			f.series = append(f.series, lset.Copy())
		case t < prev.t:
			return &LineError{File: f.Name, Line: line, Err: fmt.Errorf("out-of-order sample for %s: timestamp %s is older than %s at line %d", lset, fmtMillis(t), fmtMillis(prev.t), prev.line)}
		case t == prev.t && sameValue(v, prev.v):
			f.Duplicates++
			continue
		case t == prev.t:
			return &LineError{File: f.Name, Line: line, Err: fmt.Errorf("duplicate sample for %s at %s with a different value (%g here, %g at line %d)", lset, fmtMillis(t), v, prev.v, prev.line)}
		}
		if ok {
			f.gaps[(t-prev.t+500)/1000]++
		}
		seen[h] = seriesState{t: t, v: v, line: line, ref: prev.ref}
		f.samples = append(f.samples, fileSample{t: t, v: v, ref: prev.ref})
		f.Samples++
		f.MinT = min(f.MinT, t)
		f.MaxT = max(f.MaxT, t)
	}
	// The Prometheus text parser takes a NUL byte at the start of a line for
	// the end of the input: whatever follows would be silently dropped.
	if skipBlank {
		if line := lines.after(lastEnd, true); line > 0 {
			msg := "unexpected content after the end of the input"
			if bytes.IndexByte(lines.text(line), 0) >= 0 {
				msg = "NUL byte: the file is binary or corrupt and cannot be read past this line"
			}
			return &LineError{File: f.Name, Line: line, Err: errors.New(msg)}
		}
	}
	if f.Samples == 0 {
		f.MinT, f.MaxT = 0, 0
	}
	return nil
}

func sameValue(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// parseError places a parser's error on its line and rewords the parsers'
// messages where they mislead.
func (f *File) parseError(lines *lineIndex, lastEnd int, err error, opts Options) error {
	line := lines.after(lastEnd, f.Format == FormatPrometheus)
	if line == 0 {
		// The input ended in the middle of an entry or without "# EOF".
		line = lines.count()
	}
	msg := err.Error()
	text := lines.text(line)
	switch {
	case bytes.HasSuffix(text, []byte("\r\n")):
		err = fmt.Errorf("%w (the line ends in a carriage return: Windows line endings are not valid, convert the file to LF line endings)", err)
	case bytes.IndexByte(text, '\r') >= 0:
		err = fmt.Errorf("%w (the line holds a carriage return, which is not valid outside label values)", err)
	case f.Format == FormatOpenMetrics && string(text) == "\n":
		err = fmt.Errorf("%w (blank lines are not allowed in OpenMetrics)", err)
	case f.Format == FormatOpenMetrics && strings.Contains(msg, "data does not end with # EOF"):
		err = fmt.Errorf("%w: the file is truncated", err)
	case f.Format == FormatOpenMetrics && strings.Contains(msg, "unexpected data after # EOF"):
		// The parser has read the "# EOF" line; what it objects to follows.
		if string(bytes.TrimRight(text, "\n")) == "# EOF" && line < lines.count() {
			line++
		}
	case f.Format == FormatPrometheus && opts.Format == FormatAuto && strings.Contains(msg, `after timestamp, got "."`):
		err = fmt.Errorf("%w (read as Prometheus text, whose timestamps are integer milliseconds, because the file does not end with \"# EOF\": if it is OpenMetrics, it is truncated)", err)
	}
	return &LineError{File: f.Name, Line: line, Err: err}
}

func checkLabels(lset labels.Labels, opts Options) error {
	if lset.Get(model.MetricNameLabel) == "" {
		return errors.New("series has no metric name")
	}
	if opts.MaxLabels > 0 && lset.Len() > opts.MaxLabels {
		return fmt.Errorf("series has %d labels, more than the limit of %d", lset.Len(), opts.MaxLabels)
	}
	// Names are checked before duplicates: HasDuplicateLabelNames takes an
	// empty first name for a repeat.
	err := lset.Validate(func(l labels.Label) error {
		switch {
		case !model.UTF8Validation.IsValidLabelName(l.Name):
			return fmt.Errorf("invalid label name %q", l.Name)
		case !utf8.ValidString(l.Value):
			return fmt.Errorf("label %s has a value that is not valid UTF-8", l.Name)
		case opts.MaxLabelNameLength > 0 && len(l.Name) > opts.MaxLabelNameLength:
			return fmt.Errorf("label name %q… is %d bytes long, more than the limit of %d", l.Name[:min(32, len(l.Name))], len(l.Name), opts.MaxLabelNameLength)
		case opts.MaxLabelValueLength > 0 && len(l.Value) > opts.MaxLabelValueLength:
			return fmt.Errorf("value of label %s is %d bytes long, more than the limit of %d", l.Name, len(l.Value), opts.MaxLabelValueLength)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if name, dup := lset.HasDuplicateLabelNames(); dup {
		return fmt.Errorf("label %q appears twice", name)
	}
	return nil
}

func checkTime(t int64, format Format, opts Options) error {
	minT, maxT := opts.MinTime.UnixMilli(), opts.MaxTime.UnixMilli()
	if t >= minT && t <= maxT {
		return nil
	}
	// The bounds are divided rather than t multiplied, which could overflow.
	if format == FormatPrometheus && t >= minT/1000 && t <= maxT/1000 {
		return fmt.Errorf("timestamp %d is %s read as milliseconds (Prometheus text): it looks like seconds; OpenMetrics files, whose timestamps are seconds, end with \"# EOF\"", t, fmtMillis(t))
	}
	if format == FormatOpenMetrics && t/1000 >= minT && t/1000 <= maxT {
		return fmt.Errorf("timestamp %s s is %s: OpenMetrics timestamps are seconds and this looks like milliseconds", fmtSeconds(t), fmtMillis(t))
	}
	return fmt.Errorf("timestamp %s is outside the plausible range %s to %s", fmtMillis(t), opts.MinTime.Format(time.DateOnly), opts.MaxTime.Format(time.DateOnly))
}

// checkDefaultTime checks the time given to samples without a timestamp.
func checkDefaultTime(opts Options) error {
	t := opts.DefaultTime
	if t.Before(opts.MinTime) || t.After(opts.MaxTime) {
		return fmt.Errorf("sample has no timestamp and the time given to such samples, %s, is outside the plausible range %s to %s", t.UTC().Format(time.RFC3339), opts.MinTime.Format(time.DateOnly), opts.MaxTime.Format(time.DateOnly))
	}
	return nil
}

func fmtMillis(t int64) string {
	return time.UnixMilli(t).UTC().Format(time.RFC3339Nano)
}

func fmtSeconds(ms int64) string {
	return fmt.Sprintf("%.3f", float64(ms)/1000)
}

// entryBytes returns a slice of the input that lies on the entry's line.
func entryBytes(p textparse.Parser, e textparse.Entry) []byte {
	switch e {
	case textparse.EntrySeries:
		b, _, _ := p.Series()
		return b
	case textparse.EntryHelp:
		b, _ := p.Help()
		return b
	case textparse.EntryType:
		b, _ := p.Type()
		return b
	case textparse.EntryUnit:
		b, _ := p.Unit()
		return b
	case textparse.EntryComment:
		return p.Comment()
	case textparse.EntryHistogram:
		b, _, _, _ := p.Histogram()
		return b
	}
	return nil
}

// lineIndex maps positions in the input to 1-based line numbers.
type lineIndex struct {
	data   []byte
	starts []int // starts[i] is the offset where line i+1 begins
}

func newLineIndex(data []byte) *lineIndex {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return &lineIndex{data: data, starts: starts}
}

// count returns the number of lines.
func (x *lineIndex) count() int { return len(x.starts) }

// span returns the lines on which sub, a subslice of the input, begins and
// ends, or zeros when sub does not point into the input. The parsers return
// subslices of the input they were given, which is x.data itself, so the
// offset of sub is the difference of the capacities.
func (x *lineIndex) span(sub []byte) (first, last int) {
	if sub == nil {
		return 0, 0
	}
	off := cap(x.data) - cap(sub)
	if off < 0 || off+len(sub) > len(x.data) || len(x.data) == 0 {
		return 0, 0
	}
	return x.lineAt(off), x.lineAt(max(off+len(sub)-1, off))
}

// lineAt returns the line holding the byte at off.
func (x *lineIndex) lineAt(off int) int {
	lo, hi := 0, len(x.starts)
	for lo < hi {
		mid := (lo + hi) / 2
		if x.starts[mid] <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// after returns the first line after line, skipping the blank lines the
// Prometheus text parser skips when skipBlank, or 0 when there is none.
func (x *lineIndex) after(line int, skipBlank bool) int {
	n := line + 1
	for skipBlank && n <= len(x.starts) && x.isBlank(n) {
		n++
	}
	if n > len(x.starts) {
		return 0
	}
	return n
}

// text returns the bytes of line, its newline included.
func (x *lineIndex) text(line int) []byte {
	if line < 1 || line > len(x.starts) {
		return nil
	}
	end := len(x.data)
	if line < len(x.starts) {
		end = x.starts[line]
	}
	return x.data[x.starts[line-1]:end]
}

// isBlank says whether line holds only spaces and tabs, which is what the
// Prometheus text parser skips (a carriage return or any other white space
// is an error to it).
func (x *lineIndex) isBlank(line int) bool {
	return len(bytes.Trim(x.text(line), " \t\n")) == 0
}
