// Package watch is the continuous evaluation of `vigil serve`: every
// interval it evaluates the rule groups (SLO recording and alerting rules)
// in Prometheus's own rule engine over the store, runs the diagnosis
// engine's symptom detectors (a training stall is no SLO rule), turns
// symptoms and page-severity rule alerts into incidents with their ranked
// causes attached, and hands what is due to the notifier.
//
// Time is injected: Run evaluates on a wall-clock ticker at the data
// clock's Now, and Cycle evaluates at any time, so the simulator and
// `vigil demo` drive the whole path in accelerated time. What Alertmanager
// receives (startsAt, endsAt) is always on the wall clock, so a real
// Alertmanager keeps it.
//
// It owns no storage (internal/store), no diagnosis logic
// (internal/diagnose), no incident bookkeeping (internal/incident) and no
// Alertmanager protocol (internal/alert).
package watch
