package diagnose

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/kinds"
)

// TestEveryKindHasADetector: each registered kind but the generic
// layer's is found by some detector, and no detector claims a kind the
// registry does not know.
func TestEveryKindHasADetector(t *testing.T) {
	ds := detectors()
	for _, k := range kinds.All() {
		if k.Name == KindMetricAnomaly {
			_, ok := ds[k.Name]
			require.False(t, ok, "metric_anomaly runs apart, under --entity-label")
			continue
		}
		require.NotEmpty(t, ds[k.Name], "kind %s has no detector", k.Name)
	}
	for name := range ds {
		_, ok := kinds.Lookup(name)
		require.True(t, ok, "a detector is registered for %q, which internal/kinds does not know", name)
	}
	require.Len(t, hypotheses(), 23, "each detector runs once")
}

// TestUndeclaredSignal: reading a signal no kind declares (a typo) is an
// error, not an empty table that silently switches a detector off.
func TestUndeclaredSignal(t *testing.T) {
	e, err := New(Options{})
	require.NoError(t, err)
	v := &view{e: e, at: time.Unix(0, 0), step: time.Second, n: 1, cache: map[string]*table{}}
	_, err = v.sig(context.Background(), "gpu.tmep")
	require.True(t, errors.Is(err, errUndeclared), "%v", err)
	require.ErrorContains(t, err, `"gpu.tmep"`)
}
