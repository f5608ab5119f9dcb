package reqpath_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// faultRun is an hour with one fault at half time; before is the half hour
// before the onset, after the 25 minutes from five minutes past it.
type faultRun struct {
	*dataset
	fault                       reqpath.Fault
	onset                       time.Time
	beforeFrom, afterFrom, upTo time.Time
}

func runFault(t *testing.T, f reqpath.Fault) faultRun {
	t.Helper()
	onset := runStart().Add(30 * time.Minute)
	f.Onset = onset
	cfg := reqpath.Config{Seed: 1, Start: runStart(), Faults: []reqpath.Fault{f}}
	g, err := reqpath.New(cfg)
	require.NoError(t, err)
	d := &dataset{}
	for b := range g.Batches() {
		d.addTraces(b.Traces)
		d.addLogs(b.Logs)
	}
	return faultRun{dataset: d, fault: g.Config().Faults[0], onset: onset,
		beforeFrom: runStart(), afterFrom: onset.Add(5 * time.Minute), upTo: runStart().Add(time.Hour)}
}

func (r faultRun) before(keep func(span) bool) []span {
	return r.where(between(keep, r.beforeFrom, r.onset))
}

func (r faultRun) after(keep func(span) bool) []span {
	return r.where(between(keep, r.afterFrom, r.upTo))
}

// ok keeps spans that did not fail.
func ok(keep func(span) bool) func(span) bool {
	return func(s span) bool { return keep(s) && !s.err }
}

// toolCalls keeps the app's calls to the external tool.
func toolCalls(s span) bool { return s.attrs["peer.service"] == "web-search-api" }

func TestDependencySlow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		service  string
		severity float64
		hop      func(span) bool
	}{
		{"vector-db", 0, server("vector-db")},
		// The app's 60 s client timeout censors a slow model server's
		// tail, so the model server is slowed less, and its timed-out
		// calls count (as at least 60 s).
		{"vllm-llama-3-1-8b", 3, server("vllm-llama-3-1-8b")},
		{"web-search-api", 0, toolCalls},
	} {
		t.Run(tc.service, func(t *testing.T) {
			r := runFault(t, reqpath.Fault{Kind: reqpath.KindDependencySlow, Severity: tc.severity, Entity: map[string]string{"service": tc.service}})
			n := r.fault.Severity
			keep := ok(tc.hop)
			if tc.severity != 0 {
				keep = tc.hop
			}
			before, after := durations(r.before(keep)), durations(r.after(keep))
			ratio := quantile(after, .95) / quantile(before, .95)
			t.Logf("%s ×%g: p95 %.3f s → %.3f s (×%.2f)", tc.service, n, quantile(before, .95), quantile(after, .95), ratio)
			// A p95 of a few thousand spans is within ±5% of the true one.
			require.GreaterOrEqual(t, ratio, 0.85*n, "the hop's p95 after the onset is not N× before")
			// Only that hop slowed down.
			other := server("vector-db")
			if tc.service == "vector-db" {
				other = toolCalls
			}
			require.InDelta(t, 1, quantile(durations(r.after(ok(other))), .5)/quantile(durations(r.before(ok(other))), .5), 0.15)
		})
	}
	t.Run("subtle", func(t *testing.T) {
		r := runFault(t, reqpath.Fault{Kind: reqpath.KindDependencySlow, Variant: reqpath.VariantSubtle})
		before, after := durations(r.before(ok(server("vector-db")))), durations(r.after(ok(server("vector-db"))))
		shift := math.Log(quantile(after, .5) / quantile(before, .5))
		t.Logf("vector-db ×%g: p50 %.3f s → %.3f s, log shift %.2f, healthy log spread %.2f",
			r.fault.Severity, quantile(before, .5), quantile(after, .5), shift, logSpread(before))
		require.Greater(t, shift, 0.5*math.Log(r.fault.Severity), "the subtle slowdown is not in the data")
		require.Less(t, shift, 3*logSpread(before), "the subtle slowdown is not within 3× the healthy spread")
	})
}

func TestTenantFailure(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"", reqpath.VariantSubtle} {
		t.Run("variant="+variant, func(t *testing.T) {
			r := runFault(t, reqpath.Fault{Kind: reqpath.KindTenantFailure, Variant: variant})
			faulty := r.fault.Entity["tenant"]
			require.Equal(t, "tenant-c", faulty, "the default faulty tenant")
			of := func(tenant string) func(span) bool {
				return func(s span) bool { return isRoot(s) && s.attrs["tenant.id"] == tenant }
			}
			before, after := errorRate(r.before(of(faulty))), errorRate(r.after(of(faulty)))
			t.Logf("%s: error rate %.3f → %.3f", faulty, before, after)
			require.Less(t, before, 0.03)
			if variant == "" {
				require.Greater(t, after, 0.6)
			} else {
				require.InDelta(t, r.fault.Severity+0.015, after, 0.03)
			}
			for _, tenant := range reqpath.DefaultTenants() {
				if tenant == faulty {
					continue
				}
				rate := errorRate(r.after(of(tenant)))
				t.Logf("%s: error rate %.3f", tenant, rate)
				require.InDelta(t, 0.015, rate, 0.012, tenant)
			}
			// The failure starts in the vector DB, with the tenant in its logs.
			failed := r.after(func(s span) bool { return s.err && s.service == "vector-db" && s.attrs["tenant.id"] == faulty })
			require.NotEmpty(t, failed)
			require.Equal(t, int64(503), failed[0].attrs["http.response.status_code"])
		})
	}
}

func TestBadRollout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		service, variant, oldVersion, newVersion string
	}{
		{"ai-app", "", "2.4.1", "2.5.0"},
		{"ai-app", reqpath.VariantSubtle, "2.4.1", "2.5.0"},
		{"vllm-llama-3-1-8b", "", "v0.11.0", "v0.12.0"},
		{"vllm-llama-3-1-8b", reqpath.VariantSubtle, "v0.11.0", "v0.12.0"},
	} {
		t.Run(tc.service+"/"+tc.variant, func(t *testing.T) {
			r := runFault(t, reqpath.Fault{Kind: reqpath.KindBadRollout, Variant: tc.variant, Entity: map[string]string{"service": tc.service}})
			require.Equal(t, tc.newVersion, r.fault.Entity["version"])
			before, after := r.before(server(tc.service)), r.after(server(tc.service))
			for _, s := range before {
				require.Equal(t, tc.oldVersion, s.version)
			}
			for _, s := range after {
				require.Equal(t, tc.newVersion, s.version)
			}
			// The pods are replaced one by one.
			mixed := r.where(between(server(tc.service), r.onset, r.onset.Add(40*time.Second)))
			versions := map[string]bool{}
			for _, s := range mixed {
				versions[s.version] = true
			}
			require.Len(t, versions, 2, "no rolling update")
			rb, ra := errorRate(before), errorRate(after)
			t.Logf("%s %s: error rate %.3f → %.3f, p50 %.2f s → %.2f s", tc.service, r.fault.Entity["version"], rb, ra,
				quantile(durations(before), .5), quantile(durations(after), .5))
			require.Less(t, rb, 0.03)
			require.Greater(t, ra, rb+0.6*r.fault.Severity)
			if tc.variant == reqpath.VariantSubtle {
				require.Less(t, ra, 0.1)
			}
		})
	}
}

func TestInferenceCapacitySaturated(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"", reqpath.VariantSubtle} {
		t.Run("variant="+variant, func(t *testing.T) {
			r := runFault(t, reqpath.Fault{Kind: reqpath.KindInferenceCapacitySaturated, Variant: variant})
			srv := r.fault.Entity["service"]
			require.Equal(t, "vllm-llama-3-1-8b", srv)
			before, after := r.before(server(srv)), r.after(server(srv))
			rate := float64(len(after)) / 25 / (float64(len(before)) / 30)
			ttft := quantile(floatAttr(after, "gen_ai.latency.time_to_first_token"), .5) / quantile(floatAttr(before, "gen_ai.latency.time_to_first_token"), .5)
			queue := quantile(floatAttr(after, "gen_ai.latency.time_in_queue"), .5) / quantile(floatAttr(before, "gen_ai.latency.time_in_queue"), .5)
			t.Logf("×%g load: request rate ×%.2f, p50 TTFT ×%.2f, p50 queue ×%.2f, timeouts %d",
				r.fault.Severity, rate, ttft, queue, len(r.after(func(s span) bool { return s.attrs["error.type"] == "timeout" })))
			require.InDelta(t, r.fault.Severity, rate, 0.15*r.fault.Severity)
			if variant == "" {
				require.Greater(t, ttft, 10.0)
				require.Greater(t, queue, 50.0)
			} else {
				require.Greater(t, ttft, 1.1)
				require.Less(t, ttft, 3.0)
			}
			// The other model server is untouched.
			other := server("vllm-llama-3-1-70b")
			require.InDelta(t, 1, float64(len(r.after(other)))/25/(float64(len(r.before(other)))/30), 0.15)
		})
	}
}

func TestKVCacheExhausted(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"", reqpath.VariantSubtle} {
		t.Run("variant="+variant, func(t *testing.T) {
			r := runFault(t, reqpath.Fault{Kind: reqpath.KindKVCacheExhausted, Variant: variant})
			srv := r.fault.Entity["service"]
			preempted := map[string]bool{}
			for _, l := range r.logs {
				if strings.Contains(l.body, "is preempted by PreemptionMode.RECOMPUTE") {
					require.Equal(t, srv, l.service)
					require.False(t, l.t.Before(r.onset), "preemption before the onset")
					preempted[l.span] = true
				}
			}
			after := r.after(server(srv))
			n := 0
			for _, s := range after {
				if preempted[s.id] {
					n++
				}
			}
			share := float64(n) / float64(len(after))
			ttft := func(q float64) float64 {
				return quantile(floatAttr(after, "gen_ai.latency.time_to_first_token"), q) /
					quantile(floatAttr(r.before(server(srv)), "gen_ai.latency.time_to_first_token"), q)
			}
			t.Logf("preempted share %.3f (severity %g), TTFT p50 ×%.2f, p95 ×%.2f, p99 ×%.2f", share, r.fault.Severity, ttft(.5), ttft(.95), ttft(.99))
			require.InDelta(t, r.fault.Severity, share, 0.05)
			if variant == "" {
				require.Greater(t, ttft(.95), 5.0)
			} else {
				require.Less(t, ttft(.5), 1.2, "the subtle variant moves the median")
				require.Greater(t, ttft(.99), 1.5)
			}
		})
	}
}

func TestHealthyRunHasNoFaultSignature(t *testing.T) {
	t.Parallel()
	d := generate(t, reqpath.Config{Seed: 1, Start: runStart()})
	for _, s := range d.spans {
		if s.kind == ptrace.SpanKindServer && s.service == "vector-db" {
			require.NotEqual(t, int64(503), s.attrs["http.response.status_code"])
		}
	}
	versions := map[string]bool{}
	for _, s := range d.where(server("ai-app")) {
		versions[s.version] = true
	}
	require.Len(t, versions, 1)
}
