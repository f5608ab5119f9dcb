package nezha_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/realdata/nezha"
)

const traceHead = "TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration\n"

// writeTraces writes trace/10_05_trace.csv into a day: n requests, one
// every 100 ms from 10:05, each a gateway span that calls the cart (no
// span kinds, as the data set records them), and a broken row.
func writeTraces(t *testing.T, dir string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trace"), 0o755))
	var b strings.Builder
	b.WriteString(traceHead)
	start := time.Date(2024, 5, 1, 10, 5, 0, 0, time.UTC)
	for i := range n {
		at := start.Add(time.Duration(i) * 100 * time.Millisecond).UnixNano()
		tid := fmt.Sprintf("%032x", i+1)
		fmt.Fprintf(&b, "%s,%016x,root,frontend-579b9bff58-t2dbm,GET /cart,%d,%d,%d\n", tid, 2*i+1, at, at+int64(50*time.Millisecond), 50000)
		fmt.Fprintf(&b, "%s,%016x,%016x,cartservice-579f59597d-wc2lz,GetCart,%d,%d,%d\n", tid, 2*i+2, 2*i+1, at+int64(time.Millisecond), at+int64(40*time.Millisecond), 39000)
	}
	b.WriteString("nothex,1,root,frontend-579b9bff58-t2dbm,GET,1,2,1\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace", "10_05_trace.csv"), []byte(b.String()), 0o644))
}

// The data set's spans become OTLP lines, batched as a Collector's batch
// processor sends them, and `diagnose --input` derives the service graph
// from them through the span tree: the spans have no kind.
func TestTracesAsOTLP(t *testing.T) {
	dir := writeDay(t, 1, 20)
	writeTraces(t, dir, 10)
	d, err := nezha.Load(dir)
	require.NoError(t, err)
	require.True(t, d.HasTraces())
	require.Contains(t, strings.Join(d.Notes, "\n"), "1 rows of the trace files")
	var buf bytes.Buffer
	from := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	spans, lines, err := d.WriteTraces(&buf, from, from.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 20, spans)
	// Ends over 0.94 s, cut every 200 ms of ends: five lines.
	require.Equal(t, 5, lines)
	require.Equal(t, lines, bytes.Count(buf.Bytes(), []byte("\n")))

	opts := fileimport.DefaultOptions(from.Add(time.Hour))
	opts.DeriveFromOTLP = true
	f, err := fileimport.Read("case.otlp.json", &buf, opts)
	require.NoError(t, err)
	last := map[string]float64{}
	require.NoError(t, f.Each(func(lset labels.Labels, _ int64, v float64) error {
		last[lset.String()] = v
		return nil
	}))
	require.Equal(t, 10.0, last[`{__name__="traces_service_graph_request_total", client="frontend", server="cartservice"}`])
	require.Equal(t, 10.0, last[`{__name__="traces_span_metrics_calls_total", service_name="cartservice", span_kind="SPAN_KIND_UNSPECIFIED", span_name="GetCart", status_code="STATUS_CODE_UNSET"}`])

	// A window that holds none of them writes nothing.
	buf.Reset()
	spans, lines, err = d.WriteTraces(&buf, from, from.Add(time.Minute))
	require.NoError(t, err)
	require.Zero(t, spans+lines+buf.Len())
}

// TestCaseTimes: the traces alone are diagnosed where their spans end, at
// the span metrics' 15 s; with the metrics, at the metrics' time (five
// minutes past the injection), since the data set's spans cover only a
// minute or two of it and the engine reads the span series only where
// they are, and at the data's own step, as the metrics alone are (the
// engine reads the minute rows once a row at any step).
func TestCaseTimes(t *testing.T) {
	dir := writeDay(t, 1, 4)
	writeTraces(t, dir, 10)
	inject := time.Date(2024, 5, 1, 10, 4, 54, 0, time.UTC)
	spansEnd := time.Date(2024, 5, 1, 10, 5, 0, 950_000_000, time.UTC)
	got := map[string]nezha.Case{}
	diag := func(_ context.Context, in []nezha.Input, c nezha.Case) ([]string, error) {
		var names []string
		for _, f := range in {
			names = append(names, f.Name)
		}
		got[strings.Join(names, "+")] = c
		return nil, nil
	}
	_, _, err := nezha.Run(t.Context(), dir, diag, nil)
	require.NoError(t, err)
	f := func(inputs string, at time.Time, step time.Duration) {
		t.Helper()
		c, ok := got[inputs]
		require.True(t, ok, "%s among %v", inputs, got)
		require.Equal(t, at, c.At, inputs)
		require.Equal(t, step, c.Step, inputs)
	}
	f("case.om", inject.Add(5*time.Minute), 0)
	f("case.otlp.json", spansEnd, 15*time.Second)
	f("case.om+case.otlp.json", inject.Add(5*time.Minute), 0)
}
