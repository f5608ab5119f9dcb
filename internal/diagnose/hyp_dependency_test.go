package diagnose_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/store"
)

// requestPathStart is when the request-path runs of these tests begin; the
// faults start half an hour in.
var requestPathStart = sim.DefaultStart

// requestPathOnly simulates an hour of the request path alone (no cluster
// metrics), feeds its traces through span metrics and the service graph
// into a fresh store as `vigil serve` does, and diagnoses its end.
func requestPathOnly(t *testing.T, seed uint64, faults ...reqpath.Fault) *diagnose.Report {
	t.Helper()
	for i := range faults {
		if faults[i].Onset.IsZero() {
			faults[i].Onset = requestPathStart.Add(30 * time.Minute)
		}
	}
	g, err := reqpath.New(reqpath.Config{Seed: seed, Start: requestPathStart, Duration: time.Hour, Interval: 30 * time.Second,
		RequestsPerMinute: 90, Faults: faults})
	require.NoError(t, err)
	clock := sim.NewClock(requestPathStart)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clock.Now, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	cfg := spanmetrics.DefaultConfig()
	cfg.FlushInterval = 0
	sp, err := spanmetrics.New(cfg, st, clock.Now, nil, nil)
	require.NoError(t, err)
	for b := range g.Batches() {
		clock.Set(b.End)
		require.NoError(t, sp.ConsumeTraces(t.Context(), b.Traces))
	}
	return diagnoseAt(t, st, clock.Now())
}

// causeOf is the first cause or finding of kind, and whether one is.
func causeOf(rep *diagnose.Report, kind string) (diagnose.Cause, bool) {
	for _, c := range append(append([]diagnose.Cause{}, rep.Causes...), rep.Findings...) {
		if c.Kind == kind {
			return c, true
		}
	}
	return diagnose.Cause{}, false
}

// TestDependencySlow: a hop of the request path five times slower — the
// vector DB, the app's own code, a model server, the outside tool (a
// virtual node with no spans of its own) — is named first as
// dependency_slow of that service, from within a few minutes of the
// onset, from span metrics and the service graph alone; no other hop is
// blamed and no tenant.
func TestDependencySlow(t *testing.T) {
	for _, svc := range []string{"vector-db", "ai-app", "vllm-llama-3-1-8b", "web-search-api"} {
		t.Run(svc, func(t *testing.T) {
			rep := requestPathOnly(t, 1, reqpath.Fault{Kind: reqpath.KindDependencySlow, Entity: map[string]string{"service": svc}})
			c, ok := top(rep)
			require.True(t, ok, brief(rep))
			require.Equal(t, diagnose.KindDependencySlow, c.Kind, brief(rep))
			require.Equal(t, svc, c.Entity["service"], brief(rep))
			require.GreaterOrEqual(t, c.Confidence, 0.5)
			require.NotNil(t, c.Since)
			onset := requestPathStart.Add(30 * time.Minute)
			require.WithinRange(t, *c.Since, onset.Add(-time.Minute), onset.Add(3*time.Minute))
			require.NotEmpty(t, c.Evidence)
			require.Contains(t, c.Evidence[0].Query, fmt.Sprintf("server=%q", svc))
			require.False(t, rep.Healthy)
			for _, o := range append(rep.Causes, rep.Findings...) {
				if o.Kind == diagnose.KindDependencySlow && o.Entity["service"] != svc {
					require.Less(t, o.Confidence, 0.5, "another hop blamed: %s", brief(rep))
				}
				require.NotEqual(t, diagnose.KindTenantFailure, o.Kind, brief(rep))
			}
		})
	}
}

// TestDependencySlowExplainsLatency: a model server slow enough to lift
// the whole request's latency is the probable cause of the entry's
// inference_latency_high symptom (and of the errors of the requests that
// time out waiting for it, if any).
func TestDependencySlowExplainsLatency(t *testing.T) {
	rep := requestPathOnly(t, 2, reqpath.Fault{Kind: reqpath.KindDependencySlow, Entity: map[string]string{"service": "vllm-llama-3-1-8b"}})
	require.NotEmpty(t, rep.Symptoms, brief(rep))
	s := rep.Symptoms[0]
	require.Equal(t, diagnose.SymptomInferenceLatencyHigh, s.Kind)
	require.Equal(t, diagnose.Entity{"service": "api-gateway"}, s.Entity)
	require.NotEmpty(t, rep.Causes, brief(rep))
	c := rep.Causes[0]
	require.Equal(t, diagnose.KindDependencySlow, c.Kind)
	require.Contains(t, c.Explains, 0)
	require.Contains(t, c.Summary, "probable cause of high inference latency")
}

// TestRequestPathHealthy: a healthy request path raises no symptom and
// nothing at 0.5 or above.
func TestRequestPathHealthy(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rep := requestPathOnly(t, seed)
			require.True(t, rep.Healthy, brief(rep))
			require.Empty(t, rep.Symptoms, brief(rep))
			require.Empty(t, rep.Warnings, "span metrics are a known vocabulary")
		})
	}
}
