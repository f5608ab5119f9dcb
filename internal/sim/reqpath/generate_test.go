package reqpath_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// faultyConfig is a short run with a fault of every kind, so the format
// tests see every branch of the path.
func faultyConfig(seed uint64, d time.Duration) reqpath.Config {
	onset := runStart().Add(d / 3)
	return reqpath.Config{Seed: seed, Start: runStart(), Duration: d, Faults: []reqpath.Fault{
		{Kind: reqpath.KindTenantFailure, Onset: onset},
		{Kind: reqpath.KindKVCacheExhausted, Onset: onset},
		{Kind: reqpath.KindBadRollout, Onset: onset, Entity: map[string]string{"service": "vllm-llama-3-1-70b"}},
		{Kind: reqpath.KindInferenceCapacitySaturated, Onset: onset, Entity: map[string]string{"model": "meta-llama/Llama-3.1-70B-Instruct"}},
		{Kind: reqpath.KindDependencySlow, Variant: reqpath.VariantSubtle, Onset: onset, Entity: map[string]string{"service": "web-search-api"}},
	}}
}

func TestWriteFilesIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := faultyConfig(7, 15*time.Minute)
	traces1, logs1 := writeFiles(t, cfg)
	traces2, logs2 := writeFiles(t, cfg)
	require.True(t, bytes.Equal(traces1, traces2), "traces differ between two runs of the same config")
	require.True(t, bytes.Equal(logs1, logs2), "logs differ between two runs of the same config")

	cfg.Seed = 8
	traces3, logs3 := writeFiles(t, cfg)
	require.False(t, bytes.Equal(traces1, traces3), "another seed gives the same traces")
	require.False(t, bytes.Equal(logs1, logs3), "another seed gives the same logs")
}

func TestFaultTouchesOnlyItsRequests(t *testing.T) {
	t.Parallel()
	healthy := generate(t, reqpath.Config{Seed: 3, Start: runStart(), Duration: 20 * time.Minute})
	onset := runStart().Add(10 * time.Minute)
	faulty := generate(t, reqpath.Config{Seed: 3, Start: runStart(), Duration: 20 * time.Minute,
		Faults: []reqpath.Fault{{Kind: reqpath.KindDependencySlow, Onset: onset}}})
	before := func(d *dataset) []span { return d.where(func(s span) bool { return s.end.Before(onset) }) }
	require.Equal(t, before(healthy), before(faulty), "the spans before the onset changed")
}

func TestFilesDecodeIntoWellFormedTraces(t *testing.T) {
	t.Parallel()
	traces, logs := writeFiles(t, faultyConfig(11, 20*time.Minute))
	require.Equal(t, byte('\n'), traces[len(traces)-1])
	d := decodeFiles(t, traces, logs)

	byTrace := map[string]map[string]span{}
	for _, s := range d.spans {
		if byTrace[s.trace] == nil {
			byTrace[s.trace] = map[string]span{}
		}
		require.NotContains(t, byTrace[s.trace], s.id, "span id repeated in a trace")
		byTrace[s.trace][s.id] = s
	}
	roots := d.roots()
	require.Len(t, roots, len(byTrace), "a trace without exactly one root")
	requestID := map[string]string{}
	for trace, spans := range byTrace {
		root := roots[trace]
		require.Equal(t, "api-gateway", root.service)
		requestID[trace] = str(root.attrs["request.id"])
		for _, s := range spans {
			require.False(t, s.end.Before(s.start), "span %s ends before it starts: %v %v %v", s.name, s.start, s.end, s.attrs)
			require.Equal(t, requestID[trace], s.attrs["request.id"], "span %s of %s", s.name, s.service)
			require.NotEmpty(t, s.attrs["tenant.id"], "span %s of %s", s.name, s.service)
			require.Equal(t, root.attrs["tenant.id"], s.attrs["tenant.id"])
			for _, k := range []string{"service.name", "service.namespace", "service.version", "k8s.namespace.name", "k8s.pod.name", "k8s.node.name", "deployment.environment"} {
				require.NotEmpty(t, s.res[k], "%s of %s", k, s.service)
			}
			if s.id == root.id {
				continue
			}
			p, ok := spans[s.parent]
			require.True(t, ok, "span %s of %s has no parent in its trace", s.name, s.service)
			require.False(t, s.start.Before(p.start), "span %s starts before its parent %s", s.name, p.name)
			require.False(t, s.end.After(p.end), "span %s ends after its parent %s", s.name, p.name)
		}
	}

	// Every log belongs to a span of a trace, inside its time, with the
	// trace's request id and tenant.
	logged := map[string]map[string]bool{} // trace → services with logs
	for _, l := range d.logs {
		spans, ok := byTrace[l.trace]
		require.True(t, ok, "log %q has a trace id of no trace", l.body)
		s, ok := spans[l.span]
		require.True(t, ok, "log %q has a span id of no span", l.body)
		require.Equal(t, s.service, l.service)
		require.False(t, l.t.Before(s.start) || l.t.After(s.end), "log %q outside its span", l.body)
		require.Equal(t, requestID[l.trace], l.attrs["request.id"])
		require.Equal(t, s.attrs["tenant.id"], l.attrs["tenant.id"])
		if logged[l.trace] == nil {
			logged[l.trace] = map[string]bool{}
		}
		logged[l.trace][l.service] = true
		if strings.HasPrefix(l.body, "calling tool") {
			logged[l.trace]["web-search-api"] = true
		}
	}
	// Every hop of every trace logged the request.
	for trace, spans := range byTrace {
		for _, s := range spans {
			hop := s.service
			if s.attrs["peer.service"] != nil {
				hop = str(s.attrs["peer.service"])
			} else if s.kind != ptrace.SpanKindServer {
				continue
			}
			require.True(t, logged[trace][hop], "no log of hop %s in the trace of request %s", hop, requestID[trace])
		}
	}
}

func TestBatchesHoldWholeTraces(t *testing.T) {
	t.Parallel()
	cfg := faultyConfig(5, 10*time.Minute)
	g, err := reqpath.New(cfg)
	require.NoError(t, err)
	batchOf := map[string]int{}
	n := 0
	for b := range g.Batches() {
		require.Equal(t, runStart().Add(time.Duration(n)*time.Minute), b.Start)
		d := &dataset{}
		d.addTraces(b.Traces)
		d.addLogs(b.Logs)
		last := !b.End.Before(runStart().Add(cfg.Duration))
		for _, root := range d.roots() {
			require.False(t, root.end.Before(b.Start), "a root ends before its batch")
			require.True(t, last || root.end.Before(b.End), "a root ends after its batch")
		}
		for _, s := range d.spans {
			if prev, ok := batchOf[s.trace]; ok {
				require.Equal(t, prev, n, "a trace is split over batches")
			}
			batchOf[s.trace] = n
		}
		for _, l := range d.logs {
			require.Equal(t, n, batchOf[l.trace], "a log is in another batch than its trace")
		}
		n++
	}
	require.Equal(t, 10, n)
}

func TestHealthyPathIsRealistic(t *testing.T) {
	t.Parallel()
	d := generate(t, reqpath.Config{Seed: 1, Start: runStart()})
	cfg := reqpath.Config{Start: runStart()}.WithDefaults()
	roots := d.roots()
	require.InDelta(t, 7200, len(roots), 300, "an hour at 120 requests per minute")

	// Per-hop latency: the gateway's own time, vector search, inference,
	// the external tool.
	children := map[string][]span{}
	for _, s := range d.spans {
		children[s.parent] = append(children[s.parent], s)
	}
	var gwOwn []float64
	for _, r := range roots {
		own := r.dur()
		for _, c := range children[r.id] {
			own -= c.dur()
		}
		gwOwn = append(gwOwn, own.Seconds())
	}
	vdb := durations(d.where(server("vector-db")))
	var model []span
	for _, m := range cfg.ModelServers {
		model = append(model, d.where(server(m.Name))...)
	}
	inference := durations(model)
	tool := durations(d.where(func(s span) bool { return s.attrs["peer.service"] == "web-search-api" }))
	t.Logf("p50/p99: gateway own %.3f/%.3f s, vector search %.3f/%.3f s, inference %.2f/%.2f s, tool %.2f/%.2f s",
		quantile(gwOwn, .5), quantile(gwOwn, .99), quantile(vdb, .5), quantile(vdb, .99),
		quantile(inference, .5), quantile(inference, .99), quantile(tool, .5), quantile(tool, .99))
	require.InDelta(t, 0.03, quantile(gwOwn, .5), 0.02, "gateway: tens of ms")
	require.InDelta(t, 0.3, quantile(vdb, .5), 0.15, "vector search: hundreds of ms")
	require.InDelta(t, 4, quantile(inference, .5), 3, "inference: seconds")
	require.Greater(t, quantile(inference, .99), 20.0, "inference: tens of seconds in the tail")
	require.InDelta(t, 0.8, quantile(tool, .5), 0.3, "tool: about a second")
	ttft := floatAttr(model, "gen_ai.latency.time_to_first_token")
	require.InDelta(t, 0.2, quantile(ttft, .5), 0.15, "time to first token")

	// 1–2% of requests fail, for every tenant alike.
	rootSpans := d.where(isRoot)
	t.Logf("error rate %.4f", errorRate(rootSpans))
	require.InDelta(t, 0.015, errorRate(rootSpans), 0.005)
	for _, tenant := range cfg.Tenants {
		rate := errorRate(d.where(func(s span) bool { return isRoot(s) && s.attrs["tenant.id"] == tenant }))
		t.Logf("%s error rate %.4f", tenant, rate)
		require.InDelta(t, 0.015, rate, 0.012, tenant)
	}

	// Retries, timeouts and the GenAI attributes are there.
	require.NotEmpty(t, d.where(func(s span) bool { return s.attrs["http.request.resend_count"] != nil }), "no retry")
	require.NotEmpty(t, d.where(func(s span) bool { return s.attrs["error.type"] == "timeout" }), "no timeout")
	for _, s := range model {
		for _, k := range []string{"gen_ai.operation.name", "gen_ai.request.model", "gen_ai.provider.name", "gen_ai.usage.input_tokens"} {
			require.NotNil(t, s.attrs[k], k)
		}
		require.True(t, strings.HasPrefix(s.node, "gpu-node-"), s.node)
		if !s.err {
			require.NotNil(t, s.attrs["gen_ai.usage.output_tokens"])
			require.NotNil(t, s.attrs["gen_ai.latency.time_to_first_token"])
		}
	}
	for _, s := range d.where(server("ai-app")) {
		require.True(t, strings.HasPrefix(s.node, "cpu-node-"), s.node)
	}

	// The logs carry the synthetic fake secrets redaction must remove, and no
	// preemption happens without a fault.
	found := map[string]bool{}
	for _, l := range d.logs {
		for _, secret := range []string{"Bearer sk-", "api_key=", "rag_app:", `"prompt":`, "prompt: '"} {
			if strings.Contains(l.body, secret) {
				found[secret] = true
			}
		}
		require.NotContains(t, l.body, "preempted")
	}
	require.Len(t, found, 5, "secrets found: %v", found)
}

func TestTrafficShapesArrivals(t *testing.T) {
	t.Parallel()
	mid := runStart().Add(10 * time.Minute)
	d := generate(t, reqpath.Config{Seed: 2, Start: runStart(), Duration: 20 * time.Minute, Traffic: func(at time.Time) float64 {
		if at.Before(mid) {
			return 0.5
		}
		return 2
	}})
	first, second := 0, 0
	for _, r := range d.roots() {
		if r.start.Before(mid) {
			first++
		} else {
			second++
		}
	}
	t.Logf("requests: %d at half the rate, %d at twice", first, second)
	require.InDelta(t, 600, first, 75)
	require.InDelta(t, 2400, second, 150)
}

func TestSampleRatioKeepsWholeRequests(t *testing.T) {
	t.Parallel()
	cfg := reqpath.Config{Seed: 4, Start: runStart(), Duration: 20 * time.Minute}
	all := generate(t, cfg)
	cfg.SampleRatio = 0.1
	some := generate(t, cfg)
	require.InDelta(t, 0.1*float64(len(all.roots())), len(some.roots()), 40)
	spans := map[string][]span{}
	for _, s := range all.spans {
		spans[s.trace] = append(spans[s.trace], s)
	}
	kept := map[string][]span{}
	for _, s := range some.spans {
		kept[s.trace] = append(kept[s.trace], s)
	}
	for trace, ss := range kept {
		require.ElementsMatch(t, spans[trace], ss, "a sampled trace differs from the unsampled run's")
	}
	for _, l := range some.logs {
		require.Contains(t, kept, l.trace)
	}
}
