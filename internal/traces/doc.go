// Package traces is Vigil's embedded store of spans and logs and its HTTP
// API. It owns storing what the OTLP receiver hands it (already redacted),
// finding traces and logs again, joining logs to traces and to requests,
// retention, and serving /api/v1/traces and /api/v1/logs. It does not
// receive OTLP (internal/ingest/otlp does), redact, compute span metrics or
// per-hop breakdowns (the request-path analysis reads spans with Spans).
//
// # Why Pebble
//
// The store is a Pebble database (github.com/cockroachdb/pebble/v2),
// chosen over Badger and bbolt: ingest is write-heavy, and an LSM turns
// each batch of spans into one sequential WAL append instead of bbolt's
// copy-on-write B+tree pages; its block cache and memtables have hard
// sizes, so memory stays bounded however much is stored (Badger keeps
// per-table indexes and bloom filters in memory by default); and a range
// deletion drops an hour of data, indexes included, in one write, which
// compaction then turns back into free disk. It is what CockroachDB runs
// on, maintained by a company whose product depends on it.
//
// # Key layout
//
// Every key begins with its partition, the hour of the span's start or
// the log's time (4 bytes, big-endian hours since the epoch), then a kind
// byte. Retention by age or by size deletes whole hours with one range
// deletion. Within an hour:
//
//	S trace span       → summary, resource hash, span protobuf
//	T trace            → (marks the trace present in the hour)
//	R hash             → resource and scope protobuf, once per hour
//	m start trace span → summary (time index)
//	v service 0 start trace span, o service 0 name 0 …, n tenant 0 …,
//	e start …(errors only), d duration start …, c correlation-id 0 start …
//	                   → summary (indexes; the summary lets a search check
//	                     its other conditions without reading the span)
//	K correlation-id   → (marks an id carried by a span or log in the hour)
//	L time seq         → service, resource hash, log record protobuf
//	l trace time seq, r correlation-id 0 time seq, g service 0 time seq
//	                   → (log indexes); U trace marks a trace's logs
//
// Marker keys are read with Get, so the tables' bloom filters skip the
// hours that do not hold a trace or id: finding a trace costs a filter
// probe per stored hour, not a disk read. Spans are kept as their own
// protobuf bytes, cut out of the request once marshalled; their resource
// and scope are stored once per hour and batch. Measured on 2 shared
// cores (BenchmarkStoreSpans, 100-span batches of five services with SDK
// and Kubernetes attributes): about 30 µs of CPU per span, flushes and
// compactions included, and 350 bytes per span on disk once compacted.
//
// # Durability
//
// ConsumeTraces and ConsumeLogs write one Pebble batch per request into the
// write-ahead log without fsync: when they return, the data is readable
// and survives a crash of the process. The WAL is fsynced every 5 s and on
// Close, so an OS crash or power loss loses at most the last 5 s.
//
// # Memory
//
// Pebble's block cache is CacheBytes; memtables are a quarter of it (4 to
// 64 MiB each, at most four queued). Nothing else grows with the data: the
// list of hours held is bounded by retention, and each search bounds what
// it keeps by its limit. With 1M spans and 100k logs stored (440 MiB on
// disk), a restarted process under GOMEMLIMIT=512MiB serves every trace
// and log with a peak RSS of 126 MiB (TestMillionSpans).
package traces
