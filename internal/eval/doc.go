// Package eval owns the evaluation harness behind `vigil eval`: it runs the
// simulator's scenarios (internal/sim) into fresh embedded stores, asks a
// diagnosis engine about each at the run's end and, for time to detect,
// every 30 s from each fault's onset, and scores the answers against the
// simulator's ground truth — AC@1 and AC@3, precision, recall and F1 of the
// faulty-entity call, false alarms on healthy runs, time to detect and a
// calibration (reliability) table with its expected calibration error.
// Runs of a fault only the request path shows (and runs that ask) also get
// their simulated traces, turned into span metrics and the service graph
// by internal/spanmetrics in simulated time, as `vigil serve` does with
// the traces it receives (RequestPath, which `vigil demo` uses too).
// Every cluster run also feeds its logs (kernel XIDs, NCCL watchdog
// timeouts, OOM kills) through internal/logsignals into its store after
// each scrape round (NewLogSignals, used by `vigil demo` too).
//
// It does not own the engine: it takes one through DiagnoseFunc, so that
// tests give it a fake and `vigil eval` the real internal/diagnose engine.
// It does not own the scenarios either; Suite only picks named ones and
// their seeds.
package eval
