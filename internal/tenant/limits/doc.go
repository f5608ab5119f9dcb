// Package limits owns per-tenant limits, in the spirit of Grafana Mimir's:
// the limits themselves (Limits), a runtime file of per-tenant overrides
// reloaded without a restart (Overrides), the state that enforces them
// (Enforcer), the refusal (LimitError, answered by WriteHTTP: 429 when a
// retry can succeed, 400, 413 or 422 when it cannot), and a storage wrapper
// that enforces the sample limits on any ingest path (Appendable).
//
// It does not own tenant IDs, where a request's tenant comes from, or the
// HTTP and gRPC handlers that call it: those pass the tenant in as a string
// (internal/tenant, internal/server).
//
// # The limits
//
// Every limit is per tenant, and 0 means unlimited; the zero Limits limits
// nothing. The defaults come from vigil.yaml; the runtime file overrides
// them per tenant.
//
//   - ingestion_rate (samples per second) and ingestion_burst_size
//     (samples): a token bucket that holds ingestion_burst_size samples and
//     refills at ingestion_rate. A write request takes all its samples
//     (floats and histograms) at once: when they do not fit, the request is
//     refused whole with 429 and a Retry-After of the seconds until they
//     would. A request larger than the burst is never accepted, as in
//     Mimir: set the burst above the largest request a client sends
//     (Prometheus sends at most max_samples_per_send, 2000 by default). A
//     burst of 0 with a rate set is one second of the rate.
//   - spans_rate and spans_burst_size: the same for OTLP spans and log
//     records, together.
//   - max_active_series: series the tenant wrote to within the idle
//     timeout (20 minutes, as Mimir's active series). A sample of a series
//     already active is always accepted; a sample of a new series is
//     refused when the tenant is at the limit, and the rest of the request
//     is stored (a partial write, answered 400 as Mimir does, so that a
//     client does not send it again forever). Series idle for the timeout
//     stop counting when Purge runs (Run calls it every minute).
//   - max_series_per_metric: the same, per metric name.
//   - max_request_bytes: the body of one write request as received, before
//     decompression. Over it the request gets 413, not 429: it would never
//     fit, and a client must not send it again.
//   - max_query_samples: samples one query may load into memory at once,
//     for the query engine (MaxQuerySamples; QuerySamplesError for the
//     refusal, answered 422 as Prometheus does).
//   - max_query_concurrency: queries of the tenant running at once. A
//     query over it waits for a slot until its context ends (the client
//     goes away or the query timeout passes), then gets 429.
//   - max_push_groups: push groups the tenant may have; replacing one of
//     its groups is always allowed.
//
// Each refusal is counted, by tenant and limit, in
// vigil_tenant_rejected_requests_total (requests refused whole),
// vigil_tenant_discarded_samples_total and
// vigil_tenant_discarded_spans_total (items not stored, by reason, the
// limit's name); vigil_tenant_active_series is each tenant's active series.
//
// # The runtime file
//
// Mimir's format, one key:
//
//	overrides:
//	  team-a:
//	    ingestion_rate: 50000
//	    ingestion_burst_size: 500000
//	  team-b:
//	    max_active_series: 10000
//
// A tenant's fields not in the file keep the defaults. Unknown keys, wrong
// types and negative values are errors naming the file and line. Overrides
// reads the file every 10 seconds (Mimir's period) and loads it when its
// content changed; a file that does not load keeps the last good limits,
// is logged once and counted in vigil_tenant_limits_reload_failures_total.
// Buckets take a new rate or burst on their next use, keeping the tokens
// they hold.
//
// # Cost
//
// A check looks up the tenant without a lock (copy-on-write maps) and takes
// one short lock: the tenant's bucket, or the series' shard; tenants share
// no lock (BenchmarkEnforcer, BenchmarkNoisyNeighbour). Active series cost
// about 38 bytes of heap each (the hash, the last time seen in seconds and
// the metric name's id, in a map; BenchmarkSeriesMemory), whether or not a
// series limit is set, so that a limit set later counts the series
// already there.
package limits
