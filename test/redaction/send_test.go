package redaction

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

const (
	scopeName = "github.com/vigil-obs/vigil/test/redaction"
	// doneSpan is the root span sent last: once its span metrics are in
	// the store, everything sent before is too.
	doneSpan = "redaction done"
)

// groups returns the groups of the cases that keep accepts, in the order
// they first appear, and each group's cases.
func groups(cases []*tcase, keep func(*tcase) bool) ([]string, map[string][]*tcase) {
	var names []string
	by := map[string][]*tcase{}
	for _, c := range cases {
		if !keep(c) {
			continue
		}
		g := c.group()
		if by[g] == nil {
			names = append(names, g)
		}
		by[g] = append(by[g], c)
	}
	return names, by
}

func caseAttrs(c *tcase) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("case.id", c.id), attribute.String("request_id", c.group())}
}

// sent is what the test sent: the trace ids and how many log records.
type sent struct {
	traceIDs []string
	logs     int
}

// sendSDKTraces sends the cases of SDK span positions with the Go SDK over
// OTLP/gRPC: one trace per group, its root span named after the group and
// a child span per case, except where the position is the root span's
// name (a trace per case).
func sendSDKTraces(t *testing.T, grpcAddr string, cases []*tcase, s *sent) {
	ctx := t.Context()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure())
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "redaction-sdk"))))
	tr := tp.Tracer(scopeName)
	names, by := groups(cases, func(c *tcase) bool { return c.pos.via == viaSDKTraces })
	for _, g := range names {
		if by[g][0].pos.root {
			for _, c := range by[g] {
				_, sp := tr.Start(context.Background(), "placeholder", trace.WithSpanKind(trace.SpanKindServer),
					trace.WithAttributes(caseAttrs(c)...))
				c.placed = c.pos.sdkSpan(sp, c.key, c.text)
				s.traceIDs = append(s.traceIDs, sp.SpanContext().TraceID().String())
				sp.End()
			}
			continue
		}
		rctx, root := tr.Start(context.Background(), "redaction "+g, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("request_id", g)))
		for _, c := range by[g] {
			_, sp := tr.Start(rctx, c.pos.name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(caseAttrs(c)...))
			c.placed = c.pos.sdkSpan(sp, c.key, c.text)
			sp.End()
		}
		root.End()
		s.traceIDs = append(s.traceIDs, root.SpanContext().TraceID().String())
	}
	require.NoError(t, tp.Shutdown(ctx))
}

// pdataSpan appends a span in a resource and scope of its own.
func pdataSpan(td ptrace.Traces, service string, tid pcommon.TraceID, sid, parent pcommon.SpanID, name string, now time.Time) spanAt {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scopeName)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(tid)
	sp.SetSpanID(sid)
	sp.SetParentSpanID(parent)
	sp.SetName(name)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(5 * time.Millisecond)))
	if parent.IsEmpty() {
		sp.SetKind(ptrace.SpanKindServer)
	}
	return spanAt{rs, ss, sp}
}

// sendPdataTraces sends the cases of pdata span positions as OTLP/HTTP
// JSON, one request and one trace per group, then the done span.
func sendPdataTraces(t *testing.T, httpAddr string, cases []*tcase, s *sent) {
	rnd := rand.New(rand.NewPCG(5, 6))
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	newIDs := func() {
		for i := range tid {
			tid[i] = byte(rnd.IntN(256))
		}
		tid[0] = 0xaa // never all zeros
		for i := range sid {
			sid[i] = byte(rnd.IntN(256))
		}
		sid[0] = 0xbb
	}
	now := time.Now()
	names, by := groups(cases, func(c *tcase) bool { return c.pos.via == viaPdataTraces })
	for _, g := range names {
		td := ptrace.NewTraces()
		newIDs()
		root := pdataSpan(td, "redaction-pdata", tid, sid, pcommon.SpanID{}, "redaction "+g, now)
		root.sp.Attributes().PutStr("request_id", g)
		for i, c := range by[g] {
			child := sid
			child[7] ^= byte(i + 1)
			child[6] = byte((i + 1) >> 8)
			at := pdataSpan(td, "redaction-pdata", tid, child, sid, c.pos.name, now.Add(time.Millisecond))
			at.sp.Attributes().PutStr("case.id", c.id)
			at.sp.Attributes().PutStr("request_id", g)
			c.placed = c.pos.pdataSpan(at, c.key, c.text)
		}
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
		require.NoError(t, err)
		post(t, "http://"+httpAddr+"/v1/traces", "application/json", body)
		s.traceIDs = append(s.traceIDs, tid.String())
	}
}

// sendDone sends the done span, last.
func sendDone(t *testing.T, httpAddr string) string {
	td := ptrace.NewTraces()
	tid := pcommon.TraceID{0xdd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	pdataSpan(td, "redaction-pdata", tid, pcommon.SpanID{0xdd, 1, 2, 3, 4, 5, 6, 7}, pcommon.SpanID{}, doneSpan, time.Now())
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
	require.NoError(t, err)
	post(t, "http://"+httpAddr+"/v1/traces", "application/json", body)
	return tid.String()
}

// sendSDKLogs sends the cases of SDK log positions with the Go SDK over
// OTLP/HTTP protobuf, a record per case.
func sendSDKLogs(t *testing.T, httpAddr string, cases []*tcase, s *sent) {
	ctx := t.Context()
	exp, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(httpAddr), otlploghttp.WithInsecure())
	require.NoError(t, err)
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)),
		sdklog.WithResource(resource.NewSchemaless(attribute.String("service.name", "redaction-sdk-logs"))))
	logger := lp.Logger(scopeName)
	now := time.Now()
	for _, c := range cases {
		if c.pos.via != viaSDKLogs {
			continue
		}
		var r otellog.Record
		r.SetTimestamp(now)
		r.SetObservedTimestamp(now)
		r.SetSeverity(otellog.SeverityWarn)
		r.SetSeverityText("WARN")
		r.SetBody(attribute.StringValue("request failed"))
		r.AddAttributes(caseAttrs(c)...)
		c.placed = c.pos.sdkLog(&r, c.key, c.text)
		logger.Emit(ctx, r)
		s.logs++
	}
	require.NoError(t, lp.Shutdown(ctx))
}

// sendPdataLogs sends the cases of pdata log positions as OTLP/HTTP
// protobuf, one request per group, a resource per record.
func sendPdataLogs(t *testing.T, httpAddr string, cases []*tcase, s *sent) {
	now := pcommon.NewTimestampFromTime(time.Now())
	names, by := groups(cases, func(c *tcase) bool { return c.pos.via == viaPdataLogs })
	for _, g := range names {
		ld := plog.NewLogs()
		for _, c := range by[g] {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", "redaction-pdata-logs")
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName(scopeName)
			lr := sl.LogRecords().AppendEmpty()
			lr.SetTimestamp(now)
			lr.SetObservedTimestamp(now)
			lr.SetSeverityNumber(plog.SeverityNumberWarn)
			lr.SetSeverityText("WARN")
			lr.Body().SetStr("request failed")
			lr.Attributes().PutStr("case.id", c.id)
			lr.Attributes().PutStr("request_id", g)
			c.placed = c.pos.pdataLog(logAt{rl, lr}, c.key, c.text)
			s.logs++
		}
		body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
		require.NoError(t, err)
		post(t, "http://"+httpAddr+"/v1/logs", "application/x-protobuf", body)
	}
}

func post(t *testing.T, url, contentType string, body []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST %s: %s", url, b)
}
