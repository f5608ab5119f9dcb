// Package remotewritetest is the remote-write load generator of Vigil's
// benchmarks: dcgm-exporter-like series, requests encoded (protobuf and
// snappy) before any timing starts, and a sender that posts them with a
// fixed number of concurrent senders, each owning a fixed share of the
// series, as Prometheus's queue shards do.
//
// It is for tests and benchmarks only. It neither starts servers (see
// internal/peertest) nor measures them: the benchmarks that use it do.
package remotewritetest
