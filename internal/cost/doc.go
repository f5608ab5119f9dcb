// Package cost owns what the GPUs of a cluster cost over a range of time:
// the prices (a prices file or vigil.yaml's cost section, per GPU model as
// dcgm-exporter names it, overridden per node label; or OpenCost's
// node_gpu_hourly_cost), and the figures — GPU-hours available, allocated
// (held by a pod) and used (allocated × activity), their cost, the idle
// cost (allocated but inactive) and the unallocated cost, per node,
// namespace, tenant, workload or served model, with the cost of a million
// prompt or generated tokens on the allocation and the usage basis.
//
// Compute reads raw samples through the store (the embedded one, a file
// import or a remote Prometheus-compatible API) and takes the pods'
// workloads, tenants and models from internal/topology; every metric name
// comes from internal/catalog. Time is cut into steps of the data's own
// interval: every step in which a GPU reports counts once, so a figure can
// be checked by hand from the samples.
//
// It does not diagnose (internal/diagnose says which GPUs are idle), store
// anything, or write series: internal/server turns a Report into the
// recording series of `vigil serve`.
package cost
