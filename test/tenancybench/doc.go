// Package tenancybench measures what tenancy costs `vigil serve` and
// whether it keeps tenants apart under load, with the real binary as its
// own process on 127.0.0.1 and the load generator of
// internal/ingest/remotewrite/remotewritetest:
//
//   - BenchmarkTenancyOverhead: remote-write throughput (100,000
//     dcgm-exporter-like series × 5 rounds, Remote-Write 1.0 from 4
//     concurrent senders) and the latency of a set of instant and range
//     PromQL queries over them, with tenancy off and with tenancy on
//     (X-Scope-OrgID on every request, no limits), each run a fresh
//     process, alternating three times; the on/off ratios are the medians
//     of the per-pair ratios, and both modes must answer the same.
//   - BenchmarkNoisyNeighbour: two tenants with the same ingestion_rate R
//     in the runtime limits file; the victim sends R/2 on a fixed
//     schedule while the abuser is idle, then while it offers 10 × R,
//     alternating three times in 20 s windows on one process. It reports
//     the victim's p99 write latency and samples acknowledged in each
//     window, the median abusive/idle ratios against the spread of the
//     idle windows (the noise), and the abuser's 429s with one reason.
//
// What it does not measure: authentication and TLS (test/authbench), the
// read-side limits (query samples and concurrency), and OTLP.
//
// The package has no code outside its tests; `make bench` runs it.
package tenancybench
