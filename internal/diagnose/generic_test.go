package diagnose_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
	"github.com/vigil-obs/vigil/internal/store"
)

// diagnoseMicrosvc simulates a microservice application for an hour into
// a fresh store and diagnoses its end with --entity-label service.
func diagnoseMicrosvc(t *testing.T, cfg microsvc.Config, f microsvc.FaultSpec) (*microsvc.Generator, *diagnose.Report) {
	t.Helper()
	g, err := microsvc.New(cfg, f)
	require.NoError(t, err)
	var now time.Time
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	require.NoError(t, g.Run(t.Context(), st, microsvc.RunOptions{OnScrape: func(_ context.Context, at time.Time) error {
		now = at
		return nil
	}}))
	eng, err := diagnose.New(diagnose.Options{EntityLabel: "service"})
	require.NoError(t, err)
	rep, err := eng.Diagnose(t.Context(), st, now)
	require.NoError(t, err)
	return g, rep
}

// requireGeneric checks the generic layer's form: causes ranked 1..n,
// each a metric_anomaly of one known service, with evidence; no symptom.
func requireGeneric(t *testing.T, g *microsvc.Generator, rep *diagnose.Report) {
	t.Helper()
	services := map[string]bool{}
	for _, s := range g.Services() {
		services[s] = true
	}
	require.Empty(t, rep.Symptoms, "the generic layer finds no symptom")
	seen := map[string]bool{}
	for i, c := range rep.Causes {
		require.Equal(t, i+1, c.Rank)
		require.Equal(t, diagnose.KindMetricAnomaly, c.Kind)
		require.Len(t, c.Entity, 1, "entity %v", c.Entity)
		svc := c.Entity["service"]
		require.True(t, services[svc], "service %q", svc)
		require.False(t, seen[svc], "service %q ranked twice", svc)
		seen[svc] = true
		require.GreaterOrEqual(t, c.Confidence, 0.0)
		require.LessOrEqual(t, c.Confidence, 1.0)
		if i > 0 {
			require.LessOrEqual(t, c.Confidence, rep.Causes[i-1].Confidence, "best first")
		}
		require.NotEmpty(t, c.Evidence)
		require.NotEmpty(t, c.Summary)
	}
}

// rankOf is the rank of the cause that names service, 0 when none does.
func rankOf(rep *diagnose.Report, service string) int {
	for _, c := range rep.Causes {
		if c.Entity["service"] == service {
			return c.Rank
		}
	}
	return 0
}

// TestGenericFaults: on microservice data in both styles (Prometheus'
// cAdvisor and HTTP metrics; RCAEval's per-service columns) of both
// applications, --entity-label service ranks the faulty service first for
// CPU, memory and latency faults on seeds 1 to 3, and within the first
// three on at least 95% of seeds 1 to 5 (measured over seeds 1 to 10:
// 118 of 120 first; the two misses are RCAEval-style memory leaks, see
// the report of the tests' author). Each run costs about 0.1 s.
func TestGenericFaults(t *testing.T) {
	runs, top3 := 0, 0
	for _, app := range []string{microsvc.AppSockShop, microsvc.AppOnlineBoutique} {
		for _, style := range []string{microsvc.StylePrometheus, microsvc.StyleRCAEval} {
			for _, kind := range []string{microsvc.FaultCPU, microsvc.FaultMemory, microsvc.FaultLatency} {
				for seed := uint64(1); seed <= 5; seed++ {
					t.Run(fmt.Sprintf("%s/%s/%s/seed=%d", app, style, kind, seed), func(t *testing.T) {
						g, rep := diagnoseMicrosvc(t, microsvc.Config{Seed: seed, App: app, Style: style}, microsvc.FaultSpec{Kind: kind})
						requireGeneric(t, g, rep)
						truth := g.Truth()
						require.Len(t, truth, 1)
						require.Equal(t, diagnose.KindMetricAnomaly, truth[0].Kind)
						r := rankOf(rep, truth[0].Entity["service"])
						runs++
						if r >= 1 && r <= 3 {
							top3++
						}
						if seed <= 3 {
							require.Equal(t, 1, r, "%s\n%s", truth[0].Summary, brief(rep))
							require.GreaterOrEqual(t, rep.Causes[0].Confidence, 0.5)
							require.False(t, rep.Healthy)
						}
					})
				}
			}
		}
	}
	require.GreaterOrEqual(t, float64(top3)/float64(runs), 0.95, "AC@3 %d of %d", top3, runs)
}

// TestGenericHealthy: a healthy application with its decoys (a traffic
// spike, a container restart, a noisy service) has nothing at 0.5 or
// above.
func TestGenericHealthy(t *testing.T) {
	for _, style := range []string{microsvc.StylePrometheus, microsvc.StyleRCAEval} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", style, seed), func(t *testing.T) {
				g, rep := diagnoseMicrosvc(t, microsvc.Config{Seed: seed, Style: style}, microsvc.FaultSpec{})
				requireGeneric(t, g, rep)
				require.Empty(t, g.Truth())
				require.True(t, rep.Healthy, brief(rep))
				for _, c := range rep.Causes {
					require.Less(t, c.Confidence, 0.5, brief(rep))
				}
			})
		}
	}
}

// TestGenericNoLabel: an entity label no series carries gives no cause and
// a warning that says so.
func TestGenericNoLabel(t *testing.T) {
	run := simulate(t, "nvlink_degraded", 1)
	eng, err := diagnose.New(diagnose.Options{EntityLabel: "no_such_label"})
	require.NoError(t, err)
	rep, err := eng.Diagnose(t.Context(), run.st, run.end)
	require.NoError(t, err)
	require.Contains(t, rep.Warnings, `no series carries the label "no_such_label": the generic layer has nothing to rank`)
	c, ok := top(rep)
	require.True(t, ok)
	require.Equal(t, "nvlink_degraded", c.Kind, "the knowledge layer still runs")
	for _, c := range rep.Causes {
		require.NotEqual(t, diagnose.KindMetricAnomaly, c.Kind)
	}
}

// TestGenericServiceName: with --entity-label service, series that name
// the service by OpenTelemetry's service.name (service_name: span
// metrics, log-derived counters) rank among the others, as one entity.
func TestGenericServiceName(t *testing.T) {
	st := promqltest.LoadedStorage(t, `
load 30s
  requests{service="cart"} 10 11 10 12 10 11 10 12 10 11 10x90
  requests{service="search"} 10 11 10 12 10 11 10 12 10 11 10x90
  span_latency_seconds{service_name="search", span_kind="SPAN_KIND_SERVER"} 0.05 0.051 0.05 0.052 0.05 0.051 0.05x74 0.5x20
  span_latency_seconds{service_name="cart", span_kind="SPAN_KIND_SERVER"} 0.05 0.051 0.05 0.052 0.05 0.051 0.05x94
`)
	eng := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	e, err := diagnose.New(diagnose.Options{EntityLabel: "service"})
	require.NoError(t, err)
	rep, err := e.Diagnose(t.Context(), scriptSource{TestStorage: st, engine: eng}, time.Unix(0, 0).Add(50*time.Minute))
	require.NoError(t, err)
	require.NotEmpty(t, rep.Causes, brief(rep))
	require.Equal(t, diagnose.Entity{"service": "search"}, rep.Causes[0].Entity, brief(rep))
	require.Contains(t, rep.Causes[0].Evidence[0].Signal, `span_latency_seconds{span_kind="SPAN_KIND_SERVER"}`)
	for _, c := range rep.Causes {
		require.NotContains(t, c.Entity, "service_name", "one entity vocabulary")
	}
}

// TestGenericShortHistory: a change four minutes into the data is ranked,
// and the report says how little it had to judge by.
func TestGenericShortHistory(t *testing.T) {
	st := promqltest.LoadedStorage(t, `
load 1m
  cpu_percent{service="cart"} 20 21 20 22 95 96 95 97 96 95 96
  cpu_percent{service="shop"} 20 21 20 22 20 21 20 22 20 21 20
`)
	eng := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	e, err := diagnose.New(diagnose.Options{EntityLabel: "service", Window: 10 * time.Minute, Step: time.Minute})
	require.NoError(t, err)
	rep, err := e.Diagnose(t.Context(), scriptSource{TestStorage: st, engine: eng}, time.Unix(0, 0).Add(10*time.Minute))
	require.NoError(t, err)
	require.NotEmpty(t, rep.Causes, brief(rep))
	require.Equal(t, diagnose.Entity{"service": "cart"}, rep.Causes[0].Entity, brief(rep))
	require.Contains(t, rep.Warnings, "the generic layer had 4 readings (4m0s) before the onset at 00:04:00 to judge each series by: spreads from so few are rough")
}
