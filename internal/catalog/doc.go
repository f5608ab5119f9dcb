// Package catalog owns Vigil's knowledge of the telemetry GPU clusters emit:
// every canonical signal (gpu.tensor_active, infer.ttft, k8s.pod_phase, ...)
// with its true type, unit, entity level, meaning and documented healthy
// range; the metric names that carry it in each vocabulary and version
// (dcgm-exporter, vLLM v0 and v1, NIM, SGLang, TGI, Triton, TensorRT-LLM,
// KServe, Ray Serve, OpenTelemetry GenAI, kube-state-metrics, node-exporter,
// cAdvisor, and a training job's own configured metrics); which labels carry
// each canonical entity key in each vocabulary; NVIDIA's XID table, the DCGM
// blank sentinels and the clock-event reason bitmask; and the PromQL that
// reads a signal from whichever source a store holds.
//
// The main entry points:
//
//   - Default and New build the catalog (New adds Options: training
//     metrics, a tenant label).
//   - Lookup maps a stored metric name (histogram series included) to its
//     Signal and Source; TrueType says how to read it whatever its # TYPE
//     line claims; IgnoredMetric says why a known metric is left out.
//   - Resolve and ResolveSeries turn a series' labels into canonical entity
//     keys (node, gpu, gpu_instance, uuid, pod, namespace, container,
//     workload, service, model, tenant), with attributes (GPU model, MIG
//     profile, workload kind, node address) and notes saying what could not
//     be resolved and why.
//   - PromQL and Queries generate the query of a signal from the sources a
//     MetricSet holds.
//   - XID, IsBlank and DecodeClockReasons interpret dcgm-exporter values.
//   - WriteMarkdown writes docs/signals.md.
//
// Resolve reports what one series says, nothing more: a pod's workload may be
// a ReplicaSet (AttrWorkloadKind) that the topology lifts to its Deployment
// through k8s.replicaset_owner; a node known only by address
// (AttrNodeAddress) is mapped to a name through k8s.node_info or
// k8s.pod_info; the tenant is set only from a configured tenant label, and
// defaults to the namespace in the topology. The node is always a node name,
// never an address or the container ID dcgm-exporter reports as Hostname
// when it runs without NODE_NAME; an exporter's own pod (scrape target labels
// without honor_labels) is never taken for the workload.
//
// The data is Go literals, one file per domain (signals_gpu*.go,
// signals_infer*.go, signals_kube.go, signals_host.go, aliases.go, xid.go,
// ignored.go), not embedded YAML: the compiler checks every field name and
// constant, a typo in a type or a level cannot reach run time, there is no
// parse error to handle at start-up, and the tests validate the whole table
// (unique metric names, known units, levels and vocabularies, declared types
// that differ from the true ones, complete coverage of the upstream lists in
// testdata/upstream). A signal reads as a small struct literal, so adding one
// is a copy-edit.
//
// The catalog is read-only once built and safe for concurrent use. It does
// not query stores, build the entity graph (internal/topology does, with
// Resolve), or decide what is a fault (internal/diagnose does).
//
// docs/signals.md is generated from it: `go test ./internal/catalog -update`
// rewrites the page and the golden files, and the tests fail while they are
// stale.
package catalog
