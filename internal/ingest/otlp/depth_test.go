package otlp

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// nest puts a value nested depth deep into v, alternating lists and maps.
func nest(v pcommon.Value, depth int) {
	for i := range depth {
		if i%2 == 0 {
			v = v.SetEmptySlice().AppendEmpty()
		} else {
			v = v.SetEmptyMap().PutEmpty("k")
		}
	}
	v.SetStr("leaf")
}

// everyPlace returns, for each place of the OTLP protos that holds
// attribute values, a request with a value nested depth deep there, in
// binary protobuf and JSON.
func everyPlace(t *testing.T, depth int) map[string][2][]byte {
	t.Helper()
	out := map[string][2][]byte{}
	type req interface {
		MarshalProto() ([]byte, error)
		MarshalJSON() ([]byte, error)
	}
	add := func(name string, r req) {
		p, err := r.MarshalProto()
		require.NoError(t, err)
		j, err := r.MarshalJSON()
		require.NoError(t, err)
		out[name] = [2][]byte{p, j}
	}
	traces := func(put func(rs ptrace.ResourceSpans)) ptraceotlp.ExportRequest {
		td := ptrace.NewTraces()
		put(td.ResourceSpans().AppendEmpty())
		return ptraceotlp.NewExportRequestFromTraces(td)
	}
	span := func(rs ptrace.ResourceSpans) ptrace.Span {
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(traceID)
		sp.SetSpanID(spanID)
		return sp
	}
	add("resource", traces(func(rs ptrace.ResourceSpans) { nest(rs.Resource().Attributes().PutEmpty("a"), depth) }))
	add("scope", traces(func(rs ptrace.ResourceSpans) {
		nest(rs.ScopeSpans().AppendEmpty().Scope().Attributes().PutEmpty("a"), depth)
	}))
	add("span", traces(func(rs ptrace.ResourceSpans) { nest(span(rs).Attributes().PutEmpty("a"), depth) }))
	add("span event", traces(func(rs ptrace.ResourceSpans) { nest(span(rs).Events().AppendEmpty().Attributes().PutEmpty("a"), depth) }))
	add("span link", traces(func(rs ptrace.ResourceSpans) { nest(span(rs).Links().AppendEmpty().Attributes().PutEmpty("a"), depth) }))

	logs := func(put func(lr plog.LogRecord)) plogotlp.ExportRequest {
		ld := plog.NewLogs()
		put(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		return plogotlp.NewExportRequestFromLogs(ld)
	}
	add("log body", logs(func(lr plog.LogRecord) { nest(lr.Body(), depth) }))
	add("log attribute", logs(func(lr plog.LogRecord) { nest(lr.Attributes().PutEmpty("a"), depth) }))

	metrics := func(put func(m pmetric.Metric)) pmetricotlp.ExportRequest {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("m")
		put(m)
		return pmetricotlp.NewExportRequestFromMetrics(md)
	}
	add("metric metadata", metrics(func(m pmetric.Metric) { m.SetEmptyGauge(); nest(m.Metadata().PutEmpty("a"), depth) }))
	add("gauge", metrics(func(m pmetric.Metric) {
		nest(m.SetEmptyGauge().DataPoints().AppendEmpty().Attributes().PutEmpty("a"), depth)
	}))
	add("sum exemplar", metrics(func(m pmetric.Metric) {
		nest(m.SetEmptySum().DataPoints().AppendEmpty().Exemplars().AppendEmpty().FilteredAttributes().PutEmpty("a"), depth)
	}))
	add("histogram", metrics(func(m pmetric.Metric) {
		nest(m.SetEmptyHistogram().DataPoints().AppendEmpty().Attributes().PutEmpty("a"), depth)
	}))
	add("histogram exemplar", metrics(func(m pmetric.Metric) {
		nest(m.SetEmptyHistogram().DataPoints().AppendEmpty().Exemplars().AppendEmpty().FilteredAttributes().PutEmpty("a"), depth)
	}))
	add("exponential histogram", metrics(func(m pmetric.Metric) {
		nest(m.SetEmptyExponentialHistogram().DataPoints().AppendEmpty().Attributes().PutEmpty("a"), depth)
	}))
	add("exponential histogram exemplar", metrics(func(m pmetric.Metric) {
		nest(m.SetEmptyExponentialHistogram().DataPoints().AppendEmpty().Exemplars().AppendEmpty().FilteredAttributes().PutEmpty("a"), depth)
	}))
	add("summary", metrics(func(m pmetric.Metric) {
		nest(m.SetEmptySummary().DataPoints().AppendEmpty().Attributes().PutEmpty("a"), depth)
	}))
	return out
}

func kindOf(name string) msgKind {
	switch {
	case strings.HasPrefix(name, "log"):
		return kindLogsRequest
	case strings.HasPrefix(name, "resource"), strings.HasPrefix(name, "scope"), strings.HasPrefix(name, "span"):
		return kindTracesRequest
	}
	return kindMetricsRequest
}

// TestDepthEveryPlace: the scanners find a value nested one level too deep
// wherever the OTLP protos hold attribute values, and let one at the limit
// through, in protobuf and in JSON.
func TestDepthEveryPlace(t *testing.T) {
	const limit = 5
	for name, b := range everyPlace(t, limit) {
		require.NoError(t, protoDepth(b[0], kindOf(name), limit), name)
		require.NoError(t, jsonDepth(b[1], limit), name)
	}
	places := everyPlace(t, limit+1)
	require.Len(t, places, 15)
	for name, b := range places {
		require.ErrorIs(t, protoDepth(b[0], kindOf(name), limit), errTooDeep, name)
		require.ErrorIs(t, jsonDepth(b[1], limit), errTooDeep, name)
	}
}

func TestJSONDepth(t *testing.T) {
	f := func(in string, max int, wantErr string) {
		t.Helper()
		err := jsonDepth([]byte(in), max)
		if wantErr == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, wantErr)
	}
	f(`{"value":{"arrayValue":{"values":[{"intValue":"1"}]}}}`, 1, "")
	f(`{"value":{"arrayValue":{"values":[{"arrayValue":{}}]}}}`, 1, "nested more than 1 deep")
	f(`{"value":{"array_value":{"values":[{"kvlist_value":{}}]}}}`, 1, "nested more than 1 deep")
	f(`{"value":{"array\u0056alue":{"values":[{"kvlistValue":{}}]}}}`, 1, "nested more than 1 deep")
	f(`{"arrayValue":null,"x":{"y":{}}}`, 1, "")
	f(`{"s":"{\"arrayValue\":{\"arrayValue\":{}}}"}`, 0, "")
	f(`{"arrayValue":"{"}`, 0, "")
	f(strings.Repeat("[", 200), 16, "JSON nested more than 96 deep")
	f(`{"unterminated`, 1, "")
	f(`]]]}}}`, 1, "")
}

func TestProtoDepthMalformed(t *testing.T) {
	for _, in := range []string{"\x0a", "\x0a\x05\x0a", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "\x0b"} {
		err := protoDepth([]byte(in), kindTracesRequest, 16)
		require.Error(t, err)
		require.False(t, errors.Is(err, errTooDeep))
	}
	// Fields the scan does not know are skipped, whatever their type.
	require.NoError(t, protoDepth([]byte("\x10\x01\x19\x00\x00\x00\x00\x00\x00\x00\x00\x25\x00\x00\x00\x00\x2a\x00"), kindTracesRequest, 0))
}

// TestProtoDepthTightest: values in their shortest encoding (empty lists
// and maps nested in one another, with one-letter keys), where the scan's
// shortcut for short values is tightest, are measured right.
func TestProtoDepthTightest(t *testing.T) {
	for _, maps := range []bool{false, true} {
		for depth := 1; depth <= 12; depth++ {
			td := ptrace.NewTraces()
			v := td.ResourceSpans().AppendEmpty().Resource().Attributes().PutEmpty("a")
			for range depth - 1 {
				if maps {
					v = v.SetEmptyMap().PutEmpty("")
				} else {
					v = v.SetEmptySlice().AppendEmpty()
				}
			}
			if maps {
				v.SetEmptyMap()
			} else {
				v.SetEmptySlice()
			}
			b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
			require.NoError(t, err)
			require.NoError(t, protoDepth(b, kindTracesRequest, depth), "depth %d", depth)
			require.ErrorIs(t, protoDepth(b, kindTracesRequest, depth-1), errTooDeep, "depth %d", depth)
		}
	}
}
