package watch

import (
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
