// Package catalog owns Vigil's knowledge of the telemetry GPU clusters emit:
// every canonical signal (gpu.tensor_active, infer.ttft, k8s.pod_phase, ...)
// with its true type, unit, entity level, meaning and documented healthy
// range; the metric names that carry it in each vocabulary and version
// (dcgm-exporter, vLLM, NIM, SGLang, TGI, Triton, TensorRT-LLM, KServe, Ray
// Serve, OpenTelemetry GenAI, kube-state-metrics, node-exporter, cAdvisor);
// which labels carry each canonical entity key in each vocabulary; NVIDIA's
// XID table, the DCGM blank sentinels and the clock-event reason bitmask; and
// the PromQL that reads a signal from whichever source a store holds.
//
// The data is Go literals, one file per domain (signals_gpu*.go,
// signals_infer*.go, signals_kube.go, signals_host.go, aliases.go, xid.go),
// not embedded YAML: the compiler checks every field name and constant, a
// typo in a type or level cannot reach run time, there is no parse error to
// handle at start-up, and `go test` validates the whole table (unique metric
// names, known units and levels, complete coverage of the upstream lists).
// A signal reads as a small struct literal, so adding one is a copy-edit.
//
// The catalog is read-only once built: Default returns one shared value and
// New builds one with configured additions (a training job's own progress
// metric). It does not query stores, build the entity graph (internal/topology
// does, with Resolve), or decide what is a fault (internal/diagnose does).
//
// docs/signals.md is generated from it: `go test ./internal/catalog -update`
// rewrites the page, and the test fails while the page is stale.
package catalog
