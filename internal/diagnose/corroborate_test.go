package diagnose_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// TestCorroboratedStall: a collapse of the job's work that starts with a
// hardware fault on one of its nodes is a stall at its second step, one
// step before an uncorroborated collapse would be (a checkpoint looks the
// same for a minute); the fault explains it.
func TestCorroboratedStall(t *testing.T) {
	for _, scenario := range []string{"gpu_xid_error", "gpu_lost"} {
		t.Run(scenario, func(t *testing.T) {
			run := simulate(t, scenario, 1)
			require.Len(t, run.truth, 1)
			onset := run.truth[0].Onset.Truncate(30 * time.Second)
			var first, since time.Time
			for at := onset; !at.After(onset.Add(3 * time.Minute)); at = at.Add(30 * time.Second) {
				rep := diagnoseAt(t, run.st, at)
				for _, s := range rep.Symptoms {
					if s.Kind == diagnose.SymptomTrainingStall && first.IsZero() {
						first, since = at, s.Since
						require.NotEmpty(t, rep.Causes, "the stall at %s has no cause", at)
						require.Equal(t, scenario, rep.Causes[0].Kind)
						require.Contains(t, rep.Causes[0].Explains, 0)
					}
				}
			}
			require.False(t, first.IsZero(), "no stall within 3 minutes of the onset")
			require.Equal(t, 30*time.Second, first.Sub(since), "the stall since %s is called at %s: not at its second step", since, first)
			require.LessOrEqual(t, first.Sub(run.truth[0].Onset), 90*time.Second)
		})
	}
}
