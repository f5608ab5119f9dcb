// Package rulebench holds the benchmark of SLO rule evaluation against
// Prometheus 2.42: the built-in AI SLO presets (internal/slo) evaluated by
// `vigil serve` (Prometheus's rule engine inside Vigil's watcher, over its
// embedded store) and by Debian's Prometheus 2.42 (the same rules, written
// by `vigil rules generate`), over the same data: a generated cluster of
// 1,000 GPUs (dcgm-exporter), 50 vLLM models, their online evaluator and
// drift scores, and kube-state-metrics Jobs, four hours of history ending
// about when the loading ends (the GPU gauges: the last 75 minutes),
// loaded with `vigil import` and `promtool tsdb create-blocks-from
// openmetrics`.
//
// Each run starts a fresh server process on a fresh copy of its data; the
// two servers alternate, and the time per evaluation cycle is read from
// each one's own rule metrics. Plain `go test` runs only the quick check
// that the data set feeds every preset it is meant to.
//
// The package has no code outside its tests.
package rulebench
