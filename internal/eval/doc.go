// Package eval owns the evaluation harness behind `vigil eval`: it runs the
// simulator's scenarios (internal/sim) through serve's pipeline
// (internal/server, headless, on the simulated clock), asks a
// diagnosis engine about each at the run's end and, for time to detect,
// every 30 s from each fault's onset, and scores the answers against the
// simulator's ground truth — AC@1 and AC@3, precision, recall and F1 of the
// faulty-entity call, false alarms on healthy runs, time to detect and a
// calibration (reliability) table with its expected calibration error.
// Runs of a fault only the request path shows (and runs that ask) also get
// their simulated traces, handed to the pipeline as its OTLP receiver
// hands them on — redaction, the trace store, span metrics and the service
// graph (RequestPath, which `vigil demo` uses too). Every cluster run also
// feeds its logs (kernel XIDs, NCCL watchdog timeouts, OOM kills) into the
// pipeline's log path after each scrape round, where they become
// log-derived signals.
//
// It does not own the engine: it takes one through DiagnoseFunc, so that
// tests give it a fake and `vigil eval` the real internal/diagnose engine.
// It does not own the scenarios either; Suite only picks named ones and
// their seeds.
package eval
