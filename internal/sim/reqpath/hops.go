package reqpath

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Healthy behaviour of the path. Latencies are log-normal: a median and the
// standard deviation of the logarithm.
const (
	gatewayRateLimited = 0.002 // 429 from the gateway's rate limiter
	appBug             = 0.010 // an exception in the app's own code
	vectorDBError      = 0.004 // 500 from the vector DB, retried
	toolUse            = 0.4   // requests whose first model answer calls the tool
	debugSample        = 0.02  // requests whose debug lines are kept
	retrievedChunks    = 8
)

// sim simulates one request.
type sim struct {
	g      *Generator
	run    *run
	r      *rand.Rand
	req    *request
	tenant string
	reqID  string
	user   string
	model  *modelService
	// tenantDown is whether tenant_failure hits this request.
	tenantDown bool
	// debug is whether this request's debug lines are kept.
	debug bool
	// promptIdx is the user's prompt.
	promptIdx int
}

// run is the state one pass of Batches keeps across requests.
type run struct {
	// preemptions counts each model server's preemptions, as vLLM's
	// total_num_cumulative_preemption does.
	preemptions map[string]int
}

// simulate draws request idx arriving at t0; server forces the model server
// (-1: drawn by weight).
func (g *Generator) simulate(ru *run, idx uint64, t0 time.Time, server int) *request {
	r := rand.New(rand.NewPCG(g.cfg.Seed, idx))
	s := &sim{g: g, run: ru, r: r, req: &request{idx: idx}}
	binary.BigEndian.PutUint64(s.req.traceID[:8], r.Uint64())
	binary.BigEndian.PutUint64(s.req.traceID[8:], r.Uint64())
	s.tenant = g.cfg.Tenants[pick(r, g.tenantCDF)]
	if m := pick(r, g.modelCDF); server < 0 {
		server = m
	}
	s.model = g.models[server]
	s.reqID = uuid(r)
	s.user = fmt.Sprintf("u-%08x", r.Uint32()%(1<<20))
	s.tenantDown = r.Float64() < g.faults.tenantFailure(s.tenant, t0)
	s.debug = r.Float64() < debugSample
	s.req.spans = make([]spanRec, 0, 12)
	s.gateway(t0)
	return s.req
}

// uuid draws a version 4 UUID.
func uuid(r *rand.Rand) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], r.Uint64())
	binary.BigEndian.PutUint64(b[8:], r.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// logn draws a log-normal duration.
func (s *sim) logn(median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*s.r.NormFloat64()))
}

// lognInt draws a log-normal count of at least 1.
func (s *sim) lognInt(median, sigma float64) int {
	return max(1, int(median*math.Exp(sigma*s.r.NormFloat64())))
}

// statusSeverity is the severity of an access log line for status.
func statusSeverity(status int) plog.SeverityNumber {
	if status >= 500 || status == 0 {
		return plog.SeverityNumberError
	}
	return plog.SeverityNumberInfo
}

// scale multiplies a duration.
func scale(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f)
}

// net is one network hop inside the cluster.
func (s *sim) net() time.Duration { return s.logn(600*time.Microsecond, 0.5) }

// span starts a span and returns its index in s.req.spans.
func (s *sim) span(p pod, scope string, parent int, name string, kind ptrace.SpanKind, start time.Time) int {
	sr := spanRec{res: p.res, scope: scope, name: name, kind: kind, start: start}
	binary.BigEndian.PutUint64(sr.id[:], s.r.Uint64()|1)
	if parent >= 0 {
		sr.parent = s.req.spans[parent].id
	}
	sr.attrs = make([]attr, 2, 16)
	sr.attrs[0] = attr{"tenant.id", s.tenant}
	sr.attrs[1] = attr{"request.id", s.reqID}
	s.req.spans = append(s.req.spans, sr)
	return len(s.req.spans) - 1
}

// end closes span i at t with attributes; errType marks it failed.
func (s *sim) end(i int, t time.Time, errType, errMsg string, attrs ...attr) {
	sr := &s.req.spans[i]
	sr.end = t
	sr.attrs = append(sr.attrs, attrs...)
	if errType != "" {
		sr.attrs = append(sr.attrs, attr{"error.type", errType})
		sr.isErr, sr.errMsg = true, errMsg
	}
}

// log adds a log record of the hop whose span is i.
func (s *sim) log(p pod, scope string, i int, t time.Time, sev plog.SeverityNumber, body string, attrs ...attr) {
	all := make([]attr, 0, 2+len(attrs))
	all = append(all, attr{"request.id", s.reqID}, attr{"tenant.id", s.tenant})
	all = append(all, attrs...)
	s.req.logs = append(s.req.logs, logRec{res: p.res, scope: scope, span: s.req.spans[i].id, t: t, sev: sev, body: body, attrs: all})
}

// httpErrType is error.type for an HTTP status: "" below 400 (500 on a
// server), the code otherwise.
func httpErrType(status int, server bool) string {
	if status >= 500 || (!server && status >= 400) {
		return fmt.Sprint(status)
	}
	return ""
}

// gateway simulates the API gateway from the user's request at t0.
func (s *sim) gateway(t0 time.Time) {
	gw := s.g.gateway
	p, _ := gw.pick(s.r, t0)
	root := s.span(p, scopeEnvoy, -1, "POST /v1/chat", ptrace.SpanKindServer, t0)
	slow := s.g.faults.slowdown(gw.Name, t0)
	t := t0.Add(scale(s.logn(22*time.Millisecond, 0.35), slow))
	if s.debug {
		s.log(p, "envoy.http", root, t, plog.SeverityNumberDebug, gatewayHeaderDump(s))
	}
	status, upstream := 429, ""
	if s.r.Float64() >= gatewayRateLimited {
		app := s.g.app
		c := s.span(p, scopeEnvoy, root, "router "+app.Name+" egress", ptrace.SpanKindClient, t)
		var appPod pod
		var appEnd time.Time
		appEnd, status, appPod = s.app(c, t.Add(s.net()))
		upstream = appPod.ip + ":8080"
		t = appEnd.Add(s.net())
		host := fmt.Sprintf("%s.%s.svc.cluster.local", app.Name, app.Namespace)
		s.end(c, t, httpErrType(status, false), "", attr{"http.request.method", "POST"},
			attr{"server.address", host}, attr{"server.port", 8080}, attr{"url.full", "http://" + host + ":8080/api/chat"},
			attr{"http.response.status_code", status}, attr{"upstream_cluster", app.Name})
	}
	t = t.Add(scale(s.logn(6*time.Millisecond, 0.4), slow))
	client := clientIP(s.user)
	s.end(root, t, httpErrType(status, true), "", attr{"http.request.method", "POST"}, attr{"http.route", "/v1/chat"},
		attr{"url.path", "/v1/chat"}, attr{"url.scheme", "https"}, attr{"server.address", "api.example.com"},
		attr{"client.address", client}, attr{"user_agent.original", userAgent(s.user)}, attr{"user.id", s.user},
		attr{"http.request.header.x-request-id", []string{s.reqID}}, attr{"http.response.status_code", status})
	sev := plog.SeverityNumberInfo
	if status >= 500 {
		sev = plog.SeverityNumberWarn
	}
	s.log(p, "envoy.access_log", root, t, sev, envoyAccessLog(s, t0, t, status, client, upstream),
		attr{"http.response.status_code", status}, attr{"http.request.method", "POST"}, attr{"url.path", "/v1/chat"})
	s.req.end = t
}

// app simulates the AI application from t0 under the gateway's span gw; it
// returns when the app answered, with what status, from which pod.
func (s *sim) app(gw int, t0 time.Time) (time.Time, int, pod) {
	app := s.g.app
	p, isNew := app.pick(s.r, t0)
	sp := s.span(p, scopeFastAPI, gw, "POST /api/chat", ptrace.SpanKindServer, t0)
	lat, fail := app.rolloutFactors(isNew)
	lat *= s.g.faults.slowdown(app.Name, t0)
	wantsTool := s.r.Float64() < toolUse
	s.promptIdx = s.r.IntN(1 << 16)
	t := t0.Add(scale(s.logn(16*time.Millisecond, 0.4), lat))
	s.log(p, "ai_app.chat", sp, t, plog.SeverityNumberInfo, chatRequestLog(s))
	if s.debug {
		s.log(p, "ai_app.retrieval", sp, t, plog.SeverityNumberDebug, "vector store client: url="+s.g.secrets.vectorURL(s.g.vdb))
	}
	status, errType, errMsg := 200, "", ""
	t, vdbStatus := s.retrieve(p, sp, t)
	switch {
	case vdbStatus != 200:
		status, errType, errMsg = 502, "502", "retrieval failed"
		t = t.Add(scale(s.logn(3*time.Millisecond, 0.3), lat))
		s.log(p, "ai_app.retrieval", sp, t, plog.SeverityNumberError,
			fmt.Sprintf("retrieval failed after 2 attempts: upstream %s returned %d; client url=%s", s.g.vdb.Name, vdbStatus, s.g.secrets.vectorURL(s.g.vdb)),
			attr{"exception.type", "qdrant_client.http.exceptions.UnexpectedResponse"})
	case s.r.Float64() < appBug+fail:
		t = t.Add(scale(s.logn(20*time.Millisecond, 0.4), lat))
		exc, msg := appException(s.r, isNew)
		status, errType, errMsg = 500, exc, msg
		s.req.spans[sp].events = append(s.req.spans[sp].events, eventRec{name: "exception", t: t, attrs: []attr{
			{"exception.type", exc}, {"exception.message", msg}, {"exception.stacktrace", pythonTraceback(exc, msg)},
		}})
		s.log(p, "ai_app.chat", sp, t, plog.SeverityNumberError, "unhandled exception in /api/chat: "+exc+": "+msg,
			attr{"exception.type", exc}, attr{"exception.message", msg})
	default:
		t = t.Add(scale(s.logn(30*time.Millisecond, 0.4), lat))
		in := 350 + len(prompt(s.promptIdx))/4 + retrievedChunks*s.lognInt(180, 0.3)
		phase := phaseAnswer
		if wantsTool {
			phase = phaseToolCall
		}
		var out int
		t, status, out = s.chat(p, sp, t, in, phase)
		if status == 200 && wantsTool {
			t = s.tool(p, sp, t.Add(scale(s.logn(2*time.Millisecond, 0.3), lat)))
			in += out + s.lognInt(600, 0.4)
			t, status, _ = s.chat(p, sp, t.Add(scale(s.logn(4*time.Millisecond, 0.3), lat)), in, phaseAnswer)
		}
		if status != 200 {
			errType, errMsg = fmt.Sprint(status), "model call failed"
		}
		t = t.Add(scale(s.logn(14*time.Millisecond, 0.4), lat))
		if status == 200 {
			s.log(p, "ai_app.chat", sp, t, plog.SeverityNumberInfo,
				fmt.Sprintf("chat completed model=%s duration_ms=%d", s.model.model.Model, t.Sub(t0).Milliseconds()))
		}
	}
	s.end(sp, t, errType, errMsg, attr{"http.request.method", "POST"}, attr{"http.route", "/api/chat"},
		attr{"url.path", "/api/chat"}, attr{"url.scheme", "http"}, attr{"http.request.header.x-request-id", []string{s.reqID}},
		attr{"http.response.status_code", status})
	return t, status, p
}

// retrieve simulates the vector search of the app's pod p under span parent
// from t, with one retry; it reports when it ended and the last status.
func (s *sim) retrieve(p pod, parent int, t time.Time) (time.Time, int) {
	vdb := s.g.vdb
	host := fmt.Sprintf("%s.%s.svc.cluster.local", vdb.Name, vdb.Namespace)
	status := 0
	for attempt := range 2 {
		c := s.span(p, scopeQdrantClient, parent, "search documents", ptrace.SpanKindClient, t)
		start := t.Add(s.net())
		vp, _ := vdb.pick(s.r, start)
		srv := s.span(vp, scopeQdrant, c, "POST /collections/{collection_name}/points/search", ptrace.SpanKindServer, start)
		slow := s.g.faults.slowdown(vdb.Name, start)
		dur := scale(s.logn(280*time.Millisecond, 0.45), slow)
		status = 200
		msg := ""
		switch {
		case s.tenantDown:
			status, msg = 503, fmt.Sprintf("Service unavailable: no active replica of shard %d of collection documents (tenant filter %s)", 1+len(s.tenant)%6, s.tenant)
			dur = scale(s.logn(35*time.Millisecond, 0.4), slow)
		case s.r.Float64() < vectorDBError:
			status, msg = 500, "Service internal error: task 7731 panicked"
			dur = scale(s.logn(60*time.Millisecond, 0.5), slow)
		}
		end := start.Add(dur)
		s.end(srv, end, httpErrType(status, true), msg, attr{"http.request.method", "POST"},
			attr{"http.route", "/collections/{collection_name}/points/search"}, attr{"url.path", "/collections/documents/points/search"},
			attr{"http.response.status_code", status}, attr{"db.collection.name", "documents"})
		s.log(vp, "actix_web::middleware::logger", srv, end, statusSeverity(status),
			qdrantAccessLog(p.ip, status, dur), attr{"http.response.status_code", status})
		if msg != "" {
			s.log(vp, "qdrant::actix::helpers", srv, end, plog.SeverityNumberError, msg)
		}
		cEnd := end.Add(s.net())
		attrs := []attr{{"db.system.name", "qdrant"}, {"db.operation.name", "search"}, {"db.collection.name", "documents"},
			{"server.address", host}, {"server.port", 6333}, {"db.response.status_code", fmt.Sprint(status)}}
		if status == 200 {
			attrs = append(attrs, attr{"db.response.returned_rows", retrievedChunks})
		}
		if attempt > 0 {
			attrs = append(attrs, attr{"http.request.resend_count", attempt})
		}
		s.end(c, cEnd, httpErrType(status, false), msg, attrs...)
		t = cEnd
		if status == 200 {
			s.log(p, "ai_app.retrieval", parent, t, plog.SeverityNumberInfo,
				fmt.Sprintf("retrieved %d chunks from documents in %dms", retrievedChunks, cEnd.Sub(start).Milliseconds()))
			return t, status
		}
		if attempt == 0 {
			t = t.Add(s.logn(100*time.Millisecond, 0.3))
		}
	}
	return t, status
}
