package reqpath

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"
)

// scopeQdrantClient is the scope of the app's vector-search spans.
const scopeQdrantClient = "opentelemetry.instrumentation.qdrant"

// secrets are SYNTHETIC FAKE credentials, drawn from the seed, that the
// simulated services leak into their logs and spans the way real ones do —
// so that issue 8's redaction has something realistic to remove. None of
// them is, or was ever, a real credential; their shapes only mimic the real
// formats (an OpenAI-style "sk-…T3BlbkFJ…" key, a hex API key in a query
// string, a password in a URL).
type secrets struct {
	// tenantKeys are the fake "Authorization: Bearer sk-…" keys of the
	// tenants' users.
	tenantKeys map[string]string
	// toolKey is the fake api_key of the external tool.
	toolKey string
	// dbPassword is the fake password in the vector store's URL.
	dbPassword string
}

// newSecrets draws the run's synthetic fake secrets.
func newSecrets(r *rand.Rand, tenants []string) secrets {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	draw := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	s := secrets{tenantKeys: make(map[string]string, len(tenants))}
	for _, t := range tenants {
		// Fake: the legacy OpenAI key layout, random characters.
		s.tenantKeys[t] = "sk-" + draw(alnum, 20) + "T3BlbkFJ" + draw(alnum, 20)
	}
	s.toolKey = draw("0123456789abcdef", 32)              // fake
	s.dbPassword = draw(alnum, 12) + "!" + draw(alnum, 4) // fake
	return s
}

// vectorURL is the vector store's URL with its fake password in it.
func (s secrets) vectorURL(vdb *service) string {
	return fmt.Sprintf("https://rag_app:%s@%s.%s.svc.cluster.local:6333", s.dbPassword, vdb.Name, vdb.Namespace)
}

// prompt is one of the users' prompts; they are user content, which issue 8
// drops or hashes before storing.
func prompt(i int) string {
	p := [...]string{
		"Summarise the attached Q3 incident report in five bullet points for the exec team.",
		"What is our refund policy for annual plans cancelled after 45 days?",
		"Draft a reply to jane.doe@example.com explaining the delay in her order #48213.",
		"Compare the latency SLOs of the checkout and search services over the last quarter.",
		"Translate the onboarding guide section 'Setting up SSO' into German.",
		"Which customers in the EMEA region renewed in March? My employee id is E-20931.",
		"Explain the difference between our Standard and Enterprise support tiers.",
		"Write a SQL query that lists the ten largest invoices from 2025.",
		"Find the latest weather forecast for Rotterdam and suggest whether to postpone the site visit.",
		"Our on-call phone is +1 415 555 0134; write the escalation policy in plain English.",
		"Summarise the contract with Acme Corp and list the termination clauses.",
		"What changed in release 2.4 of the mobile app?",
		"Give me three talking points for tomorrow's board meeting about GPU spend.",
		"Look up the current exchange rate EUR/USD and convert 12,400 EUR.",
		"Rewrite this paragraph to be friendlier: 'Your ticket has been closed.'",
		"List the open security findings for the payments team and their owners.",
	}
	return p[i%len(p)]
}

// searchQuery is one of the tool's queries.
func searchQuery(i int) string {
	q := [...]string{
		"weather forecast Rotterdam tomorrow", "EUR USD exchange rate today", "Acme Corp press release",
		"GPU price per hour H100 cloud", "public holidays Germany 2026", "release notes mobile app 2.4",
	}
	return q[i%len(q)]
}

// userHash spreads users over addresses and clients.
func userHash(user string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(user))
	return h.Sum32()
}

// clientIP is a user's address in the documentation range.
func clientIP(user string) string {
	v := userHash(user)
	return fmt.Sprintf("203.0.%d.%d", 113+v%3, 1+(v>>8)%254)
}

// userAgent is a user's client.
func userAgent(user string) string {
	ua := [...]string{"python-requests/2.32.3", "OpenAI/Python 1.54.4", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5)", "node-fetch/3.3.2"}
	return ua[userHash(user)%uint32(len(ua))]
}

// gatewayHeaderDump is Envoy's debug line with the request headers,
// including the user's fake bearer key.
func gatewayHeaderDump(s *sim) string {
	return fmt.Sprintf("[C%d][S%d] request headers complete (end_stream=false):\n':authority', 'api.example.com'\n':path', '/v1/chat'\n':method', 'POST'\n'content-type', 'application/json'\n'authorization', 'Bearer %s'\n'x-tenant-id', '%s'\n'x-request-id', '%s'",
		s.r.IntN(1<<20), s.r.Uint64()%(1<<40), s.g.secrets.tenantKeys[s.tenant], s.tenant, s.reqID)
}

// envoyAccessLog is Envoy's default access log format.
func envoyAccessLog(s *sim, start, end time.Time, status int, client, upstream string) string {
	flags, upTime := "-", "-"
	if status == 429 {
		flags = "RL"
	} else {
		upTime = fmt.Sprint(end.Sub(start).Milliseconds() - 3)
	}
	if upstream == "" {
		upstream = "-"
	}
	return fmt.Sprintf("[%s] \"POST /v1/chat HTTP/1.1\" %d %s %d %d %d %s \"%s\" \"%s\" \"%s\" \"api.example.com\" \"%s\"",
		start.UTC().Format("2006-01-02T15:04:05.000Z"), status, flags, 600+s.r.IntN(2000), 200+s.r.IntN(6000),
		end.Sub(start).Milliseconds(), upTime, client, userAgent(s.user), s.reqID, upstream)
}

// chatRequestLog is the app's structured line for a new request: JSON in a
// string body, with the user's prompt in it. Now and then the app logs the
// incoming Authorization header too, as a debug print left in by mistake.
func chatRequestLog(s *sim) string {
	m := map[string]any{
		"event": "chat.request", "request_id": s.reqID, "tenant": s.tenant, "user_id": s.user,
		"model": s.model.model.Model, "prompt": prompt(s.promptIdx),
	}
	if s.debug {
		m["headers"] = map[string]string{"Authorization": "Bearer " + s.g.secrets.tenantKeys[s.tenant], "X-Request-Id": s.reqID}
	}
	b, _ := json.Marshal(m) // a map of strings always marshals
	return string(b)
}

// appException draws the exception of a failing app request; the new
// version of a bad rollout fails its own way.
func appException(r *rand.Rand, isNew bool) (string, string) {
	if isNew && r.IntN(4) > 0 {
		return "TypeError", "'NoneType' object is not subscriptable"
	}
	e := [...][2]string{
		{"KeyError", "'choices'"},
		{"pydantic_core.ValidationError", "1 validation error for ChatRequest\nmessages\n  Field required"},
		{"asyncio.CancelledError", "request cancelled"},
	}[r.IntN(3)]
	return e[0], e[1]
}

// pythonTraceback is a short Python traceback of exc.
func pythonTraceback(exc, msg string) string {
	return "Traceback (most recent call last):\n" +
		"  File \"/app/ai_app/api/chat.py\", line 88, in chat\n    answer = await pipeline.run(req)\n" +
		"  File \"/app/ai_app/pipeline.py\", line 142, in run\n    context = build_context(hits)[\"chunks\"]\n" +
		exc + ": " + msg
}

// qdrantAccessLog is Qdrant's actix access log line.
func qdrantAccessLog(client string, status int, dur time.Duration) string {
	return fmt.Sprintf("%s \"POST /collections/documents/points/search HTTP/1.1\" %d %d \"-\" \"qdrant-client/1.12.1 python/3.11.9\" %.6f",
		client, status, 180+int(dur/time.Millisecond)%4000, dur.Seconds())
}

// vllmReceived is vLLM's request log line, which carries the prompt when
// --disable-log-requests is not set.
func vllmReceived(s *sim, reqID string) string {
	p := prompt(s.promptIdx)
	return fmt.Sprintf("Received request %s: prompt: '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\\n\\nYou are a helpful assistant for %s. Answer from the context.<|eot_id|><|start_header_id|>user<|end_header_id|>\\n\\n%s<|eot_id|>', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.7, top_p=1.0, top_k=0, min_p=0.0, seed=None, stop=[], max_tokens=%d), prompt_token_ids: None, prompt_embeds shape: None, lora_request: None.",
		reqID, s.tenant, strings.ReplaceAll(p, "'", "\\'"), maxTokens)
}

// vllmPreempted is vLLM's scheduler warning when the KV cache runs out.
func vllmPreempted(reqID string, total int) string {
	return fmt.Sprintf("Request %s is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=%d", reqID, total)
}
