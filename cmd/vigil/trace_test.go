package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/hops"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
	"github.com/vigil-obs/vigil/internal/traces"
)

// traceAPI is a trace store holding a simulated request path, served as
// vigil serve serves it.
type traceAPI struct {
	url string
	// end is the server's clock: the end of the simulated run.
	end time.Time
	// traceID is a trace with a tool call, requestID the request id of
	// another one, with the number of log records it has.
	traceID, requestID string
	requestLogs        int
}

func startTraceAPI(t *testing.T) traceAPI {
	t.Helper()
	start := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	api := traceAPI{end: start.Add(5 * time.Minute)}
	cfg := traces.DefaultConfig()
	cfg.Dir = t.TempDir()
	now := func() time.Time { return api.end }
	st, err := traces.Open(cfg, nil, nil, now)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	g, err := reqpath.New(reqpath.Config{Seed: 5, Start: start, Duration: 5 * time.Minute})
	require.NoError(t, err)
	for b := range g.Batches() {
		require.NoError(t, st.ConsumeTraces(t.Context(), b.Traces))
		require.NoError(t, st.ConsumeLogs(t.Context(), b.Logs))
		rss := b.Traces.ResourceSpans()
		for i := range rss.Len() {
			sss := rss.At(i).ScopeSpans()
			for j := range sss.Len() {
				spans := sss.At(j).Spans()
				for k := range spans.Len() {
					sp := spans.At(k)
					switch {
					case api.traceID == "" && sp.Name() == "execute_tool web_search":
						api.traceID = sp.TraceID().String()
					case api.requestID == "" && sp.ParentSpanID().IsEmpty() && sp.TraceID().String() != api.traceID:
						v, _ := sp.Attributes().Get("request.id")
						api.requestID = v.Str()
						api.requestLogs = countLogs(b, api.requestID)
					}
				}
			}
		}
	}
	require.NotEmpty(t, api.traceID)
	require.NotEmpty(t, api.requestID)
	mux := http.NewServeMux()
	th, hh := traces.NewHandler(st, nil), hops.NewHandler(st, now, nil)
	for _, p := range []string{"GET /api/v1/traces", "GET /api/v1/traces/{id}", "GET /api/v1/logs"} {
		mux.Handle(p, th)
	}
	for _, p := range []string{"GET /api/v1/traces/{id}/breakdown", "GET /api/v1/slow"} {
		mux.Handle(p, hh)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	api.url = srv.URL
	return api
}

// countLogs counts the log records of b whose request.id is id.
func countLogs(b reqpath.Batch, id string) int {
	c := 0
	for i := range b.Logs.ResourceLogs().Len() {
		sls := b.Logs.ResourceLogs().At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				if v, ok := lrs.At(k).Attributes().Get("request.id"); ok && v.Str() == id {
					c++
				}
			}
		}
	}
	return c
}

func TestTraceCommand(t *testing.T) {
	api := startTraceAPI(t)

	r := runVigil(t, "", "trace", api.traceID, "--server", api.url)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Contains(t, r.stdout, "trace "+api.traceID)
	require.Regexp(t, `critical path: API gateway [0-9.]+ ms, application [0-9.]+ ms, vector search [0-9.]+ ms, model inference [0-9.]+ s, external tool`, r.stdout)
	require.Contains(t, r.stdout, "ai-app GET (→ web-search-api)")

	r = runVigil(t, "", "trace", strings.ToUpper(api.traceID), "--server", api.url+"/", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	bd := decodeOne[hops.Trace](t, r.stdout)
	require.Equal(t, api.traceID, bd.TraceID)
	var sum time.Duration
	for _, s := range bd.Services {
		sum += s.Exclusive.D()
	}
	require.Equal(t, bd.Duration.D(), sum)

	// The server's own breakdown is the same.
	code, body := httpGetBody(t, api.url+"/api/v1/traces/"+api.traceID+"/breakdown")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"trace_id":"`+api.traceID+`"`)
}

func TestTraceBadInput(t *testing.T) {
	api := startTraceAPI(t)
	requireUsage(t, runVigil(t, "", "trace"), "accepts 1 arg(s), received 0")
	requireUsage(t, runVigil(t, "", "trace", "xyz", "--server", api.url), `trace: trace id "xyz": want 32 hex digits`)
	requireUsage(t, runVigil(t, "", "trace", strings.Repeat("0", 32), "--server", api.url), "all zeros")
	requireUsage(t, runVigil(t, "", "trace", strings.Repeat("ab", 16), "--server", api.url), "holds no trace "+strings.Repeat("ab", 16))
	requireUsage(t, runVigil(t, "", "trace", api.traceID, "--server", "localhost:9700"), "is not an http:// or https:// URL")
	r := runVigil(t, "", "trace", api.traceID, "--server", "http://127.0.0.1:1")
	require.Equal(t, 1, r.code)
	requireOneLine(t, r, "trace:")
	// A server that is not Vigil.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	r = runVigil(t, "", "trace", api.traceID, "--server", other.URL, "--json")
	require.Equal(t, 1, r.code)
	requireOneLine(t, r, "not Vigil's API")
}

// httpGetBody GETs url and returns the status and body.
func httpGetBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var sb strings.Builder
	_, err = io.Copy(&sb, resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, sb.String()
}
