package hops

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

const (
	server   = ptrace.SpanKindServer
	client   = ptrace.SpanKindClient
	internal = ptrace.SpanKindInternal
)

// sequential is a root that calls c, then works on its own.
func sequential() ptrace.Traces {
	return build(
		tspan{service: "a", name: "GET /x", kind: server, id: 1, dur: 100 * ms, attrs: map[string]any{"http.route": "/x"}},
		tspan{service: "a", name: "call c", kind: client, id: 2, parent: 1, start: 10 * ms, dur: 30 * ms},
		tspan{service: "c", name: "GET /c", kind: server, id: 3, parent: 2, start: 12 * ms, dur: 26 * ms},
		tspan{service: "a", name: "render", kind: internal, id: 4, parent: 1, start: 50 * ms, dur: 40 * ms},
	)
}

func TestBreakdownSequential(t *testing.T) {
	tr := Breakdown(sequential())
	require.Equal(t, "ab000000000000000000000000000001", tr.TraceID)
	require.Equal(t, "/x", tr.Route)
	require.Equal(t, "GET /x", tr.RootOperation)
	require.Equal(t, 100*ms, tr.Duration.D())
	require.Equal(t, map[string]time.Duration{"a": 74 * ms, "c": 26 * ms}, exclusive(tr))
	type seg struct {
		name     string
		from, to time.Duration
	}
	var got []seg
	for _, s := range tr.CriticalPath {
		got = append(got, seg{s.Name, s.Offset.D(), s.Offset.D() + s.Duration.D()})
	}
	require.Equal(t, []seg{
		{"GET /x", 0, 10 * ms}, {"call c", 10 * ms, 12 * ms}, {"GET /c", 12 * ms, 38 * ms}, {"call c", 38 * ms, 40 * ms},
		{"GET /x", 40 * ms, 50 * ms}, {"render", 50 * ms, 90 * ms}, {"GET /x", 90 * ms, 100 * ms},
	}, got)
	require.Equal(t, 4*ms, spanByName(t, tr, "call c").Critical.D())
	require.Equal(t, []string{"GET /x", "call c", "GET /c", "render"}, names(tr))
	require.Equal(t, []int{0, 1, 2, 1}, depths(tr))
	require.Empty(t, tr.Warnings)
}

func names(tr Trace) []string {
	var out []string
	for _, s := range tr.Spans {
		out = append(out, s.Name)
	}
	return out
}

func depths(tr Trace) []int {
	var out []int
	for _, s := range tr.Spans {
		out = append(out, s.Depth)
	}
	return out
}

func TestBreakdownConcurrentFanOut(t *testing.T) {
	tr := Breakdown(build(
		tspan{service: "r", name: "root", kind: server, id: 1, dur: 100 * ms},
		tspan{service: "r", name: "to x", kind: client, id: 2, parent: 1, start: 10 * ms, dur: 50 * ms, attrs: map[string]any{"peer.service": "x"}},
		tspan{service: "r", name: "to y", kind: client, id: 3, parent: 1, start: 10 * ms, dur: 70 * ms, attrs: map[string]any{"peer.service": "y"}},
		tspan{service: "r", name: "to z", kind: client, id: 4, parent: 1, start: 10 * ms, dur: 20 * ms, attrs: map[string]any{"peer.service": "z"}},
		// After the fan-out, two more calls in sequence, the second
		// starting when the first ends.
		tspan{service: "r", name: "to w1", kind: client, id: 5, parent: 1, start: 80 * ms, dur: 5 * ms, attrs: map[string]any{"peer.service": "w"}},
		tspan{service: "r", name: "to w2", kind: client, id: 6, parent: 1, start: 85 * ms, dur: 10 * ms, attrs: map[string]any{"peer.service": "w"}},
	))
	// Only the last to finish of the fan-out is on the path; x and z ran
	// in its shadow. The leaf client spans count for the services they
	// call (virtual nodes).
	require.Equal(t, map[string]time.Duration{"r": 15 * ms, "y": 70 * ms, "w": 15 * ms}, exclusive(tr))
	require.Zero(t, spanByName(t, tr, "to x").Critical)
	require.Equal(t, "y", spanByName(t, tr, "to y").Node)
	for _, s := range tr.Services {
		if s.Service != "r" {
			require.True(t, s.Virtual, s.Service)
			require.Equal(t, RoleExternal, s.Role)
		}
	}
	require.InDelta(t, 1, shareSum(tr.Services), 1e-12)
}

func TestBreakdownAsyncChildren(t *testing.T) {
	tr := Breakdown(build(
		tspan{service: "r", name: "root", kind: server, id: 1, dur: 100 * ms},
		// Outlives the parent: only its part inside the parent counts.
		tspan{service: "q", name: "outliver", kind: server, id: 2, parent: 1, start: 50 * ms, dur: 150 * ms},
		// FOLLOWS_FROM: off the path though it ends after "outliver" starts.
		tspan{service: "f", name: "audit", kind: internal, id: 3, parent: 1, start: 20 * ms, dur: 60 * ms, followsFrom: 1},
		// A parentless FOLLOWS_FROM span joins the trace under its link.
		tspan{service: "f", name: "later", kind: internal, id: 4, start: 90 * ms, dur: 200 * ms, followsFrom: 3},
		// A consumer of a producer is asynchronous too.
		tspan{service: "r", name: "publish", kind: ptrace.SpanKindProducer, id: 5, parent: 1, start: 10 * ms, dur: 5 * ms},
		tspan{service: "k", name: "consume", kind: ptrace.SpanKindConsumer, id: 6, parent: 5, start: 12 * ms, dur: 30 * ms},
	))
	require.Equal(t, "root", tr.RootOperation)
	require.Equal(t, map[string]time.Duration{"r": 50 * ms, "q": 50 * ms}, exclusive(tr))
	for _, name := range []string{"audit", "later", "consume"} {
		s := spanByName(t, tr, name)
		require.True(t, s.Async, name)
		require.Zero(t, s.Critical, name)
	}
	require.False(t, spanByName(t, tr, "outliver").Async)
	require.Equal(t, 2, spanByName(t, tr, "later").Depth)
	require.Equal(t, 5*ms, spanByName(t, tr, "publish").Critical.D())
	require.Empty(t, tr.Warnings)
}

func TestBreakdownClockSkew(t *testing.T) {
	tr := Breakdown(build(
		tspan{service: "a", name: "call b", kind: client, id: 1, start: 100 * ms, dur: 100 * ms},
		// b's clock is 50 ms behind: its server span starts before the
		// client's. It is moved, with its child, to the middle.
		tspan{service: "b", name: "serve", kind: server, id: 2, parent: 1, start: 50 * ms, dur: 90 * ms},
		tspan{service: "b", name: "work", kind: internal, id: 3, parent: 2, start: 60 * ms, dur: 10 * ms},
		// A child of the same service that starts before its parent is cut.
		tspan{service: "b", name: "early", kind: internal, id: 4, parent: 2, start: 40 * ms, dur: 30 * ms},
	))
	serve := spanByName(t, tr, "serve")
	require.Equal(t, 55*ms, serve.Shift.D())
	require.Equal(t, 5*ms, serve.Offset.D())
	require.Equal(t, 55*ms, spanByName(t, tr, "work").Shift.D())
	require.Equal(t, 15*ms, spanByName(t, tr, "work").Offset.D())
	// early is [-5, 25] after the shift, cut to [5, 25]; work [15, 25] ends
	// with it, and the longer one wins.
	require.Equal(t, 20*ms, spanByName(t, tr, "early").Critical.D())
	require.Zero(t, spanByName(t, tr, "work").Critical)
	require.Equal(t, map[string]time.Duration{"a": 10 * ms, "b": 90 * ms}, exclusive(tr))
	require.Len(t, tr.Warnings, 1)
	require.Contains(t, tr.Warnings[0], "clock skew")
}

func TestBreakdownOrphansAndCycles(t *testing.T) {
	tr := Breakdown(build(
		tspan{service: "a", name: "root", kind: server, id: 1, dur: 100 * ms},
		tspan{service: "b", name: "orphan", kind: server, id: 2, parent: 9, start: 10 * ms, dur: 20 * ms},
		tspan{service: "c", name: "cycle 1", kind: internal, id: 3, parent: 4, start: 40 * ms, dur: 10 * ms},
		tspan{service: "c", name: "cycle 2", kind: internal, id: 4, parent: 3, start: 45 * ms, dur: 1 * ms},
		tspan{service: "d", name: "self", kind: internal, id: 5, parent: 5, start: 60 * ms, dur: 1 * ms},
	))
	require.Equal(t, "root", tr.RootOperation, "a span that is its own parent is no root")
	require.Len(t, tr.Spans, 5)
	require.True(t, spanByName(t, tr, "orphan").Orphan)
	// The span that is its own parent is an orphan too.
	require.True(t, spanByName(t, tr, "self").Orphan)
	require.Equal(t, map[string]time.Duration{"a": 69 * ms, "b": 20 * ms, "c": 10 * ms, "d": ms}, exclusive(tr))
	require.Contains(t, tr.Warnings[0], "no parent")
}

func TestBreakdownEdgeCases(t *testing.T) {
	require.Empty(t, Breakdown(ptrace.NewTraces()).TraceID)
	// Two traces: the second is left out, with a warning.
	td := sequential()
	other := build(tspan{service: "z", name: "other", kind: server, id: 1, dur: ms})
	other.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetTraceID([16]byte{1})
	other.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	tr := Breakdown(td)
	require.Len(t, tr.Spans, 4)
	require.Contains(t, tr.Warnings[0], "1 spans of other traces")
	// A zero-length root: no shares, no division by zero.
	tr = Breakdown(build(tspan{service: "a", name: "x", kind: server, id: 1}))
	require.Len(t, tr.Services, 0)
	require.NoError(t, WriteText(&bytes.Buffer{}, tr))
}

func TestBreakdownOfSimulatedTraces(t *testing.T) {
	start := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	g, err := reqpath.New(reqpath.Config{Seed: 3, Start: start, Duration: 2 * time.Minute})
	require.NoError(t, err)
	n, withTool := 0, 0
	for b := range g.Batches() {
		for _, td := range byTrace(b.Traces) {
			tr := Breakdown(td)
			n++
			var sum time.Duration
			for _, s := range tr.Services {
				sum += s.Exclusive.D()
			}
			require.Equal(t, tr.Duration.D(), sum, "trace %s", tr.TraceID)
			require.InDelta(t, 1, shareSum(tr.Services), 1e-9)
			require.Equal(t, td.SpanCount(), len(tr.Spans))
			require.Empty(t, tr.Warnings)
			roles := map[string]string{}
			for _, s := range tr.Services {
				roles[s.Service] = s.Role
			}
			if len(tr.Services) > 1 { // not rate-limited at the gateway
				require.Equal(t, RoleGateway, roles["api-gateway"], tr.TraceID)
			}
			if _, ok := roles["vllm-llama-3-1-8b"]; ok {
				require.Equal(t, RoleInference, roles["vllm-llama-3-1-8b"])
			}
			if _, ok := roles["vector-db"]; ok {
				require.Equal(t, RoleVector, roles["vector-db"])
			}
			if r, ok := roles["web-search-api"]; ok {
				require.Equal(t, RoleTool, r)
				withTool++
			}
			if _, ok := roles["ai-app"]; ok {
				require.Equal(t, RoleApplication, roles["ai-app"])
			}
		}
	}
	require.Greater(t, n, 100)
	require.Greater(t, withTool, 10)
}

func TestWriteTextGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, Breakdown(sequential())))
	golden(t, "sequential.txt", buf.Bytes())
	b, err := json.MarshalIndent(Breakdown(sequential()), "", "  ")
	require.NoError(t, err)
	golden(t, "sequential.json", append(b, '\n'))
	var back Trace
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, Breakdown(sequential()), back)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), string(got))
}

func TestHuman(t *testing.T) {
	f := func(d time.Duration, want string) {
		t.Helper()
		require.Equal(t, want, human(d))
	}
	f(0, "0 ms")
	f(3200*time.Microsecond, "3.2 ms")
	f(40*ms, "40 ms")
	f(420*ms, "420 ms")
	f(6400*ms, "6.4 s")
	f(950*ms, "950 ms")
	f(125*time.Second, "2m05s")
	f(-5*ms, "-5.0 ms")
}
