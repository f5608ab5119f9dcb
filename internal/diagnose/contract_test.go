package diagnose_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/store"
)

// errStop ends a simulation early.
var errStop = errors.New("stop")

// simulateUntil runs the simulation of run up to and including the scrape
// at until into a fresh store: the store holds exactly the data of run up
// to until.
func simulateUntil(t *testing.T, run *simRun, until time.Time) *store.Embedded {
	t.Helper()
	clock := sim.NewClock(run.sim.Config().Start)
	scfg := store.DefaultEmbeddedConfig(t.TempDir())
	scfg.MaxExemplars = 0
	st, err := store.OpenEmbedded(scfg, clock.Now, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	err = run.sim.Run(t.Context(), st, sim.RunOptions{Clock: clock, OnScrape: func(_ context.Context, sc sim.Scrape) error {
		if !sc.At.Before(until) {
			return errStop
		}
		return nil
	}})
	require.ErrorIs(t, err, errStop)
	require.True(t, clock.Now().Equal(until), "stopped at %s", clock.Now())
	return st
}

func marshal(t *testing.T, rep *diagnose.Report) string {
	t.Helper()
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	return string(b)
}

// TestDiagnoseAt: --at is the evaluation time. Five minutes before the
// onset of an NVLink fault the cluster is healthy; three minutes after it,
// the diagnosis of the whole run is byte for byte that of a store that
// holds only the data up to then; the same data gives the same bytes
// twice, from two stores.
func TestDiagnoseAt(t *testing.T) {
	run := simulate(t, "nvlink_degraded", 1)
	onset := run.truth[0].Onset

	before := diagnoseAt(t, run.st, onset.Add(-5*time.Minute))
	require.True(t, before.Healthy, brief(before))
	require.Empty(t, before.Symptoms, brief(before))
	require.True(t, before.At.Equal(onset.Add(-5*time.Minute)))

	at := onset.Add(3 * time.Minute)
	full := diagnoseAt(t, run.st, at)
	require.False(t, full.Healthy, "3 minutes after the onset the fault shows\n%s", brief(full))
	require.True(t, full.At.Equal(at))
	got := marshal(t, full)
	require.Equal(t, got, marshal(t, diagnoseAt(t, run.st, at)), "the same data gives the same bytes")

	cut := simulateUntil(t, run, at)
	require.Equal(t, got, marshal(t, diagnoseAt(t, cut, at)), "data after --at is ignored")

	end := marshal(t, diagnoseAt(t, run.st, run.end))
	require.Equal(t, end, marshal(t, diagnoseAt(t, run.st, run.end)))
	require.NotEqual(t, got, end)
}

// TestDiagnoseNoData: no sample at or before the evaluation time within
// the window is ErrNoData (exit 2 in vigil diagnose).
func TestDiagnoseNoData(t *testing.T) {
	run := simulate(t, sim.Healthy, 1)
	start := run.sim.Config().Start
	eng, err := diagnose.New(diagnose.Options{Window: 10 * time.Minute})
	require.NoError(t, err)
	for _, at := range []time.Time{start.Add(-time.Hour), run.end.Add(time.Hour)} {
		_, err := eng.Diagnose(t.Context(), run.st, at)
		require.ErrorIs(t, err, diagnose.ErrNoData, "at %s", at)
	}
	rep, err := eng.Diagnose(t.Context(), run.st, start)
	require.NoError(t, err, "one sample at --at is enough")
	require.True(t, rep.Healthy, brief(rep))
}

// TestOptionsValidate checks the options' bounds with their messages.
func TestOptionsValidate(t *testing.T) {
	f := func(o diagnose.Options, want string) {
		t.Helper()
		_, err := diagnose.New(o)
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.EqualError(t, err, want)
	}
	f(diagnose.Options{}, "")
	f(diagnose.Options{Window: 10 * time.Second}, "step 30s is longer than the window 10s")
	f(diagnose.Options{Window: 10 * time.Minute, Step: time.Minute}, "")
	f(diagnose.Options{Window: 24 * time.Hour, Step: time.Second}, "window 24h0m0s holds more than 11000 steps of 1s")
}
