package microsvc

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// graphRequests is one edge's requests per step (a counter's increase).
func (r *run) graphRequests(t testing.TB, metric, client, server string) []float64 {
	t.Helper()
	v := r.one(t, metric, "client", client, "server", server)
	out := make([]float64, len(v)-1)
	for i := 1; i < len(v); i++ {
		out[i-1] = v[i] - v[i-1]
	}
	return out
}

// TestGraphAddsOnlyTheGraph: with Graph the output is the same series
// plus the service graph's, whose edges are the application's call graph
// and the virtual user in front of the entry; the user's requests are the
// entry's.
func TestGraphAddsOnlyTheGraph(t *testing.T) {
	for _, style := range []string{StylePrometheus, StyleRCAEval} {
		cfg := Config{Seed: 6, Style: style}
		plain := generate(t, cfg, FaultSpec{Kind: FaultLatency, Service: "carts-db"})
		cfg.Graph = true
		withGraph := generate(t, cfg, FaultSpec{Kind: FaultLatency, Service: "carts-db"})
		graph := 0
		edges := map[string]bool{}
		for k, s := range withGraph.c.series {
			name := s.lset.Get("__name__")
			if strings.HasPrefix(name, "traces_service_graph_") {
				graph++
				edges[s.lset.Get("client")+" → "+s.lset.Get("server")] = true
				continue
			}
			require.Equal(t, plain.c.series[k].v, s.v, k)
		}
		require.Equal(t, len(plain.c.series)+graph, len(withGraph.c.series))
		require.Len(t, edges, 1+len(sockShop().edges))
		require.True(t, edges["user → front-end"])
		require.True(t, edges["carts → carts-db"])
		require.True(t, edges["rabbitmq → queue-master"])
		if style == StylePrometheus {
			fe := rate(withGraph.one(t, "http_server_request_duration_seconds_count", "service", "front-end"), cfg.Resolve().Step)
			user := withGraph.graphRequests(t, "traces_service_graph_request_total", "user", "front-end")
			for i := range fe {
				require.InDelta(t, fe[i]*cfg.Resolve().Step.Seconds(), user[i], 0.5)
			}
		}
	}
}

// TestGraphShowsTheFault: a delay in carts-db shows in the latency of the
// calls to it and of the calls to its callers (carts, and front-end's
// calls to carts), not in calls elsewhere; an availability fault of
// carts-db fails the calls to it and, whole, its callers' calls.
func TestGraphShowsTheFault(t *testing.T) {
	mean := func(r *run, client, server string) []float64 {
		sum := r.graphRequests(t, "traces_service_graph_request_server_seconds_sum", client, server)
		cnt := r.graphRequests(t, "traces_service_graph_request_server_seconds_count", client, server)
		out := make([]float64, len(sum))
		for i := range sum {
			out[i] = sum[i] / cnt[i]
		}
		return out
	}
	cfg := Config{Seed: 2, Graph: true}
	r := generate(t, cfg, FaultSpec{Kind: FaultLatency, Service: "carts-db"})
	split := r.onsetIndex()
	require.Greater(t, deviation(mean(r, "carts", "carts-db"), split), 6.0)
	require.Greater(t, deviation(mean(r, "front-end", "carts"), split), 6.0)
	require.Less(t, deviation(mean(r, "catalogue", "catalogue-db"), split), 3.0)

	r = generate(t, cfg, FaultSpec{Kind: FaultAvailability, Service: "carts-db"})
	truth := r.gen.Truth()[0]
	require.Equal(t, FaultAvailability, truth.Variant)
	require.GreaterOrEqual(t, truth.Severity, failMin)
	require.LessOrEqual(t, truth.Severity, failMax)
	split = r.onsetIndex()
	share := func(client, server string) float64 {
		failed := r.graphRequests(t, "traces_service_graph_request_failed_total", client, server)
		all := r.graphRequests(t, "traces_service_graph_request_total", client, server)
		f, a := 0.0, 0.0
		for i := split + 2; i < len(all); i++ {
			f, a = f+failed[i], a+all[i]
		}
		return f / a
	}
	p := truth.Severity
	require.InDelta(t, p, share("carts", "carts-db"), 0.05, "the calls to it fail")
	// carts makes 1.5 calls to carts-db per request: 1-(1-p)^1.5 of its
	// requests meet a failure.
	require.InDelta(t, 1-math.Pow(1-p, 1.5), share("front-end", "carts"), 0.05, "its callers' calls fail whole")
	require.Less(t, share("catalogue", "catalogue-db"), 0.01, "elsewhere nothing fails")
}

// TestGraphPromtool: promtool backfills a run with its service graph.
func TestGraphPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH (Debian: apt-get install prometheus)")
	}
	g, err := New(Config{Seed: 3, Graph: true}, FaultSpec{Kind: FaultAvailability})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, g.WriteOpenMetrics(t.Context(), &buf))
	require.Contains(t, buf.String(), "# TYPE traces_service_graph_request_server_seconds histogram\n")
	dir := t.TempDir()
	file := filepath.Join(dir, "metrics.om")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	out, err := exec.CommandContext(t.Context(), promtool, "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data")).CombinedOutput()
	require.NoError(t, err, "%s", out)
}
