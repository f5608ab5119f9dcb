// Package alert delivers Vigil's alerts: to Alertmanagers over their API
// v2, through Prometheus's own notifier (its per-Alertmanager queues,
// batches and client), and to webhooks as Alertmanager's webhook payload
// (version 4), with retries. One Send feeds both.
//
// It owns the alerting configuration (Config), the alert's time semantics
// (NewAlert: a firing alert ends four resend intervals after it is sent,
// as Prometheus's rules do; a resolved one ends when it resolved), the
// webhook payload and the vigil_notifications_* metrics, labelled by
// receiver.
//
// It does not decide what to send or when: the incident tracker
// (internal/incident) owns identity labels, annotations, the wall-clock
// StartsAt of each incident and the re-sends every ResendInterval. All
// times in alerts are wall-clock times, so a real Alertmanager keeps them
// also when the engine runs on the accelerated clock of a simulation.
//
// Logs carry counts and receiver URLs without user information or query,
// never annotations, which may hold data from the cluster.
package alert
