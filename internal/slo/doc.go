// Package slo owns Vigil's service level objectives for AI clusters: the
// SLO spec (YAML, in the spirit of Sloth and Pyrra), its validation, the
// built-in presets, and their translation into Prometheus rules —
// recording rules, multi-window multi-burn-rate alerts, threshold alerts,
// composite user-impact alerts and a watchdog — as Prometheus rule files
// and prometheus-operator PrometheusRule objects.
//
// The main entry points:
//
//   - Parse and ParseFile read a spec; every error is a *FieldError naming
//     the field and its line (slo.yaml:12: slos[1].objective: 101 is not a
//     percentage in (0, 100)); unknown fields are errors. Presets returns
//     the built-in AI SLOs.
//   - Files returns a spec's rule files (one per SLO, one per composite, the
//     watchdog's) as rulefmt groups; Groups flattens them for loading in
//     process; Render writes a file as a Prometheus rule file or a
//     PrometheusRule object.
//   - ValidateBuckets checks latency thresholds against histograms' le
//     bounds, KnownBuckets being those of well-known exporters (vLLM), so
//     that a threshold between two buckets is caught offline; CheckMetrics
//     checks a spec against a store (StoreLookup) and warns about SLOs whose
//     metrics do not exist.
//
// # SLI kinds
//
// A ratio SLI is Sloth's: PromQL for errors and total with {{.window}} as
// the range. A latency SLI counts an event as good when it falls in the
// histogram bucket at the threshold: the error ratio over a window is
// 1 - rate(bucket{le=threshold}) / rate(count). Both have an objective
// over 28 or 30 days and get Sloth's recording rules
// (slo:sli_error:ratio_rate5m ... ratio_rate3d and the period's, with slo
// and slo_window labels; slo:objective:ratio, slo:error_budget:ratio,
// slo:current_burn_rate:ratio, slo:period_burn_rate:ratio,
// slo:period_error_budget_remaining:ratio) and burn-rate alerts (see
// BurnWindows). A gauge SLI alerts when a value leaves its bounds for a
// while (`for`), as model accuracy, feature drift and GPU utilisation
// need: a burn rate over a gauge means nothing. A peer SLI compares each
// entity with its peers at the same moment (each GPU's NVLink bandwidth
// against the median of its job's GPUs), so that a drop the whole group
// shares does not alert.
//
// Sources are alternative metrics (the names of several engines and
// versions) joined with `or`, each with its labels renamed to the canonical
// entity labels (model_name becomes model, exported_namespace namespace),
// then aggregated by the SLO's By labels, so every alert names one entity.
//
// # Labels other parts rely on
//
// Every alert has severity (page or ticket), slo (the SLO's or composite's
// name), vigil_symptom (a DESIGN.md symptom kind: slo_burn by default for
// SLOs, queue_growing for composites) and the entity labels of By. The
// watchdog alert VigilWatchdog has severity none and always fires.
//
// Generated expressions use only legacy (unquoted) names and the functions
// of Prometheus 2.42, and are checked with the PromQL parser restricted to
// them. The package does not evaluate rules, route alerts or track
// incidents: `vigil serve` loads Groups into its rule evaluation.
package slo
