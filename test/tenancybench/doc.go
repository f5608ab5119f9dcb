// Package tenancybench measures what tenancy costs `vigil serve` and
// whether it keeps tenants apart under load, with the real binary as its
// own process on 127.0.0.1 and the load generator of
// internal/ingest/remotewrite/remotewritetest:
//
//   - BenchmarkTenancyOverhead: remote-write throughput (100,000
//     dcgm-exporter-like series × 8 rounds, Remote-Write 1.0 from 4
//     concurrent senders), the server's CPU time per sample, and the
//     latency of a set of instant and range PromQL queries over the
//     series, with tenancy off and with tenancy on (X-Scope-OrgID on
//     every request, no limits), each run a fresh process, alternating
//     three times; the on/off ratios are the medians of the per-pair
//     ratios, and both modes must answer the same.
//   - BenchmarkNoisyNeighbour: two tenants with the same ingestion_rate R
//     in the runtime limits file of one process; the victim sends R/2 on
//     a fixed schedule while the abuser is idle, then while it offers
//     10 × R, alternating three times in 20 s windows. It reports the
//     victim's p99 write latency (from each request's scheduled time)
//     and samples acknowledged in each window, the median abusive/idle
//     ratios against the spread of the idle windows (the noise), the
//     server's CPU, and the abuser's 429s with one reason.
//
// Both print the CPU share other processes took during each run: on a
// shared machine it moves the wall-clock figures more than tenancy does.
// What the package does not measure: authentication and TLS
// (test/authbench), the read-side limits (query samples and
// concurrency), and OTLP.
//
// The package has no code outside its tests; `make bench` runs it.
package tenancybench
