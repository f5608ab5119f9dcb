package reqpath

import (
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Model calls and the tool.
const (
	// modelTimeout is the app's client timeout for one model call.
	modelTimeout = 60 * time.Second
	// toolTimeout is the app's client timeout for one tool call.
	toolTimeout = 10 * time.Second
	maxTokens   = 2048
	// healthyLoad is how busy a model server is without a fault.
	healthyLoad = 0.6
	// slotTime scales the queueing delay of a busy server.
	slotTime     = 20 * time.Millisecond
	modelError   = 0.004 // 500 from vLLM, retried once
	toolError    = 0.01  // 5xx from the external tool, retried once
	providerName = "vllm"
)

// phase is what a model call is for.
type phase int

const (
	// phaseToolCall is a first answer that asks for the tool.
	phaseToolCall phase = iota
	// phaseAnswer is the answer to the user.
	phaseAnswer
)

// inference is the server-side timing of one model call.
type inference struct {
	queue, prefill, ttft, decode time.Duration
	preemptions                  int
	fail                         bool
}

// infer draws the timing of a call with in prompt tokens and out output
// tokens arriving at model server m at t, on the new version or not.
func (s *sim) infer(m *modelService, isNew bool, t time.Time, in, out int) inference {
	f := s.g.faults
	rho := healthyLoad * f.load(m.Name, t)
	var qmean time.Duration
	if rho < 0.95 {
		qmean = scale(slotTime, rho/(1-rho))
	} else {
		// Offered more than it can serve, the queue grows until clients
		// give up and the line stabilises.
		qmean = scale(slotTime, 19) + min(25*time.Second, scale(f.saturatedSince(m.Name, t), max(0, 1-1/rho)))
	}
	_, fail := m.rolloutFactors(isNew)
	prefillLat, decodeLat := m.rolloutSlowdown(isNew)
	var inf inference
	inf.queue = scale(qmean, s.r.ExpFloat64())
	tpot := scale(m.model.TimePerOutputToken, decodeLat*(1+0.6*max(0, rho-healthyLoad)))
	tpot = s.logn(tpot, 0.12)
	inf.prefill = s.logn(scale(m.model.TimePerOutputToken, prefillLat*float64(in)/300), 0.2)
	inf.ttft = inf.queue + inf.prefill + 8*time.Millisecond
	inf.decode = time.Duration(out) * tpot
	preempt, before, n := s.r.Float64(), s.r.Float64() < 0.5, 1+s.r.IntN(3)
	if preempt < f.preemption(m.Name, t) {
		inf.preemptions = n
		extra := time.Duration(n) * (scale(inf.prefill, 1.5) + s.logn(900*time.Millisecond, 0.5))
		if before {
			inf.queue += extra
			inf.ttft += extra
		} else {
			inf.decode += extra
		}
	}
	if slow := f.slowdown(m.Name, t); slow != 1 {
		inf.queue, inf.prefill = scale(inf.queue, slow), scale(inf.prefill, slow)
		inf.ttft, inf.decode = scale(inf.ttft, slow), scale(inf.decode, slow)
	}
	inf.fail = s.r.Float64() < modelError+fail
	return inf
}

// outputTokens draws how many tokens a model call generates and why it
// stopped.
func (s *sim) outputTokens(ph phase) (int, string) {
	if ph == phaseToolCall {
		return 18 + s.r.IntN(40), "tool_calls"
	}
	n := s.lognInt(220, 0.85)
	if n >= maxTokens {
		return maxTokens, "length"
	}
	return n, "stop"
}

// chat simulates a model call of the app's pod p under span parent from t,
// with one retry on a 5xx; it returns when it ended, the status the app
// answers with (200, 502 or 504) and the tokens generated.
func (s *sim) chat(p pod, parent int, t time.Time, in int, ph phase) (time.Time, int, int) {
	m := s.model
	out, finish := s.outputTokens(ph)
	host := fmt.Sprintf("%s.%s.svc.cluster.local", m.Name, m.Namespace)
	for attempt := range 2 {
		c := s.span(p, scopeOpenAI, parent, "chat "+m.model.Model, ptrace.SpanKindClient, t)
		start := t.Add(s.net())
		mp, isNew := m.pick(s.r, start)
		respID := fmt.Sprintf("chatcmpl-%s-%d", s.reqID, len(s.req.spans))
		srv := s.span(mp, scopeVLLM, c, "llm_request", ptrace.SpanKindServer, start)
		inf := s.infer(m, isNew, start, in, out)
		s.log(mp, "vllm.entrypoints.logger", srv, start, plog.SeverityNumberInfo, vllmReceived(s, respID))
		status, dur := 200, inf.ttft+inf.decode
		if inf.fail {
			status, dur = 500, scale(inf.ttft, 0.2+0.8*s.r.Float64())
		}
		end := start.Add(dur)
		cEnd := end.Add(s.net())
		deadline := t.Add(modelTimeout)
		timedOut := cEnd.After(deadline)
		if timedOut {
			status, cEnd, end = 0, deadline, deadline.Add(-time.Millisecond)
		}
		for k := range inf.preemptions {
			s.run.preemptions[m.Name]++
			at := start.Add(min(end.Sub(start), scale(inf.queue, float64(k+1)/float64(inf.preemptions+1))))
			s.log(mp, "vllm.v1.core.sched.scheduler", srv, at, plog.SeverityNumberWarn, vllmPreempted(respID, s.run.preemptions[m.Name]))
		}
		gen := []attr{{"gen_ai.operation.name", "chat"}, {"gen_ai.provider.name", providerName},
			{"gen_ai.request.model", m.model.Model}, {"gen_ai.request.max_tokens", maxTokens}, {"gen_ai.request.temperature", 0.7}}
		srvAttrs := append(gen, attr{"gen_ai.request.id", respID}, attr{"gen_ai.request.top_p", 1.0},
			attr{"gen_ai.usage.input_tokens", in}, attr{"gen_ai.usage.prompt_tokens", in},
			attr{"gen_ai.latency.time_in_queue", inf.queue.Seconds()})
		switch {
		case timedOut:
			s.end(srv, end, "aborted", "request aborted: client disconnected", srvAttrs...)
			s.log(mp, "vllm.entrypoints.openai.serving_chat", srv, end, plog.SeverityNumberInfo, "Aborted request "+respID+".")
			s.end(c, cEnd, "timeout", "Request timed out.", append(gen, attr{"server.address", host}, attr{"server.port", 8000})...)
			s.log(p, "ai_app.chat", parent, cEnd, plog.SeverityNumberError,
				fmt.Sprintf("model call failed: openai.APITimeoutError: Request timed out. model=%s timeout_s=%d", m.model.Model, int(modelTimeout.Seconds())),
				attr{"exception.type", "openai.APITimeoutError"})
			return cEnd, 504, 0
		case status == 200:
			srvAttrs = append(srvAttrs, attr{"gen_ai.response.model", m.model.Model}, attr{"gen_ai.response.id", respID},
				attr{"gen_ai.usage.output_tokens", out}, attr{"gen_ai.usage.completion_tokens", out},
				attr{"gen_ai.response.finish_reasons", []string{finish}},
				attr{"gen_ai.latency.time_to_first_token", inf.ttft.Seconds()}, attr{"gen_ai.latency.e2e", dur.Seconds()},
				attr{"gen_ai.latency.time_in_model_prefill", inf.prefill.Seconds()},
				attr{"gen_ai.latency.time_in_model_decode", inf.decode.Seconds()})
			s.end(srv, end, "", "", srvAttrs...)
		default:
			s.end(srv, end, "500", "EngineCore encountered an issue", srvAttrs...)
			s.log(mp, "vllm.entrypoints.openai.serving_chat", srv, end, plog.SeverityNumberError,
				"Error in chat completion stream generator: RuntimeError: CUDA error: an illegal memory access was encountered")
		}
		s.log(mp, "uvicorn.access", srv, end, statusSeverity(status),
			fmt.Sprintf("%s:%d - \"POST /v1/chat/completions HTTP/1.1\" %d %s", p.ip, 40000+s.r.IntN(20000), status, statusText(status)))
		cAttrs := append(gen, attr{"server.address", host}, attr{"server.port", 8000}, attr{"http.response.status_code", status})
		if attempt > 0 {
			cAttrs = append(cAttrs, attr{"http.request.resend_count", attempt})
		}
		if status == 200 {
			cAttrs = append(cAttrs, attr{"gen_ai.response.model", m.model.Model}, attr{"gen_ai.response.id", respID},
				attr{"gen_ai.usage.input_tokens", in}, attr{"gen_ai.usage.output_tokens", out},
				attr{"gen_ai.response.finish_reasons", []string{finish}})
			s.end(c, cEnd, "", "", cAttrs...)
			return cEnd, 200, out
		}
		s.end(c, cEnd, "500", "Error code: 500", cAttrs...)
		s.log(p, "ai_app.chat", parent, cEnd, plog.SeverityNumberWarn,
			fmt.Sprintf("model call attempt %d failed: openai.InternalServerError: Error code: 500 model=%s", attempt+1, m.model.Model),
			attr{"exception.type", "openai.InternalServerError"})
		t = cEnd.Add(s.logn(600*time.Millisecond, 0.3))
	}
	s.log(p, "ai_app.chat", parent, t, plog.SeverityNumberError, "model call failed after 2 attempts model="+m.model.Model)
	return t, 502, 0
}

// statusText is the reason phrase uvicorn writes.
func statusText(status int) string {
	switch status {
	case 200:
		return "OK"
	case 500:
		return "Internal Server Error"
	case 502:
		return "Bad Gateway"
	case 503:
		return "Service Unavailable"
	}
	return ""
}

// tool simulates the app's pod p calling the external tool under span
// parent from t, with one retry; a tool that fails leaves the answer without
// its results but does not fail the request.
func (s *sim) tool(p pod, parent int, t time.Time) time.Time {
	tool := s.g.cfg.Tool
	ex := s.span(p, scopeAgent, parent, "execute_tool web_search", ptrace.SpanKindInternal, t)
	callID := "call_" + k8sName(s.r, 24)
	q := searchQuery(s.r.IntN(1 << 16))
	// The query string carries a synthetic fake api_key (see secrets): the
	// old httpx instrumentation records url.full unredacted, so the spans
	// carry it too, as real ones do.
	full := fmt.Sprintf("https://%s/v1/search?q=%s&api_key=%s", tool.Host, url.QueryEscape(q), s.g.secrets.toolKey)
	t = t.Add(s.logn(time.Millisecond, 0.3))
	s.log(p, "ai_app.tools", ex, t, plog.SeverityNumberInfo, "calling tool web_search: GET "+full)
	ok := false
	for attempt := range 2 {
		c := s.span(p, scopeHTTPX, ex, "GET", ptrace.SpanKindClient, t)
		dur := scale(s.logn(750*time.Millisecond, 0.4), s.g.faults.slowdown(tool.Name, t))
		status := 200
		if s.r.Float64() < toolError {
			status, dur = []int{502, 503}[s.r.IntN(2)], s.logn(200*time.Millisecond, 0.5)
		}
		errType := httpErrType(status, false)
		attrs := []attr{{"http.request.method", "GET"}, {"server.address", tool.Host}, {"server.port", 443},
			{"url.full", full}, {"peer.service", tool.Name}}
		if dur > toolTimeout {
			dur, status, errType = toolTimeout, 0, "timeout"
		} else {
			attrs = append(attrs, attr{"http.response.status_code", status})
		}
		if attempt > 0 {
			attrs = append(attrs, attr{"http.request.resend_count", attempt})
		}
		t = t.Add(dur)
		s.end(c, t, errType, "", attrs...)
		if errType == "" {
			ok = true
			break
		}
		s.log(p, "ai_app.tools", ex, t, plog.SeverityNumberWarn,
			fmt.Sprintf("tool web_search attempt %d failed (%s), url=%s", attempt+1, errType, full))
		t = t.Add(s.logn(200*time.Millisecond, 0.3))
	}
	t = t.Add(s.logn(time.Millisecond, 0.3))
	attrs := []attr{{"gen_ai.operation.name", "execute_tool"}, {"gen_ai.tool.name", "web_search"},
		{"gen_ai.tool.type", "function"}, {"gen_ai.tool.call.id", callID}}
	if ok {
		s.log(p, "ai_app.tools", ex, t, plog.SeverityNumberInfo, "tool web_search returned 5 results")
		s.end(ex, t, "", "", attrs...)
	} else {
		s.log(p, "ai_app.tools", ex, t, plog.SeverityNumberError, "tool web_search unavailable; answering without it")
		s.end(ex, t, "tool_unavailable", "web_search failed twice", attrs...)
	}
	return t
}
