// Package costbench measures `vigil cost` (internal/cost) against a real
// Prometheus 2.42: the wall time and peak resident memory of the binary
// reading a cluster of NODES nodes of eight GPUs over 30 days at 5-minute
// resolution, and over 24 hours at 30 s, through --prometheus.
//
// The data is what `vigil cost` reads, written straight into a TSDB block
// that Prometheus opens: dcgm-exporter's DCGM_FI_PROF_GR_ENGINE_ACTIVE per
// GPU (six of eight held by a pod, with pod labels), kube-state-metrics'
// kube_node_labels and kube_pod_info, and vLLM's token counters on every
// tenth node. Every run checks the available GPU-hours against nodes × 8 ×
// hours.
//
// The size is VIGIL_COSTBENCH_NODES (default 100; the case is
// 1000) and the long range VIGIL_COSTBENCH_DAYS (default 30). The package
// has no code outside its tests; `make bench` runs it.
package costbench
