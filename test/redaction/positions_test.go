package redaction

import (
	"encoding/json"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"
)

// via is how the values of a position reach Vigil.
type via int

const (
	viaSDKTraces   via = iota // the Go SDK's span exporter, OTLP/gRPC
	viaPdataTraces            // built with pdata, OTLP/HTTP JSON
	viaSDKLogs                // the Go SDK's log exporter, OTLP/HTTP protobuf
	viaPdataLogs              // built with pdata, OTLP/HTTP protobuf
)

func (v via) String() string {
	return [...]string{"SDK spans over OTLP/gRPC", "pdata spans over OTLP/HTTP JSON",
		"SDK logs over OTLP/HTTP protobuf", "pdata logs over OTLP/HTTP protobuf"}[v]
}

// spanAt is a span and what holds it.
type spanAt struct {
	rs ptrace.ResourceSpans
	ss ptrace.ScopeSpans
	sp ptrace.Span
}

// logAt is a log record and its resource.
type logAt struct {
	rl plog.ResourceLogs
	lr plog.LogRecord
}

// position is one place a value can sit in a span or a log record. The put
// function of its transport places text (under key where the position has
// keys) and returns the string that reading the position back must give;
// get reads it back from what an output holds.
type position struct {
	name string
	via  via
	// keyed positions take a secret whose only sign is its key.
	keyed bool
	// key is the key of values that bring none of their own.
	key string
	// root: each value is in the root span of its own trace, so that it is
	// a route of `vigil slow`.
	root      bool
	sdkSpan   func(sp trace.Span, key, text string) string
	pdataSpan func(at spanAt, key, text string) string
	sdkLog    func(r *otellog.Record, key, text string) string
	pdataLog  func(at logAt, key, text string) string
	getSpan   func(at spanAt, key string) string
	getLog    func(at logAt, key string) string
}

// missing is what get returns when the position holds nothing.
const missing = "<missing>"

// jsonField is a JSON object holding text under key, as an application
// logs it or puts a request body in an attribute.
func jsonField(key, text string) string {
	b, _ := json.Marshal(map[string]any{"event": "upstream_error", key: text})
	return string(b)
}

func mapStr(m pcommon.Map, keys ...string) string {
	for i, k := range keys {
		v, ok := m.Get(k)
		switch {
		case !ok:
			return missing
		case i == len(keys)-1:
			return v.AsString()
		case v.Type() != pcommon.ValueTypeMap:
			return missing
		}
		m = v.Map()
	}
	return missing
}

func sliceStr(m pcommon.Map, key string, i int) string {
	v, ok := m.Get(key)
	if !ok || v.Type() != pcommon.ValueTypeSlice || v.Slice().Len() <= i {
		return missing
	}
	return v.Slice().At(i).AsString()
}

func firstEvent(sp ptrace.Span) (ptrace.SpanEvent, bool) {
	if sp.Events().Len() == 0 {
		return ptrace.SpanEvent{}, false
	}
	return sp.Events().At(0), true
}

func bodyMapStr(lr plog.LogRecord, key string) string {
	if lr.Body().Type() != pcommon.ValueTypeMap {
		return missing
	}
	return mapStr(lr.Body().Map(), key)
}

// positions are every place a span or a log record can carry a value.
var positions = []*position{
	{name: "span-attribute", via: viaSDKTraces, keyed: true, key: "app.detail",
		sdkSpan: func(sp trace.Span, k, t string) string { sp.SetAttributes(attribute.String(k, t)); return t },
		getSpan: func(at spanAt, k string) string { return mapStr(at.sp.Attributes(), k) }},
	{name: "span-array", via: viaSDKTraces, keyed: true, key: "app.details",
		sdkSpan: func(sp trace.Span, k, t string) string {
			sp.SetAttributes(attribute.StringSlice(k, []string{"first", t}))
			return t
		},
		getSpan: func(at spanAt, k string) string { return sliceStr(at.sp.Attributes(), k, 1) }},
	{name: "span-nested-map", via: viaSDKTraces, keyed: true, key: "app.detail",
		sdkSpan: func(sp trace.Span, k, t string) string {
			sp.SetAttributes(attribute.Map("app.request", attribute.Map("details", attribute.String(k, t))))
			return t
		},
		getSpan: func(at spanAt, k string) string { return mapStr(at.sp.Attributes(), "app.request", "details", k) }},
	{name: "span-event-attribute", via: viaSDKTraces, keyed: true, key: "exception.message",
		sdkSpan: func(sp trace.Span, k, t string) string {
			sp.AddEvent("exception", trace.WithAttributes(attribute.String(k, t)))
			return t
		},
		getSpan: func(at spanAt, k string) string {
			ev, ok := firstEvent(at.sp)
			if !ok {
				return missing
			}
			return mapStr(ev.Attributes(), k)
		}},
	{name: "span-event-name", via: viaSDKTraces,
		sdkSpan: func(sp trace.Span, _, t string) string { sp.AddEvent(t); return t },
		getSpan: func(at spanAt, _ string) string {
			ev, ok := firstEvent(at.sp)
			if !ok {
				return missing
			}
			return ev.Name()
		}},
	{name: "span-name", via: viaSDKTraces, root: true,
		sdkSpan: func(sp trace.Span, _, t string) string { sp.SetName(t); return t },
		getSpan: func(at spanAt, _ string) string { return at.sp.Name() }},
	{name: "span-status-message", via: viaSDKTraces,
		sdkSpan: func(sp trace.Span, _, t string) string { sp.SetStatus(codes.Error, t); return t },
		getSpan: func(at spanAt, _ string) string { return at.sp.Status().Message() }},
	{name: "url-attribute", via: viaSDKTraces, key: "url.full",
		sdkSpan: func(sp trace.Span, k, t string) string { sp.SetAttributes(attribute.String(k, t)); return t },
		getSpan: func(at spanAt, k string) string { return mapStr(at.sp.Attributes(), k) }},
	{name: "header-attribute", via: viaSDKTraces, key: "http.request.header.x-debug",
		sdkSpan: func(sp trace.Span, k, t string) string {
			sp.SetAttributes(attribute.StringSlice(k, []string{t}))
			return t
		},
		getSpan: func(at spanAt, k string) string { return sliceStr(at.sp.Attributes(), k, 0) }},
	{name: "route-attribute", via: viaSDKTraces, root: true, key: "http.route",
		sdkSpan: func(sp trace.Span, k, t string) string { sp.SetAttributes(attribute.String(k, t)); return t },
		getSpan: func(at spanAt, k string) string { return mapStr(at.sp.Attributes(), k) }},
	{name: "error-type-attribute", via: viaSDKTraces, key: "error.type",
		sdkSpan: func(sp trace.Span, k, t string) string {
			sp.SetAttributes(attribute.String(k, t))
			sp.SetStatus(codes.Error, "")
			return t
		},
		getSpan: func(at spanAt, k string) string { return mapStr(at.sp.Attributes(), k) }},
	{name: "tenant-attribute", via: viaSDKTraces, key: "tenant.id",
		sdkSpan: func(sp trace.Span, k, t string) string { sp.SetAttributes(attribute.String(k, t)); return t },
		getSpan: func(at spanAt, k string) string { return mapStr(at.sp.Attributes(), k) }},
	{name: "json-in-attribute", via: viaSDKTraces, keyed: true, key: "app.detail",
		sdkSpan: func(sp trace.Span, k, t string) string {
			j := jsonField(k, t)
			sp.SetAttributes(attribute.String("http.request.body", j))
			return j
		},
		getSpan: func(at spanAt, _ string) string { return mapStr(at.sp.Attributes(), "http.request.body") }},
	{name: "resource-attribute", via: viaPdataTraces, keyed: true, key: "app.detail",
		pdataSpan: func(at spanAt, k, t string) string { at.rs.Resource().Attributes().PutStr(k, t); return t },
		getSpan:   func(at spanAt, k string) string { return mapStr(at.rs.Resource().Attributes(), k) }},
	{name: "service-name", via: viaPdataTraces, key: "service.name",
		pdataSpan: func(at spanAt, k, t string) string { at.rs.Resource().Attributes().PutStr(k, t); return t },
		getSpan:   func(at spanAt, k string) string { return mapStr(at.rs.Resource().Attributes(), k) }},
	{name: "scope-attribute", via: viaPdataTraces, keyed: true, key: "app.detail",
		pdataSpan: func(at spanAt, k, t string) string { at.ss.Scope().Attributes().PutStr(k, t); return t },
		getSpan:   func(at spanAt, k string) string { return mapStr(at.ss.Scope().Attributes(), k) }},
	{name: "span-link-attribute", via: viaPdataTraces, keyed: true, key: "app.detail",
		pdataSpan: func(at spanAt, k, t string) string {
			l := at.sp.Links().AppendEmpty()
			l.SetTraceID(pcommon.TraceID{0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
			l.SetSpanID(pcommon.SpanID{0xfe, 1, 2, 3, 4, 5, 6, 7})
			l.Attributes().PutStr(k, t)
			return t
		},
		getSpan: func(at spanAt, k string) string {
			if at.sp.Links().Len() == 0 {
				return missing
			}
			return mapStr(at.sp.Links().At(0).Attributes(), k)
		}},
	{name: "span-deep-nested", via: viaPdataTraces, keyed: true, key: "app.detail",
		pdataSpan: func(at spanAt, k, t string) string {
			msgs := at.sp.Attributes().PutEmptyMap("llm.request").PutEmptySlice("messages")
			msgs.AppendEmpty().SetEmptyMap().PutStr("role", "system")
			m := msgs.AppendEmpty().SetEmptyMap()
			m.PutStr("role", "tool")
			m.PutStr(k, t)
			return t
		},
		getSpan: func(at spanAt, k string) string {
			v, ok := at.sp.Attributes().Get("llm.request")
			if !ok || v.Type() != pcommon.ValueTypeMap {
				return missing
			}
			msgs, ok := v.Map().Get("messages")
			if !ok || msgs.Type() != pcommon.ValueTypeSlice || msgs.Slice().Len() < 2 ||
				msgs.Slice().At(1).Type() != pcommon.ValueTypeMap {
				return missing
			}
			return mapStr(msgs.Slice().At(1).Map(), k)
		}},
	{name: "log-body", via: viaSDKLogs,
		sdkLog: func(r *otellog.Record, _, t string) string { r.SetBody(attribute.StringValue(t)); return t },
		getLog: func(at logAt, _ string) string { return at.lr.Body().AsString() }},
	{name: "log-body-json", via: viaSDKLogs, keyed: true, key: "app.detail",
		sdkLog: func(r *otellog.Record, k, t string) string {
			j := jsonField(k, t)
			r.SetBody(attribute.StringValue(j))
			return j
		},
		getLog: func(at logAt, _ string) string { return at.lr.Body().AsString() }},
	{name: "log-body-map", via: viaSDKLogs, keyed: true, key: "app.detail",
		sdkLog: func(r *otellog.Record, k, t string) string {
			r.SetBody(attribute.MapValue(attribute.String("msg", "request failed"), attribute.String(k, t)))
			return t
		},
		getLog: func(at logAt, k string) string { return bodyMapStr(at.lr, k) }},
	{name: "log-attribute", via: viaSDKLogs, keyed: true, key: "app.detail",
		sdkLog: func(r *otellog.Record, k, t string) string { r.AddAttributes(attribute.String(k, t)); return t },
		getLog: func(at logAt, k string) string { return mapStr(at.lr.Attributes(), k) }},
	{name: "log-nested-map", via: viaSDKLogs, keyed: true, key: "app.detail",
		sdkLog: func(r *otellog.Record, k, t string) string {
			r.AddAttributes(attribute.Map("app.request", attribute.Map("details", attribute.String(k, t))))
			return t
		},
		getLog: func(at logAt, k string) string { return mapStr(at.lr.Attributes(), "app.request", "details", k) }},
	{name: "log-json-in-json", via: viaSDKLogs, keyed: true, key: "app.detail",
		sdkLog: func(r *otellog.Record, k, t string) string {
			j := jsonField("payload", jsonField(k, t))
			r.SetBody(attribute.StringValue(j))
			return j
		},
		getLog: func(at logAt, _ string) string { return at.lr.Body().AsString() }},
	{name: "log-resource-attribute", via: viaPdataLogs, keyed: true, key: "app.detail",
		pdataLog: func(at logAt, k, t string) string { at.rl.Resource().Attributes().PutStr(k, t); return t },
		getLog:   func(at logAt, k string) string { return mapStr(at.rl.Resource().Attributes(), k) }},
	{name: "log-service-name", via: viaPdataLogs, key: "service.name",
		pdataLog: func(at logAt, k, t string) string { at.rl.Resource().Attributes().PutStr(k, t); return t },
		getLog:   func(at logAt, k string) string { return mapStr(at.rl.Resource().Attributes(), k) }},
	{name: "log-attribute-array", via: viaPdataLogs, keyed: true, key: "app.details",
		pdataLog: func(at logAt, k, t string) string {
			s := at.lr.Attributes().PutEmptySlice(k)
			s.AppendEmpty().SetStr("first")
			s.AppendEmpty().SetStr(t)
			return t
		},
		getLog: func(at logAt, k string) string { return sliceStr(at.lr.Attributes(), k, 1) }},
}

// describe names the position and how its values were sent.
func (p *position) describe() string {
	if p.getSpan == nil && p.getLog == nil {
		return p.name
	}
	return p.name + ", " + p.via.String()
}

// isTraces says whether the position is in a span.
func (p *position) isTraces() bool { return p.via == viaSDKTraces || p.via == viaPdataTraces }
