// Package driftflow tests model drift end to end, as a team runs it: a
// CronJob runs `vigil drift --push` on a baseline and a current sample,
// the scores reach Vigil, the feature-drift SLO preset's alert
// (FeatureDriftHigh, PSI above 0.25 for 15 minutes) fires and the
// diagnosis reports a model_drift finding that opens a ticket.
//
// Both ways the scores travel are covered, each with a model of its own:
// through the real Prometheus Pushgateway (Debian's prometheus-pushgateway)
// that Vigil scrapes every second with honor_labels, as users wire it, and
// straight to the Pushgateway-compatible endpoint of `vigil serve`. The
// built vigil binary runs the drift and the server; the samples are CSV
// files with one feature shifted by a standard deviation and two unshifted.
//
// The alert waits 15 minutes (`for: 15m`) and `vigil serve` evaluates on
// the wall clock, so the test does not wait for it. What it proves instead:
//
//   - against the running server, on the wall clock: each path's scores
//     arrive intact (the values `vigil drift --json` printed, job and model
//     kept, which proves honor_labels on the Pushgateway path); the
//     generated alert expression, queried through /api/v1/query, holds for
//     exactly the shifted feature of each model; /api/v1/alerts shows
//     FeatureDriftHigh pending for them and for nothing else; the server's
//     own evaluation opens a model_drift ticket per model
//     (/api/v1/incidents); and `vigil diagnose --server --json` reports the
//     model_drift finding with the feature, method, score and onset;
//   - in accelerated time, in process: the series the server holds (read
//     back through /api/v1/query after the unshifted run and after the
//     shifted one, labels and values as stored) are replayed into an
//     embedded store every 15 s of simulated time, unshifted for 10 minutes
//     and shifted for 30, as a Pushgateway or the push endpoint keeps a
//     group's last values live; a watcher with the SLO presets evaluates
//     every 30 s. FeatureDriftHigh is pending from the shift, fires exactly
//     when its 15 minutes are up, never for an unshifted feature, and a
//     model_drift ticket opens for each model with the shift as its onset.
//
// The replay assumes only what both push targets guarantee: a pushed group
// keeps its values until the next push. A missing prometheus-pushgateway
// skips the test.
//
// BenchmarkDrift5GB (VIGIL_DRIFT_5GB=1) runs `vigil drift --method psi` on
// a 5 GB baseline and a 5 GB current CSV (10 features, 71.7 M rows each)
// under GOMEMLIMIT=256MiB and reports its wall time, rows/s and peak RSS.
// On 2 shared cores (load average 4–6) it took 222 s: 0.64 M rows/s of the
// two files (the baseline, beyond the exact store, is read twice), 187 s
// of CPU, a peak RSS of 146 MiB (117 MiB in an earlier run), and found the
// shifted feature and only it.
package driftflow
