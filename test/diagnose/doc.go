// Package diagnose holds the end-to-end test of `vigil diagnose` against a
// real Prometheus: a simulated GPU cluster's OpenMetrics is backfilled into
// Debian's Prometheus 2.42 with promtool, and the vigil binary must give
// the same diagnosis through --prometheus as through --input.
//
// The package has no code outside its tests; the engine is
// internal/diagnose and its unit tests live there.
package diagnose
