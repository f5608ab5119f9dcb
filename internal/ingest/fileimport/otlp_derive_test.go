package fileimport

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// tracesLine is one export request: gateway calls vector-db, which takes
// dbMs of its caller's 100 ms.
func tracesLine(t testing.TB, at time.Time, seq byte, dbMs int) []byte {
	td := ptrace.NewTraces()
	tid := pcommon.TraceID{1, seq}
	span := func(service, name string, kind ptrace.SpanKind, id, parent byte, start, end time.Duration) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetName(name)
		s.SetKind(kind)
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{seq, id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{seq, parent})
		}
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at.Add(start)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(end)))
	}
	span("gateway", "POST /v1/chat", ptrace.SpanKindServer, 1, 0, 0, 100*time.Millisecond)
	span("gateway", "search", ptrace.SpanKindClient, 2, 1, 10*time.Millisecond, time.Duration(10+dbMs)*time.Millisecond)
	span("vector-db", "search", ptrace.SpanKindServer, 3, 2, 11*time.Millisecond, time.Duration(9+dbMs)*time.Millisecond)
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

// logsLine is one export request of a node's kernel log.
func logsLine(t testing.TB, at time.Time, bodies ...string) []byte {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("k8s.node.name", "gpu-node-03")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for _, b := range bodies {
		lr := lrs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
		lr.Body().SetStr(b)
	}
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	return b
}

func deriveOptions(at time.Time) Options {
	o := DefaultOptions(at)
	o.DeriveFromOTLP = true
	return o
}

// TestReadOTLPTracesDerived: OTLP JSON traces read as the span metrics
// and service graph `vigil serve` writes from them, each line's at its
// newest span end.
func TestReadOTLPTracesDerived(t *testing.T) {
	keepText(t)
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	var in bytes.Buffer
	for i := range 3 {
		in.Write(tracesLine(t, at.Add(time.Duration(i)*time.Minute), byte(i+1), 40))
		in.WriteByte('\n')
	}
	f, err := Read("t.otlp.json", &in, deriveOptions(at))
	require.NoError(t, err)
	require.Equal(t, FormatOpenMetrics, f.Format)
	text := string(f.data)
	require.True(t, strings.Contains(text, `traces_span_metrics_calls_total{`), `traces_span_metrics_calls_total{`)
	require.True(t, strings.Contains(text, `service_name="vector-db"`), `service_name="vector-db"`)
	require.True(t, strings.Contains(text, `traces_service_graph_request_total{client="gateway"`), `traces_service_graph_request_total{client="gateway"`)
	require.True(t, strings.Contains(text, `server="vector-db"`), `server="vector-db"`)
	// Each line is flushed when the next one's spans end in a later 15 s,
	// at the newest span end read before; the end of the file writes the
	// last at its newest span end, 02:02:00.100, with the request still
	// waiting for its other half (the last gateway span's, from "user")
	// settled.
	require.Contains(t, text, `traces_service_graph_request_total{client="gateway",server="vector-db"} 1 1794448800.100`)
	require.Contains(t, text, `traces_service_graph_request_total{client="gateway",server="vector-db"} 2 1794448860.100`)
	require.Contains(t, text, `traces_service_graph_request_total{client="user",connection_type="virtual_node",server="gateway"} 3 1794448920.100`)
	require.Equal(t, at.Add(2*time.Minute+100*time.Millisecond).UnixMilli(), f.MaxT)

	// Without the option, still the typed error the other commands skip.
	_, err = Read("t.otlp.json", bytes.NewReader(tracesLine(t, at, 1, 40)), DefaultOptions(at))
	require.ErrorIs(t, err, ErrOTLPNotMetrics)
}

// TestReadOTLPTracesLines: the same spans in one line or in one line per
// request are written at the same times, every 15 s of the spans' own
// time, however the file cuts them; the samples differ only where the
// requests still waiting for their other half expire (the consumer's clock
// moves per batch, so the one line's expire a flush later).
func TestReadOTLPTracesLines(t *testing.T) {
	keepText(t)
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	var many bytes.Buffer
	all := ptrace.NewTraces()
	var um ptrace.JSONUnmarshaler
	for i := range 40 {
		line := tracesLine(t, at.Add(time.Duration(3*i)*time.Second), byte(i+1), 40)
		many.Write(line)
		many.WriteByte('\n')
		td, err := um.UnmarshalTraces(line)
		require.NoError(t, err)
		td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
	}
	one, err := (&ptrace.JSONMarshaler{}).MarshalTraces(all)
	require.NoError(t, err)
	times := func(data []byte) (map[int64]int, *File) {
		f, err := Read("t.otlp.json", bytes.NewReader(data), deriveOptions(at))
		require.NoError(t, err)
		out := map[int64]int{}
		require.NoError(t, f.Each(func(_ labels.Labels, ts int64, _ float64) error {
			out[ts]++
			return nil
		}))
		return out, f
	}
	gotMany, fMany := times(many.Bytes())
	gotOne, fOne := times(one)
	require.Equal(t, slices.Sorted(maps.Keys(gotMany)), slices.Sorted(maps.Keys(gotOne)), "the same flushes")
	t.Logf("samples: %d in 40 lines, %d in one", fMany.Samples, fOne.Samples)
	require.InEpsilon(t, fMany.Samples, fOne.Samples, 0.05)
	require.GreaterOrEqual(t, len(gotOne), 8, "two minutes of spans: a flush every 15 s of them, and the settling at the end")
}

// TestReadOTLPLogsDerived: OTLP JSON logs read as the log-derived counters;
// a line that matches nothing adds nothing.
func TestReadOTLPLogsDerived(t *testing.T) {
	keepText(t)
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	in := bytes.Join([][]byte{
		logsLine(t, at, "systemd[1]: Started Session 4 of user root."),
		logsLine(t, at.Add(time.Minute), "NVRM: Xid (PCI:0000:3b:00): 74, pid=48211, name=pt_main_thread, NVLink: fatal error detected on link 4"),
		logsLine(t, at.Add(2*time.Minute), "NVRM: Xid (PCI:0000:3b:00): 74, pid=48211, name=pt_main_thread, NVLink: fatal error detected on link 5"),
	}, []byte("\n"))
	f, err := Read("l.otlp.json", bytes.NewReader(in), deriveOptions(at))
	require.NoError(t, err)
	text := string(f.data)
	require.Contains(t, text, `vigil_log_xid_total{node="gpu-node-03",pci="0000:3b:00",xid="74"} 2 1794448920`)
	require.Contains(t, text, `vigil_log_xid_total{node="gpu-node-03",pci="0000:3b:00",xid="74"} 1 1794448860`)
	require.Contains(t, text, `vigil_log_events_total{event="xid",node="gpu-node-03"} 2`)
	require.NotContains(t, text, "systemd")
}

// TestReadOTLPDerivedBad: a broken line is named by file and line; a file
// with no timed span or record holds no samples.
func TestReadOTLPDerivedBad(t *testing.T) {
	keepText(t)
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	in := append(tracesLine(t, at, 1, 40), []byte("\n{\"resourceSpans\": [{\"bad\n")...)
	_, err := Read("t.json", bytes.NewReader(in), deriveOptions(at))
	require.ErrorContains(t, err, "t.json:2: OTLP traces JSON")
	in = append(logsLine(t, at, "x"), []byte("\n{\"resourceLogs\": 7}\n")...)
	_, err = Read("l.json", bytes.NewReader(in), deriveOptions(at))
	require.ErrorContains(t, err, "l.json:2: OTLP logs JSON")

	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.")
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	f, err := Read("l.json", bytes.NewReader(b), deriveOptions(at))
	require.NoError(t, err)
	require.Zero(t, f.Samples)
	require.True(t, strings.HasSuffix(string(f.data), "# EOF\n"))
}

// FuzzReadOTLPDerived: OTLP JSON traces and logs read with DeriveFromOTLP
// never panic; an error names the file (and, past the first bytes, a
// line); what is accepted is OpenMetrics whose timestamps lie within the
// options' bounds.
//
//	go test ./internal/ingest/fileimport -run '^$' -fuzz FuzzReadOTLPDerived -fuzztime 60s
func FuzzReadOTLPDerived(f *testing.F) {
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	f.Add(tracesLine(f, at, 1, 40))
	f.Add(logsLine(f, at, "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"01","endTimeUnixNano":"1"}]}]}]}`))
	f.Add([]byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"99999999999999999999","body":{"stringValue":"Out of memory: Killed process 1 (a)"}}]}]}]}`))
	f.Add([]byte("{\"resourceLogs\": 7}\n{\"resourceSpans\": []}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := deriveOptions(at)
		file, err := Read("x.json", bytes.NewReader(data), opts)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "x.json"), "%v", err)
			return
		}
		if file.Samples > 0 {
			require.GreaterOrEqual(t, file.MinT, opts.MinTime.UnixMilli())
			require.LessOrEqual(t, file.MaxT, opts.MaxTime.UnixMilli())
		}
	})
}

// TestReadOTLPSpanIndex: with a span index shared by an import, a trace
// file read before a log file names the spans the records were written
// in, so each span's first record counts under its name; without one,
// none does.
func TestReadOTLPSpanIndex(t *testing.T) {
	keepText(t)
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	traces := tracesLine(t, at, 7, 40)
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "vector-db")
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(at.Add(20 * time.Millisecond)))
	lr.Body().SetStr("02:00:00.020 INFO  v.d.SearchHandler#88 searching 12 shards")
	lr.SetTraceID(pcommon.TraceID{1, 7})
	lr.SetSpanID(pcommon.SpanID{7, 3}) // vector-db's "search" span
	logs, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	for _, shared := range []bool{true, false} {
		opts := deriveOptions(at)
		if shared {
			opts.Spans = NewSpanIndex()
		}
		_, err := Read("t.otlp.json", bytes.NewReader(traces), opts)
		require.NoError(t, err)
		f, err := Read("l.otlp.json", bytes.NewReader(logs), opts)
		require.NoError(t, err)
		text := string(f.data)
		if shared {
			require.Contains(t, text, `vigil_log_span_first_total{service="vector-db",severity="info",span_name="search",template="v.d.SearchHandler#88 searching <*> shards"} 1`)
		} else {
			require.NotContains(t, text, "vigil_log_span_first_total")
		}
	}
}
