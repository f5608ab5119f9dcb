// Package ingestbench holds the benchmarks that compare Vigil's
// remote-write ingestion with its peers, each running as its own process on
// the same machine and fed by the same load generator
// (internal/ingest/remotewrite/remotewritetest): throughput against
// Prometheus 2.42's receiver and VictoriaMetrics 1.79, and resident memory
// per active series against Prometheus 2.42.
//
// The package has no code outside its tests; `make bench` runs it.
package ingestbench
