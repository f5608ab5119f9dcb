package watch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
)

// loadedSource is a promqltest storage with its PromQL engine.
type loadedSource struct {
	*teststorage.TestStorage
	engine *promql.Engine
}

func (s loadedSource) Engine() promql.QueryEngine { return s.engine }

var _ Source = loadedSource{}

// TestBlindCycleHoldsIncidents: a cycle whose diagnosis is blind (data,
// none of it in a vocabulary Vigil knows) resolves no open incident and
// opens none, and says so in vigil_watch_blind; a cycle that sees the
// cluster, with nothing wrong, resolves it.
func TestBlindCycleHoldsIncidents(t *testing.T) {
	at := time.Unix(0, 0).Add(30 * time.Minute)
	f := func(data string, wantFiring bool, wantBlind float64) {
		t.Helper()
		tr, err := incident.Open(incident.Options{})
		require.NoError(t, err)
		_, err = tr.Observe(at.Add(-10*time.Minute), at, []incident.Observation{{
			Kind: diagnose.SymptomTrainingStall, Entity: diagnose.Entity{"namespace": "ml", "workload": "llm"},
			Severity: incident.SeverityPage, Summary: "ml/llm stalled", Source: "engine",
		}})
		require.NoError(t, err)
		eng, err := diagnose.New(diagnose.Options{})
		require.NoError(t, err)
		src := loadedSource{TestStorage: promqltest.LoadedStorage(t, data), engine: promqltest.NewTestEngine(t, false, 5*time.Minute, 10_000_000)}
		var changes []incident.Change
		w, err := New(Options{Source: src, Engine: eng, Tracker: tr, OnChange: func(c incident.Change) { changes = append(changes, c) }})
		require.NoError(t, err)
		require.NoError(t, w.Cycle(t.Context(), at))
		list := tr.List()
		require.Len(t, list, 1, "no incident opened: %+v", list)
		require.Equal(t, wantFiring, list[0].Firing())
		if wantFiring {
			require.Empty(t, changes)
			require.Equal(t, "ml/llm stalled", list[0].Summary)
		}
		require.Equal(t, wantBlind, testutil.ToFloat64(w.metrics.blind))
		rep, _ := w.Last()
		require.Equal(t, wantBlind == 1, rep.Blind())
	}
	f("load 30s\n  foo_requests_total{svc=\"a\"} 0+1x80\n", true, 1)
	f("load 30s\n  node_load1{instance=\"n1:9100\"} 1x80\n  node_uname_info{instance=\"n1:9100\",nodename=\"n1\"} 1x80\n", false, 0)
}

// TestSourceDownSkipsTheCycle: while an attached Vigil's backend does not
// answer its probe, a cycle evaluates nothing, resolves no open incident
// (even past resolve_after), re-pages none, and pages once that Vigil is
// blind, with why; once the backend answers, the cycle runs again and the
// blind page resolves.
func TestSourceDownSkipsTheCycle(t *testing.T) {
	at := time.Unix(0, 0).Add(30 * time.Minute)
	tr, err := incident.Open(incident.Options{ResolveAfter: time.Minute})
	require.NoError(t, err)
	stall := incident.Observation{
		Kind: diagnose.SymptomTrainingStall, Entity: diagnose.Entity{"namespace": "ml", "workload": "llm"},
		Severity: incident.SeverityPage, Summary: "ml/llm stalled", Source: "engine",
	}
	_, err = tr.Observe(at.Add(-10*time.Minute), at, []incident.Observation{stall})
	require.NoError(t, err)
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	src := loadedSource{TestStorage: promqltest.LoadedStorage(t, "load 30s\n  node_load1{instance=\"n1:9100\"} 1x80\n  node_uname_info{instance=\"n1:9100\",nodename=\"n1\"} 1x80\n"),
		engine: promqltest.NewTestEngine(t, false, 5*time.Minute, 10_000_000)}
	down := errors.New("query http://prom:9090/api/v1/query: connection refused")
	var probeErr error
	var changes []incident.Change
	w, err := New(Options{Source: src, Engine: eng, Tracker: tr, Probe: func(context.Context) error { return probeErr },
		OnChange: func(c incident.Change) { changes = append(changes, c) }})
	require.NoError(t, err)

	probeErr = down
	for i := range 6 { // 3 minutes of cycles, past resolve_after
		require.NoError(t, w.Cycle(t.Context(), at.Add(time.Duration(i)*30*time.Second)))
	}
	stalled, ok := tr.Get(incident.ID(stall.Kind, stall.Entity))
	require.True(t, ok)
	require.True(t, stalled.Firing(), "the open incident resolved while Vigil could not see")
	require.Equal(t, "ml/llm stalled", stalled.Summary)
	blindInc, ok := tr.Get(incident.ID(incident.KindBlind, diagnose.Entity{}))
	require.True(t, ok, "no page says Vigil is blind")
	require.True(t, blindInc.Firing())
	require.Contains(t, blindInc.Summary, "connection refused")
	require.Len(t, changes, 1, "only the blind page opens: %+v", changes)
	require.Equal(t, 0.0, testutil.ToFloat64(w.metrics.sourceUp))
	require.Equal(t, 6.0, testutil.ToFloat64(w.metrics.skipped))
	require.Equal(t, 0.0, testutil.ToFloat64(w.metrics.cycles))

	// Back: the cycle runs, sees a healthy node: both resolve in time.
	probeErr = nil
	for i := range 6 {
		require.NoError(t, w.Cycle(t.Context(), at.Add(3*time.Minute+time.Duration(i)*30*time.Second)))
	}
	require.Equal(t, 1.0, testutil.ToFloat64(w.metrics.sourceUp))
	require.Equal(t, 6.0, testutil.ToFloat64(w.metrics.cycles))
	for _, i := range tr.List() {
		require.False(t, i.Firing(), "%s still firing once the backend answers and the cluster is healthy", i.Kind)
	}
}
