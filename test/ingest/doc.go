// Package ingest proves Vigil's ingestion end to end against the real
// binary and real components: Debian's Prometheus 2.42 remote-writing to
// `vigil serve` and Vigil scraping a real node-exporter; acknowledged
// remote-write samples surviving SIGKILL and restart; bad and greedy
// remote-write clients getting the documented status and reason while the
// server keeps serving the others (a 3,000,000-series cardinality bomb
// included); and `vigil import --server` into a directory a running server
// holds.
//
// The package has no code outside its tests. The unit tests of the receiver
// live in internal/ingest/remotewrite; these tests do not repeat them, they
// check that the pieces hold together in the process users run.
package ingest
