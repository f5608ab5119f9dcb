package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
)

// twoCases are an nvlink_degraded run and a healthy one, ten minutes each,
// a day apart so that a fake engine tells them apart by the time it is
// asked about.
func twoCases(t *testing.T) ([]Case, sim.Fault) {
	t.Helper()
	faulty := Case{Suite: "test", Scenario: "nvlink_degraded", Seed: 7, Config: sim.Config{Duration: 10 * time.Minute}}
	healthy := Case{Suite: "test", Scenario: sim.Healthy, Seed: 7, Config: sim.Config{Duration: 10 * time.Minute, Start: sim.DefaultStart.Add(24 * time.Hour)}}
	sc, err := sim.ParseScenario(faulty.Scenario)
	require.NoError(t, err)
	s, err := sim.New(sim.Config{Seed: faulty.Seed, Duration: faulty.Config.Duration}, sc)
	require.NoError(t, err)
	require.Len(t, s.Truth(), 1)
	return []Case{faulty, healthy}, s.Truth()[0]
}

// fakeEngine answers about truth from detectAfter after its onset on, with
// kind and entity (the truth's when empty), and reads src to prove that a
// store with the run's data is what it is given.
func fakeEngine(t *testing.T, truth sim.Fault, detectAfter time.Duration, kind string, entity map[string]string) DiagnoseFunc {
	if kind == "" {
		kind = truth.Kind
	}
	if entity == nil {
		entity = truth.Entity
	}
	return func(ctx context.Context, src diagnose.Source, at time.Time) (*diagnose.Report, error) {
		q, err := src.Querier(at.Add(-time.Minute).UnixMilli(), at.UnixMilli())
		if err != nil {
			return nil, err
		}
		names, _, err := q.LabelValues(ctx, "__name__", nil)
		if err := errors.Join(err, q.Close()); err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, diagnose.ErrNoData
		}
		rep := &diagnose.Report{At: at, Healthy: true, Symptoms: []diagnose.Symptom{}, Causes: []diagnose.Cause{}, Findings: []diagnose.Cause{}}
		sameRun := at.Before(sim.DefaultStart.Add(12 * time.Hour))
		if sameRun && !at.Before(truth.Onset.Add(detectAfter)) {
			rep.Healthy = false
			rep.Causes = append(rep.Causes, diagnose.Cause{Rank: 1, Kind: kind, Entity: diagnose.Entity(entity), Confidence: 0.95})
		}
		rep.Findings = append(rep.Findings, diagnose.Cause{Rank: 1, Kind: "gpu_idle", Entity: diagnose.Entity{"namespace": "research", "pod": "notebook-0"}, Confidence: 0.1})
		return rep, nil
	}
}

// TestRunOracle runs two real simulated cases through the harness with a
// fake that knows the truth and answers from onset+60s.
func TestRunOracle(t *testing.T) {
	cases, truth := twoCases(t)
	var progress bytes.Buffer
	tmp := t.TempDir()
	res, err := Run(t.Context(), cases, Options{Diagnose: fakeEngine(t, truth, time.Minute, "", nil), Parallel: 2, Progress: &progress, TempDir: tmp})
	require.NoError(t, err)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "every store is removed")

	require.Len(t, res.Cases, 2)
	c := res.Cases[0]
	require.Equal(t, "nvlink_degraded", c.Scenario)
	require.Len(t, c.Faults, 1)
	require.Equal(t, 1, c.Faults[0].Rank)
	require.True(t, c.Faults[0].Called)
	require.NotNil(t, c.Faults[0].TTD)
	require.Equal(t, time.Minute, c.Faults[0].TTD.Duration(), "from the onset to the first matching at")
	require.Equal(t, 1.0, c.FaultScale)
	require.True(t, res.Cases[1].Healthy)
	require.Empty(t, res.Cases[1].Faults)

	require.Len(t, res.Suites, 1)
	tab := res.Suites[0]
	require.Equal(t, 1.0, tab.Overall.AC1)
	require.Equal(t, 1.0, tab.Overall.F1)
	require.Equal(t, HealthyScore{Runs: 1}, tab.Healthy)
	require.LessOrEqual(t, tab.Calibration.ECE, 0.1)
	require.Equal(t, 3, tab.Calibration.Predictions, "the cause and two low findings")
	require.Empty(t, res.Check(DefaultBars()))

	require.Contains(t, progress.String(), "test nvlink_degraded seed 7: nvlink_degraded rank 1, first after 1m0s")
	require.Contains(t, progress.String(), "test healthy seed 7: healthy")

	raw, err := json.Marshal(res)
	require.NoError(t, err)
	var back Result
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, res.Suites, back.Suites)
}

// TestRunWrongEntity: the right kind on another GPU of the node is wrong,
// and its call is a false positive.
func TestRunWrongEntity(t *testing.T) {
	cases, truth := twoCases(t)
	wrong := map[string]string{"node": truth.Entity["node"], "gpu": "9"}
	res, err := Run(t.Context(), cases, Options{Diagnose: fakeEngine(t, truth, 0, "", wrong), TempDir: t.TempDir()})
	require.NoError(t, err)
	o := res.Suites[0].Overall
	require.Equal(t, 0.0, o.AC1)
	require.Equal(t, 1, o.FP)
	require.Equal(t, 1, o.FN)
	require.Nil(t, o.TTDWorst)
	require.Equal(t, 1, o.TTDMissed)
	require.NotEmpty(t, res.Check(DefaultBars()))
}

// TestRunError: an engine error stops the run and names the case.
func TestRunError(t *testing.T) {
	cases, _ := twoCases(t)
	fail := func(context.Context, diagnose.Source, time.Time) (*diagnose.Report, error) {
		return nil, diagnose.ErrNoData
	}
	_, err := Run(t.Context(), cases, Options{Diagnose: fail, Parallel: 2, TempDir: t.TempDir()})
	require.ErrorIs(t, err, diagnose.ErrNoData)
	require.Contains(t, err.Error(), "test ")

	_, err = Run(t.Context(), cases, Options{})
	require.ErrorContains(t, err, "no diagnose function")

	_, err = Run(t.Context(), []Case{{Suite: "x", Scenario: "bogus"}}, Options{Diagnose: fail, TempDir: t.TempDir()})
	require.ErrorIs(t, err, sim.ErrUnknownScenario)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = Run(ctx, cases, Options{Diagnose: fail, TempDir: t.TempDir()})
	require.ErrorIs(t, err, context.Canceled)
}
