// Package server assembles Vigil's pipeline once, for `vigil serve`,
// `vigil demo`, `vigil replay` and the evaluation harness: the embedded
// store, remote write out, the trace and log store, span metrics and the
// service graph, log signals, forwarding, the notifier, the push and
// remote-write receivers, scraping, the OTLP receiver, the continuous
// evaluation (SLO rules, symptoms, diagnosis, incidents) and the HTTP API,
// with redaction in front of everything they take.
//
// # Lifecycle
//
// A Server, and each of its parts, keeps the OpenTelemetry Collector's
// component contract (go.opentelemetry.io/collector/component):
//
//   - New builds nothing: it only keeps the options.
//   - Start opens the stores and starts the parts in dependency order, and
//     returns once they run; their work runs in the background on contexts
//     of their own, not on the context given to Start.
//   - A failed start shuts down what it had started, and returns
//     errors.Join(err, Shutdown(ctx)): no listener, goroutine or lock of
//     the data directory is left behind.
//   - Shutdown stops the parts in the reverse order of their start: the
//     API and the receivers first, then the evaluation, the notifier (which
//     sends what it still holds), span metrics (their last flush), the
//     trace store, remote write out (which sends what everything wrote),
//     and the embedded store last. It is safe without Start, and returns
//     the same result every time.
//   - Err receives the first error that stops a part on its own (a
//     listener breaking): the owner then shuts the server down.
//
// # Modes
//
// `vigil serve` runs the whole of it on the wall clock. Options.Headless
// opens no listener, and Options.Driven leaves the evaluation's cycles to
// the caller, so that the demo and a replay run serve's pipeline on a
// clock of their own (SimulatedConfig): the demo feeds its simulated
// cluster's metrics into Store and its logs and traces into Logs and
// Traces, where they take the path the OTLP receiver's take; a replay
// reads its files or backend through Options.Read, merged with the
// embedded store as an attached source (source.url) is. The evaluation
// harness (internal/eval) runs each case through a headless server with
// the evaluation off, and diagnoses the store itself.
//
// It does not own any part's behaviour: each stays in its package
// (internal/store, internal/traces, internal/watch, internal/api, ...).
package server
