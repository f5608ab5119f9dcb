package otlp

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc/codes"
)

// format is the encoding of a request body.
type format uint8

const (
	formatProto format = iota
	formatJSON
	// formatText is for answers to requests of no OTLP format.
	formatText
)

// request is what the three export request types of pdata share.
type request interface {
	UnmarshalProto([]byte) error
	UnmarshalJSON([]byte) error
}

// response is what the three export response types of pdata share.
type response interface {
	MarshalProto() ([]byte, error)
	MarshalJSON() ([]byte, error)
}

// signal is one of traces, logs and metrics, as both transports serve it.
type signal struct {
	// name is the value of the signal label of the metrics.
	name string
	// path is the OTLP/HTTP path.
	path string
	// export decodes, validates and consumes one request.
	export func(ctx context.Context, body []byte, f format) outcome
	// response builds the answer to an accepted request.
	response func(o outcome) response
	// received counts accepted items by transport.
	received func(transport string, n int)
}

// decode checks the nesting of body and decodes it into req.
func (r *Receiver) decode(req request, kind msgKind, body []byte, f format) (outcome, bool) {
	var err error
	if f == formatJSON {
		err = jsonDepth(body, r.opts.MaxAttributeDepth)
	} else {
		err = protoDepth(body, kind, r.opts.MaxAttributeDepth)
	}
	if err == nil {
		if f == formatJSON {
			err = req.UnmarshalJSON(body)
		} else {
			err = req.UnmarshalProto(body)
		}
	}
	switch {
	case err == nil:
		return outcome{}, true
	case errors.Is(err, errTooDeep):
		return badRequest(reasonTooDeep, err.Error()), false
	case f == formatJSON:
		return badRequest(reasonBadJSON, "decode OTLP JSON: "+err.Error()), false
	}
	return badRequest(reasonBadProtobuf, "decode OTLP protobuf: "+err.Error()), false
}

func (r *Receiver) exportTraces(ctx context.Context, body []byte, f format) outcome {
	req := ptraceotlp.NewExportRequest()
	if o, ok := r.decode(req, kindTracesRequest, body, f); !ok {
		return o
	}
	td := req.Traces()
	total := td.SpanCount()
	invalid := dropInvalidSpans(td)
	if invalid > 0 && invalid == total {
		return badRequest(reasonInvalidID, fmt.Sprintf("all %d spans have an empty trace id or span id", total))
	}
	o := outcome{code: codes.OK}
	if n := total - invalid; n > 0 {
		o = consumed(ctx, n, r.opts.Traces.ConsumeTraces(ctx, td))
	}
	if invalid > 0 && o.code == codes.OK {
		o.partial(invalid, reasonInvalidID, fmt.Sprintf("%d spans with an empty trace id or span id", invalid))
	}
	return o
}

// dropInvalidSpans removes the spans whose trace id or span id is empty
// (all zeros, which the OTLP protos call invalid) and returns how many.
func dropInvalidSpans(td ptrace.Traces) int {
	n := 0
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			sss.At(j).Spans().RemoveIf(func(s ptrace.Span) bool {
				bad := s.TraceID().IsEmpty() || s.SpanID().IsEmpty()
				if bad {
					n++
				}
				return bad
			})
		}
	}
	return n
}

func (r *Receiver) exportLogs(ctx context.Context, body []byte, f format) outcome {
	req := plogotlp.NewExportRequest()
	if o, ok := r.decode(req, kindLogsRequest, body, f); !ok {
		return o
	}
	ld := req.Logs()
	n := ld.LogRecordCount()
	if n == 0 {
		return outcome{code: codes.OK}
	}
	return consumed(ctx, n, r.opts.Logs.ConsumeLogs(ctx, ld))
}

func (r *Receiver) exportMetrics(ctx context.Context, body []byte, f format) outcome {
	req := pmetricotlp.NewExportRequest()
	if o, ok := r.decode(req, kindMetricsRequest, body, f); !ok {
		return o
	}
	md := req.Metrics()
	n := md.DataPointCount()
	if n == 0 {
		return outcome{code: codes.OK}
	}
	return consumed(ctx, n, r.opts.Metrics.ConsumeMetrics(ctx, md))
}

func tracesResponse(o outcome) response {
	resp := ptraceotlp.NewExportResponse()
	if o.rejected > 0 || o.partialMsg != "" {
		resp.PartialSuccess().SetRejectedSpans(int64(o.rejected))
		resp.PartialSuccess().SetErrorMessage(o.partialMsg)
	}
	return resp
}

func logsResponse(o outcome) response {
	resp := plogotlp.NewExportResponse()
	if o.rejected > 0 || o.partialMsg != "" {
		resp.PartialSuccess().SetRejectedLogRecords(int64(o.rejected))
		resp.PartialSuccess().SetErrorMessage(o.partialMsg)
	}
	return resp
}

func metricsResponse(o outcome) response {
	resp := pmetricotlp.NewExportResponse()
	if o.rejected > 0 || o.partialMsg != "" {
		resp.PartialSuccess().SetRejectedDataPoints(int64(o.rejected))
		resp.PartialSuccess().SetErrorMessage(o.partialMsg)
	}
	return resp
}

// signals returns the signals whose consumers are set.
func (r *Receiver) signals() []*signal {
	var out []*signal
	if r.opts.Traces != nil {
		out = append(out, &signal{name: "traces", path: "/v1/traces",
			export: r.exportTraces, response: tracesResponse,
			received: func(t string, n int) { r.m.spans.WithLabelValues(t).Add(float64(n)) }})
	}
	if r.opts.Metrics != nil {
		out = append(out, &signal{name: "metrics", path: "/v1/metrics",
			export: r.exportMetrics, response: metricsResponse,
			received: func(t string, n int) { r.m.points.WithLabelValues(t).Add(float64(n)) }})
	}
	if r.opts.Logs != nil {
		out = append(out, &signal{name: "logs", path: "/v1/logs",
			export: r.exportLogs, response: logsResponse,
			received: func(t string, n int) { r.m.logs.WithLabelValues(t).Add(float64(n)) }})
	}
	return out
}
