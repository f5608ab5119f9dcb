package nezha

import (
	"bufio"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Span is one span of the day's traces (trace/*.csv): the ids, the pod
// that recorded it, its operation and its times. The data set records no
// span kind and no status.
type Span struct {
	Trace          pcommon.TraceID
	ID, Parent     pcommon.SpanID
	Pod, Operation string
	Start, End     time.Time
}

// traceFile is one trace file's spans, in file order (a minute of them).
type traceFile struct {
	name  string
	spans []Span
}

// traceHeader is the columns trace/*.csv must have.
var traceHeader = []string{"TraceID", "SpanID", "ParentID", "PodName", "OperationName", "StartTimeUnixNano", "EndTimeUnixNano"}

// readTraces reads trace/*.csv (none: no traces). A row whose ids or times
// do not parse is skipped and counted in a note.
func (d *Day) readTraces(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*_trace.csv"))
	if err != nil {
		return err
	}
	slices.Sort(files)
	bad := 0
	for _, path := range files {
		tf, n, err := readTraceFile(path)
		if err != nil {
			return err
		}
		bad += n
		if len(tf.spans) > 0 {
			d.traces = append(d.traces, tf)
		}
	}
	if bad > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d rows of the trace files have ids or times that do not parse: skipped", bad))
	}
	return nil
}

// readTraceFile reads one trace file and returns its spans and how many
// rows it skipped.
func readTraceFile(path string) (traceFile, int, error) {
	tf := traceFile{name: filepath.Base(path)}
	f, err := os.Open(path)
	if err != nil {
		return tf, 0, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.ReuseRecord = true
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return tf, 0, fmt.Errorf("%s: header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	idx := make([]int, len(traceHeader))
	for i, h := range traceHeader {
		j, ok := col[h]
		if !ok {
			return tf, 0, fmt.Errorf("%s: no %s column", path, h)
		}
		idx[i] = j
	}
	intern := map[string]string{}
	str := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		s = string([]byte(s)) // not a view of the reused record
		intern[s] = s
		return s
	}
	bad := 0
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				bad++
				continue
			}
			return tf, 0, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(rec) < len(head) {
			bad++
			continue
		}
		sp, ok := parseSpan(rec, idx, str)
		if !ok {
			bad++
			continue
		}
		tf.spans = append(tf.spans, sp)
	}
	return tf, bad, nil
}

// parseSpan parses one row; ok is false when an id or a time does not.
func parseSpan(rec []string, idx []int, str func(string) string) (Span, bool) {
	var sp Span
	if !decodeID(sp.Trace[:], rec[idx[0]]) || !decodeID(sp.ID[:], rec[idx[1]]) {
		return sp, false
	}
	if p := rec[idx[2]]; p != "root" && p != "" && !decodeID(sp.Parent[:], p) {
		return sp, false
	}
	start, err1 := strconv.ParseInt(rec[idx[5]], 10, 64)
	end, err2 := strconv.ParseInt(rec[idx[6]], 10, 64)
	if err1 != nil || err2 != nil || start <= 0 || end < start || rec[idx[3]] == "" {
		return sp, false
	}
	sp.Pod, sp.Operation = str(rec[idx[3]]), str(rec[idx[4]])
	sp.Start, sp.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
	return sp, true
}

// decodeID decodes a hex id of exactly len(dst) bytes.
func decodeID(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// HasTraces tells whether the day has traces.
func (d *Day) HasTraces() bool { return len(d.traces) > 0 }

// Batch is how WriteTracesBatched cuts its lines: after Spans spans, or
// when a span ends Timeout or more after the line's first.
type Batch struct {
	Spans   int
	Timeout time.Duration
}

// CollectorBatch is the OpenTelemetry Collector's batch processor's
// defaults (send_batch_size, timeout).
var CollectorBatch = Batch{Spans: 8192, Timeout: 200 * time.Millisecond}

// WriteTraces writes the spans that end between from and to as OTLP JSON,
// one export request a line, as an OpenTelemetry Collector's file exporter
// behind its batch processor writes them: in order of their end, a line
// for every 200 ms of ends or 8,192 spans; a resource per pod, with
// service.name its service (ServiceOf) and k8s.pod.name the pod; each span
// as recorded, without kind or status. It returns the spans and lines
// written.
func (d *Day) WriteTraces(w io.Writer, from, to time.Time) (spans, lines int, err error) {
	return d.WriteTracesBatched(w, from, to, CollectorBatch)
}

// CountSpans is how many spans end between from and to.
func (d *Day) CountSpans(from, to time.Time) int {
	n := 0
	for _, tf := range d.traces {
		for i := range tf.spans {
			if e := tf.spans[i].End; !e.Before(from) && !e.After(to) {
				n++
			}
		}
	}
	return n
}

// WriteTracesBatched is WriteTraces with lines cut by b (a Spans or
// Timeout of 0 is no bound).
func (d *Day) WriteTracesBatched(w io.Writer, from, to time.Time, b Batch) (spans, lines int, err error) {
	var sel []*Span
	for _, tf := range d.traces {
		for i := range tf.spans {
			if sp := &tf.spans[i]; !sp.End.Before(from) && !sp.End.After(to) {
				sel = append(sel, sp)
			}
		}
	}
	slices.SortStableFunc(sel, func(a, b *Span) int { return a.End.Compare(b.End) })
	var m ptrace.JSONMarshaler
	return writeBatched(w, sel, func(sp *Span) time.Time { return sp.End }, b, func(batch []*Span) ([]byte, error) {
		td := ptrace.NewTraces()
		byPod := map[string]ptrace.SpanSlice{}
		for _, sp := range batch {
			ss, ok := byPod[sp.Pod]
			if !ok {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", ServiceOf(sp.Pod))
				rs.Resource().Attributes().PutStr("k8s.pod.name", sp.Pod)
				ss = rs.ScopeSpans().AppendEmpty().Spans()
				byPod[sp.Pod] = ss
			}
			o := ss.AppendEmpty()
			o.SetTraceID(sp.Trace)
			o.SetSpanID(sp.ID)
			o.SetParentSpanID(sp.Parent)
			o.SetName(sp.Operation)
			o.SetStartTimestamp(pcommon.NewTimestampFromTime(sp.Start))
			o.SetEndTimestamp(pcommon.NewTimestampFromTime(sp.End))
		}
		return m.MarshalTraces(td)
	})
}

// writeBatched writes items, in order, as one export request a line: a
// line for every b.Timeout of their times (at) or b.Spans items (a bound
// of 0 is none), each encoded by encode. It returns the items and lines
// written.
func writeBatched[T any](w io.Writer, items []T, at func(T) time.Time, b Batch, encode func([]T) ([]byte, error)) (written, lines int, err error) {
	bw := bufio.NewWriter(w)
	for len(items) > 0 {
		n := 1
		for n < len(items) && (b.Spans <= 0 || n < b.Spans) && (b.Timeout <= 0 || at(items[n]).Sub(at(items[0])) < b.Timeout) {
			n++
		}
		js, err := encode(items[:n])
		if err != nil {
			return written, lines, err
		}
		_, _ = bw.Write(js) // a bufio.Writer keeps its first error for Flush
		_ = bw.WriteByte('\n')
		written += n
		lines++
		items = items[n:]
	}
	return written, lines, bw.Flush()
}

// traceStep is the step a case with traces is diagnosed at: the span
// metrics' flush interval (spanmetrics.DefaultConfig).
const traceStep = 15 * time.Second

// lastSpanEnd is the latest end of the spans that end between from and to
// (zero when none does).
func (d *Day) lastSpanEnd(from, to time.Time) time.Time {
	var last time.Time
	for _, tf := range d.traces {
		for i := range tf.spans {
			if e := tf.spans[i].End; !e.Before(from) && !e.After(to) && e.After(last) {
				last = e
			}
		}
	}
	return last
}
