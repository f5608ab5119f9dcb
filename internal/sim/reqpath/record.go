package reqpath

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// attr is one attribute of a span or log record; val is a string, an int,
// an int64, a float64, a bool or a []string.
type attr struct {
	key string
	val any
}

// putAttrs copies attrs into m.
func putAttrs(m pcommon.Map, attrs []attr) {
	m.EnsureCapacity(m.Len() + len(attrs))
	for _, a := range attrs {
		switch v := a.val.(type) {
		case string:
			m.PutStr(a.key, v)
		case int:
			m.PutInt(a.key, int64(v))
		case int64:
			m.PutInt(a.key, v)
		case float64:
			m.PutDouble(a.key, v)
		case bool:
			m.PutBool(a.key, v)
		case []string:
			s := m.PutEmptySlice(a.key)
			s.EnsureCapacity(len(v))
			for _, e := range v {
				s.AppendEmpty().SetStr(e)
			}
		}
	}
}

// resInfo is one pod of one service: an OTLP resource.
type resInfo struct {
	attrs []attr
}

// newResInfo builds the resource attributes of a pod of d at version.
func newResInfo(cfg Config, d Deployment, version string, pod Pod, lang string) *resInfo {
	attrs := []attr{
		{"service.name", d.Name},
		{"service.namespace", d.Namespace},
		{"service.version", version},
		{"service.instance.id", pod.Name},
		{"k8s.namespace.name", d.Namespace},
		{"k8s.pod.name", pod.Name},
		{"k8s.node.name", pod.Node},
		{"k8s.container.name", d.Name},
	}
	if workload, ok := statefulSetOf(d.Name, pod.Name); ok {
		attrs = append(attrs, attr{"k8s.statefulset.name", workload})
	} else {
		attrs = append(attrs, attr{"k8s.deployment.name", d.Name})
		if rs, ok := replicaSetOf(pod.Name); ok {
			attrs = append(attrs, attr{"k8s.replicaset.name", rs})
		}
	}
	attrs = append(attrs,
		attr{"deployment.environment", cfg.Environment},
		attr{"deployment.environment.name", cfg.Environment},
		attr{"telemetry.sdk.name", "opentelemetry"},
		attr{"telemetry.sdk.language", lang},
	)
	return &resInfo{attrs: attrs}
}

// statefulSetOf tells a StatefulSet pod (NAME-0) from a Deployment's.
func statefulSetOf(name, pod string) (string, bool) {
	if len(pod) <= len(name)+1 || pod[:len(name)+1] != name+"-" {
		return "", false
	}
	for _, c := range pod[len(name)+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return name, true
}

// replicaSetOf strips the random suffix of a Deployment's pod name.
func replicaSetOf(pod string) (string, bool) {
	for i := len(pod) - 1; i > 0; i-- {
		if pod[i] == '-' {
			return pod[:i], true
		}
	}
	return "", false
}

// spanRec is one simulated span before it is rendered into pdata.
type spanRec struct {
	res        *resInfo
	scope      string
	id, parent pcommon.SpanID
	name       string
	kind       ptrace.SpanKind
	start, end time.Time
	// errMsg is the status message of a span whose status is Error.
	errMsg string
	isErr  bool
	attrs  []attr
	events []eventRec
}

// eventRec is a span event.
type eventRec struct {
	name  string
	t     time.Time
	attrs []attr
}

// logRec is one simulated log record.
type logRec struct {
	res   *resInfo
	scope string
	span  pcommon.SpanID
	t     time.Time
	sev   plog.SeverityNumber
	body  string
	attrs []attr
}

// request is one simulated user request: a trace and its logs.
type request struct {
	idx     uint64
	traceID pcommon.TraceID
	// end is when the root span ends; it decides the request's batch.
	end   time.Time
	spans []spanRec
	logs  []logRec
}

// scopeKey groups spans and logs by resource and instrumentation scope.
type scopeKey struct {
	res   *resInfo
	scope string
}

// scopeVersion is the version an instrumentation scope reports.
func scopeVersion(scope string) string {
	switch scope {
	case scopeEnvoy:
		return "1.31.2"
	case scopeFastAPI, scopeHTTPX:
		return "0.48b0"
	case scopeOpenAI:
		return "2.1b0"
	case scopeQdrant:
		return "1.12.4"
	case scopeVLLM:
		return "0.11.0"
	}
	return ""
}

// Instrumentation scopes of spans.
const (
	scopeEnvoy   = "envoy"
	scopeFastAPI = "opentelemetry.instrumentation.fastapi"
	scopeHTTPX   = "opentelemetry.instrumentation.httpx"
	scopeOpenAI  = "opentelemetry.instrumentation.openai_v2"
	scopeAgent   = "ai_app.agent"
	scopeQdrant  = "qdrant"
	scopeVLLM    = "vllm.tracing"
)

// restyle records a request's calls as Config.Spans says: it drops the
// CLIENT spans that a SERVER span of another service answers, putting
// their children under their parents (SpansServerOnly), or clears every
// span's kind (SpansNoKind).
func restyle(req *request, style string) {
	switch style {
	case SpansNoKind:
		for i := range req.spans {
			req.spans[i].kind = ptrace.SpanKindUnspecified
		}
	case SpansServerOnly:
		byID := make(map[pcommon.SpanID]int, len(req.spans))
		for i := range req.spans {
			byID[req.spans[i].id] = i
		}
		answered := map[pcommon.SpanID]bool{}
		for i := range req.spans {
			sp := &req.spans[i]
			if p, ok := byID[sp.parent]; ok && sp.kind == ptrace.SpanKindServer && req.spans[p].kind == ptrace.SpanKindClient {
				answered[sp.parent] = true
			}
		}
		if len(answered) == 0 {
			return
		}
		kept := req.spans[:0:0]
		for _, sp := range req.spans {
			if !answered[sp.id] {
				kept = append(kept, sp)
			}
		}
		for i := range kept {
			// A client span's parent is never a dropped client span.
			if answered[kept[i].parent] {
				kept[i].parent = req.spans[byID[kept[i].parent]].parent
			}
		}
		for i := range req.logs {
			if answered[req.logs[i].span] {
				req.logs[i].span = req.spans[byID[req.logs[i].span]].parent
			}
		}
		req.spans = kept
	}
}

// render turns requests into one export request of traces and one of logs.
func render(reqs []*request) (ptrace.Traces, plog.Logs) {
	td := ptrace.NewTraces()
	spans := map[scopeKey]ptrace.SpanSlice{}
	ld := plog.NewLogs()
	logs := map[scopeKey]plog.LogRecordSlice{}
	for _, req := range reqs {
		for i := range req.spans {
			sr := &req.spans[i]
			k := scopeKey{sr.res, sr.scope}
			ss, ok := spans[k]
			if !ok {
				rs := td.ResourceSpans().AppendEmpty()
				putAttrs(rs.Resource().Attributes(), sr.res.attrs)
				sc := rs.ScopeSpans().AppendEmpty()
				sc.Scope().SetName(sr.scope)
				sc.Scope().SetVersion(scopeVersion(sr.scope))
				ss = sc.Spans()
				spans[k] = ss
			}
			renderSpan(ss.AppendEmpty(), req.traceID, sr)
		}
		for i := range req.logs {
			lr := &req.logs[i]
			k := scopeKey{lr.res, lr.scope}
			ls, ok := logs[k]
			if !ok {
				rl := ld.ResourceLogs().AppendEmpty()
				putAttrs(rl.Resource().Attributes(), lr.res.attrs)
				sl := rl.ScopeLogs().AppendEmpty()
				sl.Scope().SetName(lr.scope)
				ls = sl.LogRecords()
				logs[k] = ls
			}
			renderLog(ls.AppendEmpty(), req.traceID, lr)
		}
	}
	return td, ld
}

// renderSpan fills s from sr.
func renderSpan(s ptrace.Span, traceID pcommon.TraceID, sr *spanRec) {
	s.SetTraceID(traceID)
	s.SetSpanID(sr.id)
	s.SetParentSpanID(sr.parent)
	s.SetFlags(1)
	s.SetName(sr.name)
	s.SetKind(sr.kind)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(sr.start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(sr.end))
	putAttrs(s.Attributes(), sr.attrs)
	for _, e := range sr.events {
		ev := s.Events().AppendEmpty()
		ev.SetName(e.name)
		ev.SetTimestamp(pcommon.NewTimestampFromTime(e.t))
		putAttrs(ev.Attributes(), e.attrs)
	}
	if sr.isErr {
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage(sr.errMsg)
	}
}

// renderLog fills l from lr.
func renderLog(l plog.LogRecord, traceID pcommon.TraceID, lr *logRec) {
	ts := pcommon.NewTimestampFromTime(lr.t)
	l.SetTimestamp(ts)
	l.SetObservedTimestamp(ts + pcommon.Timestamp(2*time.Millisecond))
	l.SetSeverityNumber(lr.sev)
	l.SetSeverityText(severityText(lr.sev))
	l.Body().SetStr(lr.body)
	putAttrs(l.Attributes(), lr.attrs)
	l.SetTraceID(traceID)
	l.SetSpanID(lr.span)
	l.SetFlags(plog.DefaultLogRecordFlags.WithIsSampled(true))
}

// severityText is the text a Python or C++ logger writes for n.
func severityText(n plog.SeverityNumber) string {
	switch {
	case n >= plog.SeverityNumberError:
		return "ERROR"
	case n >= plog.SeverityNumberWarn:
		return "WARNING"
	case n >= plog.SeverityNumberInfo:
		return "INFO"
	}
	return "DEBUG"
}
