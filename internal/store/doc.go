// Package store owns where Vigil keeps and reads metric samples: the Store
// interface every later part appends to and queries through, the embedded
// implementation on the Prometheus TSDB, and a read-only implementation over
// any Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir,
// VictoriaMetrics) that fetches raw samples and evaluates PromQL locally.
//
// It does not parse files, scrape targets or serve HTTP: those live in
// internal/ingest and internal/api.
package store
