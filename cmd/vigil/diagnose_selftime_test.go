package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// selfTimeTraces writes 40 minutes of requests as OTLP JSON, one export
// request per 10 s of them: front calls back, which calls cache (whose
// time varies widely from request to request) and then db, all as SERVER
// spans under each other. From the 30th minute on, back's own work takes
// backExtra longer and db's call dbExtra longer. It returns the file and
// the fault's start.
func selfTimeTraces(t *testing.T, backExtra, dbExtra time.Duration) (string, time.Time) {
	t.Helper()
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	onset := start.Add(30 * time.Minute)
	rng := rand.New(rand.NewPCG(7, 11))
	ms := time.Millisecond
	var out bytes.Buffer
	var m ptrace.JSONMarshaler
	td := ptrace.NewTraces()
	flush := func() {
		if td.SpanCount() == 0 {
			return
		}
		b, err := m.MarshalTraces(td)
		require.NoError(t, err)
		out.Write(b)
		out.WriteByte('\n')
		td = ptrace.NewTraces()
	}
	add := func(tid pcommon.TraceID, service, name string, id, parent byte, from, to time.Time) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{7: id})
		if parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{7: parent})
		}
		sp.SetName(name)
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(from))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(to))
	}
	jitter := func() time.Duration { return time.Duration(rng.Int64N(int64(ms))) }
	n := uint64(0)
	for at := start; at.Before(start.Add(40 * time.Minute)); at = at.Add(2 * time.Second) {
		if at.Sub(start)%(10*time.Second) == 0 {
			flush()
		}
		n++
		var tid pcommon.TraceID
		tid[0], tid[8] = byte(n>>8), byte(n)
		own, dbDur := 10*ms+jitter(), 20*ms+jitter()
		if !at.Before(onset) {
			own, dbDur = own+backExtra, dbDur+dbExtra
		}
		cacheDur := 60*ms + time.Duration(rng.Int64N(int64(80*ms)))
		backFrom := at.Add(2 * ms)
		cacheFrom := backFrom.Add(own / 2)
		dbFrom := cacheFrom.Add(cacheDur)
		backTo := dbFrom.Add(dbDur + own - own/2)
		// Children end, and are exported, before their parents.
		add(tid, "cache", "get", 3, 2, cacheFrom, cacheFrom.Add(cacheDur))
		add(tid, "db", "query", 4, 2, dbFrom, dbFrom.Add(dbDur))
		add(tid, "back", "GET /item", 2, 1, backFrom, backTo)
		add(tid, "front", "GET /", 1, 0, at, backTo.Add(3*ms+jitter()))
	}
	flush()
	path := filepath.Join(t.TempDir(), "traces.otlp.json")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	return path, onset
}

// TestDiagnoseSelfTime: from OTLP traces alone, a service whose own work
// slows is ranked first by its self time (duration less its children's),
// which its callers' whole durations do not show; it is at half the size
// too. A caller whose callee slowed (back, over db) is not: its self time
// did not move.
func TestDiagnoseSelfTime(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name               string
		backExtra, dbExtra time.Duration
		want               string
	}{
		{name: "own work slows", backExtra: 30 * ms, want: "back"},
		{name: "half the size", backExtra: 15 * ms, want: "back"},
		{name: "decoy: its callee slows", dbExtra: 30 * ms, want: "db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := selfTimeTraces(t, tc.backExtra, tc.dbExtra)
			rep, _ := diagnoseJSON(t, "--input", path, "--entity-label", "service")
			require.NotEmpty(t, rep.Causes)
			top := rep.Causes[0]
			require.Equal(t, diagnose.KindMetricAnomaly, top.Kind)
			require.Equal(t, tc.want, top.Entity["service"], "causes: %v", causeList(rep))
			require.NotEmpty(t, top.Evidence)
			if tc.want == "back" {
				require.Contains(t, top.Evidence[0].Query, "traces_span_metrics_self_seconds", "the evidence is the self time: %+v", top.Evidence[0])
			}
			for _, c := range rep.Causes {
				if c.Entity["service"] == "back" && tc.want != "back" {
					for _, ev := range c.Evidence {
						require.NotContains(t, ev.Query, "traces_span_metrics_self_seconds", "the caller's self time did not move")
					}
				}
			}
		})
	}
}

// causeList writes the ranked causes for a failure message.
func causeList(rep diagnose.Report) string {
	var b strings.Builder
	for _, c := range rep.Causes {
		b.WriteString(c.Entity["service"])
		if len(c.Evidence) > 0 {
			b.WriteString(" (" + c.Evidence[0].Query + ")")
		}
		b.WriteString("; ")
	}
	return b.String()
}
