package diagnose_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// peerScene writes twelve services' latency gauges (app_latency_seconds,
// each at a level of its own, a few percent of noise), one sample a
// minute from minute 3 to minute 10 of a 10-minute window: two readings
// before a change at minute 5, too few for any series' own spread. rise
// gives a service's latency factor from the minute given on.
func peerScene(t *testing.T, rise map[string]float64, from int) *diagnose.Report {
	t.Helper()
	start := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	end := start.Add(10 * time.Minute)
	st, app, add := sceneStore(t, end)
	rng := rand.New(rand.NewPCG(16, 2))
	for s := range 12 {
		svc := fmt.Sprintf("svc%02d", s)
		level := 0.01 * float64(1+s)
		for m := 3; m <= 10; m++ {
			x := level * (1 + 0.03*rng.NormFloat64())
			if f, ok := rise[svc]; ok && m >= from {
				x *= f
			}
			add(labels.FromStrings("__name__", "app_latency_seconds", "service", svc), start.Add(time.Duration(m)*time.Minute), x)
		}
	}
	require.NoError(t, app.Commit())
	e, err := diagnose.New(diagnose.Options{EntityLabel: "service", Window: 10 * time.Minute, Step: time.Minute})
	require.NoError(t, err)
	rep, err := e.Diagnose(t.Context(), st, end)
	require.NoError(t, err)
	return rep
}

// TestGenericPeers: with two readings before the change, no series' own
// history can judge it; the same metric across the other services at the
// same minutes can. A service whose latency tripled ranks first, its
// evidence its peers', and at half the rise too, less sure.
func TestGenericPeers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64
	}{{"triple", 3}, {"half-size", 1.5}} {
		t.Run(tc.name, func(t *testing.T) {
			rep := peerScene(t, map[string]float64{"svc04": tc.factor}, 5)
			require.NotEmpty(t, rep.Causes, "the peers judge what the history cannot")
			first := rep.Causes[0]
			require.Equal(t, "svc04", first.Entity["service"])
			require.Len(t, rep.Causes, 1, "no other service changed unlike its peers: %v", rep.Causes)
			require.Contains(t, first.Evidence[0].Summary, "11 peers")
			require.Less(t, first.Confidence, 1-2/12.0+1e-9, "no surer than eleven exchangeable peers make it")
			require.True(t, slicesHasWarning(rep, "readings"), "the short history is said: %v", rep.Warnings)
		})
	}
	three := peerScene(t, map[string]float64{"svc04": 3}, 5).Causes[0].Confidence
	half := peerScene(t, map[string]float64{"svc04": 1.5}, 5).Causes[0].Confidence
	require.Greater(t, three, half, "a larger change among the same peers is surer")
}

// TestGenericPeersLoad: every service's latency doubling alike (a load
// change) moves the peers' median with it: no cause.
func TestGenericPeersLoad(t *testing.T) {
	all := map[string]float64{}
	for s := range 12 {
		all[fmt.Sprintf("svc%02d", s)] = 2
	}
	rep := peerScene(t, all, 5)
	require.Empty(t, rep.Causes, "every peer rose alike: %v", rep.Causes)
}

// slicesHasWarning tells whether a warning of rep mentions s.
func slicesHasWarning(rep *diagnose.Report, s string) bool {
	for _, w := range rep.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}
