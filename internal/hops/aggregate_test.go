package hops

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
	"github.com/vigil-obs/vigil/internal/traces"
)

// simStart is when the simulated request path starts.
var simStart = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

// simStore stores d of the simulated request path, the vector DB slowed
// down from simStart+slowAt (not at all when slowAt is 0), in a store in a temporary directory; it
// returns the store and how many requests started in each minute.
func simStore(t *testing.T, d, slowAt time.Duration) (*traces.Store, map[time.Time]int) {
	t.Helper()
	cfg := traces.DefaultConfig()
	cfg.Dir = t.TempDir()
	end := simStart.Add(d)
	st, err := traces.Open(cfg, nil, nil, func() time.Time { return end })
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	var faults []reqpath.Fault
	if slowAt > 0 {
		faults = append(faults, reqpath.Fault{Kind: reqpath.KindDependencySlow, Entity: map[string]string{"service": "vector-db"},
			Onset: simStart.Add(slowAt), Severity: 8})
	}
	g, err := reqpath.New(reqpath.Config{Seed: 11, Start: simStart, Duration: d, Faults: faults})
	require.NoError(t, err)
	perMinute := map[time.Time]int{}
	for b := range g.Batches() {
		require.NoError(t, st.ConsumeTraces(t.Context(), b.Traces))
		for _, td := range byTrace(b.Traces) {
			tr := Breakdown(td)
			perMinute[tr.Start.Truncate(time.Minute)]++
		}
	}
	return st, perMinute
}

func TestAggregate(t *testing.T) {
	st, perMinute := simStore(t, 20*time.Minute, 10*time.Minute)
	before, err := Aggregate(t.Context(), st, "/v1/chat", simStart, simStart.Add(10*time.Minute-time.Nanosecond))
	require.NoError(t, err)
	after, err := Aggregate(t.Context(), st, "POST /v1/chat", simStart.Add(10*time.Minute), simStart.Add(20*time.Minute))
	require.NoError(t, err)

	want := 0
	for m, n := range perMinute {
		if m.Before(simStart.Add(10 * time.Minute)) {
			want += n
		}
	}
	require.Equal(t, want, before.Traces)
	require.Equal(t, "/v1/chat", before.Route)
	require.Equal(t, "POST /v1/chat", after.Route)
	require.Equal(t, MaxTraces, before.Sampled)
	require.Len(t, before.Slowest, slowestKept)
	require.Equal(t, before.Max, before.Slowest[0].Duration)
	for i := 1; i < len(before.Slowest); i++ {
		require.GreaterOrEqual(t, before.Slowest[i-1].Duration, before.Slowest[i].Duration)
	}
	require.LessOrEqual(t, before.P50, before.P95)
	require.LessOrEqual(t, before.P95, before.Max)

	svc := func(rb RouteBreakdown) map[string]ServiceStats {
		out := map[string]ServiceStats{}
		share := 0.0
		for _, s := range rb.Services {
			out[s.Service] = s
			share += s.Share
		}
		require.InDelta(t, 1, share, 1e-9)
		return out
	}
	b, a := svc(before), svc(after)
	require.Equal(t, []string{"api-gateway", "ai-app", "vector-db"}, serviceNames(before)[:3], "in the order they are called")
	require.Equal(t, RoleVector, b["vector-db"].Role)
	require.Equal(t, RoleTool, b["web-search-api"].Role)
	require.True(t, b["web-search-api"].Virtual)
	// The slowed-down vector DB: its median time on the path and share grow.
	require.Greater(t, a["vector-db"].P50.D(), 4*b["vector-db"].P50.D())
	require.Greater(t, a["vector-db"].Share, 2*b["vector-db"].Share)
	require.Less(t, b["vector-db"].P50.D(), b["vllm-llama-3-1-8b"].P50.D())

	// An unknown route and an empty window give no traces.
	none, err := Aggregate(t.Context(), st, "/nope", simStart, simStart.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, none.Traces)
	require.Empty(t, none.Services)
	_, err = Aggregate(t.Context(), st, "", simStart, simStart.Add(time.Hour))
	require.Error(t, err)

	routes, err := Routes(t.Context(), st, simStart, simStart.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, routes, 1)
	require.Equal(t, "POST /v1/chat", routes[0].Route)
	require.Equal(t, before.Traces+after.Traces, routes[0].Traces)
}

func serviceNames(rb RouteBreakdown) []string {
	var out []string
	for _, s := range rb.Services {
		out = append(out, s.Service)
	}
	return out
}

func TestHandler(t *testing.T) {
	st, _ := simStore(t, 3*time.Minute, 0)
	now := func() time.Time { return simStart.Add(3 * time.Minute) }
	srv := httptest.NewServer(NewHandler(st, now, nil))
	defer srv.Close()
	get := func(path string) (int, map[string]json.RawMessage) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var env map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &env), string(b))
		return resp.StatusCode, env
	}

	code, env := get("/api/v1/slow")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `"success"`, string(env["status"]))
	var res SlowResult
	require.NoError(t, json.Unmarshal(env["data"], &res))
	require.Len(t, res.Routes, 1)
	require.Equal(t, now().Add(-DefaultWindow), res.From)
	require.NotEmpty(t, res.Routes[0].Slowest)

	id := res.Routes[0].Slowest[0].TraceID
	code, env = get("/api/v1/traces/" + id + "/breakdown")
	require.Equal(t, http.StatusOK, code)
	var tr Trace
	require.NoError(t, json.Unmarshal(env["data"], &tr))
	require.Equal(t, id, tr.TraceID)
	require.Equal(t, res.Routes[0].Slowest[0].Duration, tr.Duration)

	code, env = get("/api/v1/slow?route=/v1/chat&window=1m&end=" + now().Add(-time.Minute).Format(time.RFC3339))
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(env["data"], &res))
	require.Equal(t, "/v1/chat", res.Routes[0].Route)
	require.Equal(t, simStart.Add(time.Minute), res.From)

	for path, want := range map[string]int{
		"/api/v1/traces/xyz/breakdown":                              http.StatusBadRequest,
		"/api/v1/traces/00000000000000000000000000000000/breakdown": http.StatusBadRequest,
		"/api/v1/traces/0123456789abcdef0123456789abcdef/breakdown": http.StatusNotFound,
		"/api/v1/slow?window=fortnight":                             http.StatusBadRequest,
		"/api/v1/slow?window=-5m":                                   http.StatusBadRequest,
		"/api/v1/slow?end=yesterday":                                http.StatusBadRequest,
	} {
		code, env := get(path)
		require.Equal(t, want, code, path)
		require.JSONEq(t, `"error"`, string(env["status"]), path)
		require.NotEmpty(t, env["error"], path)
	}
}
