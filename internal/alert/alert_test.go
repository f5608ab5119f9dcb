package alert

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestNewAlert(t *testing.T) {
	starts := time.Date(2026, 11, 12, 2, 47, 30, 0, time.UTC)
	now := starts.Add(3 * time.Minute)
	spec := Spec{
		Labels:       map[string]string{"alertname": "training_stall", "severity": "page", "namespace": "ml-train"},
		Annotations:  map[string]string{"summary": "training stalled"},
		StartsAt:     starts,
		GeneratorURL: "https://vigil.example.com/api/v1/incidents/3f2a",
	}
	f := func(name string, s Spec, resend time.Duration, wantEnds time.Time) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			a := NewAlert(s, now, resend)
			require.Equal(t, labels.FromStrings("alertname", "training_stall", "namespace", "ml-train", "severity", "page"), a.Labels)
			require.Equal(t, labels.FromStrings("summary", "training stalled"), a.Annotations)
			require.Equal(t, starts, a.StartsAt, "startsAt is the wall-clock start on every send")
			require.Equal(t, wantEnds, a.EndsAt)
			require.Equal(t, s.GeneratorURL, a.GeneratorURL)
			require.Equal(t, !s.Firing(), a.ResolvedAt(now))
		})
	}
	f("firing ends four intervals ahead", spec, time.Minute, now.Add(4*time.Minute))
	f("accelerated resend interval", spec, 2*time.Second, now.Add(8*time.Second))
	resolved := spec
	resolved.ResolvedAt = now.Add(-10 * time.Second)
	f("resolved ends when it resolved", resolved, time.Minute, now.Add(-10*time.Second))
}

func TestNotifierAlertUsesResendInterval(t *testing.T) {
	cfg := Default()
	cfg.ResendInterval = model.Duration(30 * time.Second)
	n, err := New(cfg, nil, nil)
	require.NoError(t, err)
	now := time.Date(2026, 11, 12, 3, 0, 0, 0, time.UTC)
	a := n.Alert(Spec{Labels: map[string]string{"alertname": "x"}, StartsAt: now}, now)
	require.Equal(t, now.Add(2*time.Minute), a.EndsAt)
}

func TestFingerprintIsAlertmanagers(t *testing.T) {
	// The value Alertmanager 0.25 gave this label set in
	// /api/v2/alerts (checked by hand with curl).
	a := &Alert{Labels: labels.FromStrings("alertname", "training_stall", "severity", "page")}
	require.Equal(t, "44b04c4c4e5a8d45", Fingerprint(a))
}
