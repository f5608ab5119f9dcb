package driftflow

import (
	"time"

	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/slo"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/watch"
)

// The replay's timeline, in simulated time.
const (
	scrapeEvery = 15 * time.Second // a group's values appended again
	evalEvery   = 30 * time.Second // the watcher's cycle (serve's default)
	unshifted   = 10 * time.Minute
	shiftedFor  = 30 * time.Minute
)

// replayStore is an embedded store on a simulated clock.
func replayStore(t *testing.T, now *time.Time) *store.Embedded {
	t.Helper()
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.MaxExemplars = 0
	st, err := store.OpenEmbedded(cfg, func() time.Time { return *now }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// appendAt stores the series' values at at.
func appendAt(t *testing.T, st *store.Embedded, at time.Time, ss []series) {
	t.Helper()
	app := st.AppenderV2(t.Context())
	for _, s := range ss {
		_, err := app.Append(0, labels.FromMap(s.Labels), 0, at.UnixMilli(), s.Value, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
}

// accelerated replays the series Vigil stored — before: the unshifted
// run's, after: the shifted run's — through a watcher with the SLO presets
// in simulated time: FeatureDriftHigh fires for the shifted feature of each
// model once its `for` is up and never for the others, and a model_drift
// ticket opens for each model with the shift as its onset.
func accelerated(t *testing.T, before, after []series, want map[string]float64) {
	rule := featureDriftAlert(t)
	hold := time.Duration(rule.For)
	t0 := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	shift := t0.Add(unshifted)
	now := t0
	st := replayStore(t, &now)
	groups, err := slo.Groups(slo.Presets())
	require.NoError(t, err)
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	tr, err := incident.Open(incident.Options{})
	require.NoError(t, err)
	clock := func() time.Time { return now }
	w, err := watch.New(watch.Options{Source: st, Engine: eng, Groups: groups, Tracker: tr, Interval: evalEvery, Now: clock, Wall: clock})
	require.NoError(t, err)

	wantKeys := map[string]bool{}
	for m := range want {
		wantKeys[m+"/"+featShifted] = true
	}
	pendingAt, firingAt := map[string]time.Time{}, map[string]time.Time{}
	for at := t0; !at.After(shift.Add(shiftedFor)); at = at.Add(scrapeEvery) {
		now = at
		values := before
		if !at.Before(shift) {
			values = after
		}
		appendAt(t, st, at, values)
		if at.Sub(t0)%evalEvery != 0 {
			continue
		}
		require.NoError(t, w.Cycle(t.Context(), at))
		for _, r := range w.AlertingRules() {
			if r.Name() != rule.Alert {
				continue
			}
			for _, a := range r.ActiveAlerts() {
				key := a.Labels.Get("model") + "/" + a.Labels.Get("feature")
				require.True(t, wantKeys[key], "%s active for an unshifted feature at %s: %s", rule.Alert, at, a.Labels)
				require.Equal(t, "ticket", a.Labels.Get("severity"))
				if _, ok := pendingAt[key]; !ok {
					pendingAt[key] = at
				}
				if _, ok := firingAt[key]; !ok && a.State == rules.StateFiring {
					firingAt[key] = at
				}
			}
		}
		if at.Before(shift) {
			require.Empty(t, tr.List(), "no incident before the shift, at %s", at)
		}
	}

	for key := range wantKeys {
		require.Contains(t, firingAt, key, "%s never fired for %s", rule.Alert, key)
		// Pending from the shift (a cycle later: the recording rule behind
		// the alert runs in a group of its own), firing once `for` is up.
		require.False(t, pendingAt[key].Before(shift), key)
		require.LessOrEqual(t, pendingAt[key].Sub(shift), 2*evalEvery, key)
		require.Equal(t, hold, firingAt[key].Sub(pendingAt[key]), "%s: pending at %s, firing at %s", key, pendingAt[key], firingAt[key])
		t.Logf("%s: shifted at %s, %s pending at +%s, firing at +%s", key, shift.Format(time.TimeOnly), rule.Alert,
			pendingAt[key].Sub(shift), firingAt[key].Sub(shift))
	}

	tickets := map[string]incident.Incident{}
	for _, i := range tr.List() {
		require.Equal(t, diagnose.KindModelDrift, i.Kind, "only drift opens incidents here: %+v", i)
		tickets[i.Entity["model"]] = i
	}
	require.Len(t, tickets, len(want))
	for m := range want {
		i := tickets[m]
		require.True(t, i.Firing(), m)
		require.Equal(t, incident.SeverityTicket, i.Severity, m)
		require.Equal(t, shift, i.Since.UTC(), "%s: the onset is the shift", m)
		require.False(t, i.OpenedAt.Before(shift), m)
		require.LessOrEqual(t, i.OpenedAt.Sub(shift), 2*evalEvery, "%s: the ticket opens within two cycles of the shift", m)
	}
	rep, _ := w.Last()
	require.NotNil(t, rep)
	found := 0
	for _, f := range rep.Findings {
		if f.Kind == diagnose.KindModelDrift {
			found++
		}
	}
	require.Equal(t, len(want), found)
}
