// Package topology owns the entity graph of a cluster at one instant: which
// nodes exist (one identity per node across dcgm-exporter, kube-state-metrics
// and node-exporter, resolved to the Kubernetes node name), which GPUs each
// node holds (index, UUID, product name, MIG instances, a one-word health
// hint), which pods use them, and which workloads, services, served models
// and tenants those pods belong to.
//
// Build reads it from a store through PromQL instant queries over the last
// few minutes, so the embedded store and a remote Prometheus-compatible API
// give the same graph. Data that is missing or ambiguous (no
// kube-state-metrics, dcgm-exporter without pod labels or with a container ID
// for a host name) degrades the graph with a warning that says why; it is
// never an error.
//
// It does not decide what is a fault (internal/diagnose does; the health hint
// is a display aid) and it does not know label names or metric semantics
// itself: those come from internal/catalog.
package topology
