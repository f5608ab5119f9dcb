package alert

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/notifier"
)

// Alert is Prometheus's notifier alert, reused as is so that the
// Alertmanager path needs no conversion: Labels are the alert's identity
// (Alertmanager's fingerprint is their hash), Annotations its content,
// StartsAt and EndsAt wall-clock times. Send takes ownership: an alert is
// not modified after it was sent.
type Alert = notifier.Alert

// Spec is one alert as its owner (the incident tracker) keeps it between
// sends.
type Spec struct {
	// Labels are the identity: the same labels on every send, so that a
	// re-send or a new diagnosis updates one alert and never pages again.
	// They must include "alertname".
	Labels map[string]string
	// Annotations carry what may change from send to send (the ranked
	// causes, evidence, action, link); the newest send wins.
	Annotations map[string]string
	// StartsAt is when the alert started firing on the wall clock — not
	// the data clock of an accelerated simulation — and is the same on
	// every send.
	StartsAt time.Time
	// ResolvedAt is when it resolved, on the wall clock; zero while it
	// fires.
	ResolvedAt time.Time
	// GeneratorURL links back to Vigil (Config.IncidentURL).
	GeneratorURL string
}

// Firing reports whether s has not resolved.
func (s Spec) Firing() bool { return s.ResolvedAt.IsZero() }

// NewAlert returns the alert to send for s at now (wall clock), with
// Prometheus's rule semantics: a firing alert ends 4 resend intervals
// after now, so Alertmanager keeps it active across three lost sends and
// resolves it on its own once Vigil stops sending (Prometheus uses
// 4 × max(resend delay, evaluation interval)); a resolved alert ends at
// ResolvedAt.
//
// The caller sends firing alerts again every resendInterval while they
// fire (each send is a fresh NewAlert at the new now), and resolved ones
// again for a while after they resolve (Prometheus: 15 minutes), so that
// an alert or a resolve lost while a receiver was down arrives once it is
// back.
func NewAlert(s Spec, now time.Time, resendInterval time.Duration) *Alert {
	a := &Alert{
		Labels:       labels.FromMap(s.Labels),
		Annotations:  labels.FromMap(s.Annotations),
		StartsAt:     s.StartsAt,
		GeneratorURL: s.GeneratorURL,
	}
	if s.Firing() {
		a.EndsAt = now.Add(4 * resendInterval)
	} else {
		a.EndsAt = s.ResolvedAt
	}
	return a
}
