package eval

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
)

// TestRunRequestPath: a run whose fault only the request path shows gets
// its traces as span metrics and the service graph in its store, written
// in simulated time: every diagnosis, at the run's end and at each step
// after the onset, finds them in the minute before its instant. A run
// that asks for its request path gets it too; another run does not.
func TestRunRequestPath(t *testing.T) {
	short := sim.Config{Duration: 20 * time.Minute}
	for _, tc := range []struct {
		c    Case
		want bool
	}{
		{Case{Suite: "test", Scenario: "dependency_slow", Seed: 1, Config: short}, true},
		{Case{Suite: "test", Scenario: "nvlink_degraded", Seed: 1, Config: short, RequestPath: true}, true},
		{Case{Suite: "test", Scenario: "nvlink_degraded", Seed: 2, Config: short}, false},
	} {
		calls, with := 0, 0
		d := func(ctx context.Context, src diagnose.Source, at time.Time) (*diagnose.Report, error) {
			q, err := src.Querier(at.Add(-time.Minute).UnixMilli(), at.UnixMilli())
			if err != nil {
				return nil, err
			}
			names, _, err := q.LabelValues(ctx, "__name__", nil)
			if err := errors.Join(err, q.Close()); err != nil {
				return nil, err
			}
			calls++
			if slices.Contains(names, "traces_service_graph_request_total") && slices.Contains(names, "traces_span_metrics_calls_total") {
				with++
			}
			return &diagnose.Report{At: at, Healthy: true, Symptoms: []diagnose.Symptom{}, Causes: []diagnose.Cause{}, Findings: []diagnose.Cause{}}, nil
		}
		res, err := Run(t.Context(), []Case{tc.c}, Options{Diagnose: d, TempDir: t.TempDir()})
		require.NoError(t, err)
		require.Len(t, res.Cases, 1)
		require.Greater(t, calls, 5, "the end and the time-to-detect steps")
		if tc.want {
			require.Equal(t, calls, with, "%s seed %d: span metrics before every instant", tc.c.Scenario, tc.c.Seed)
		} else {
			require.Zero(t, with, "%s seed %d: no request path", tc.c.Scenario, tc.c.Seed)
		}
	}
}
