// Package forward sends the traces and logs Vigil receives on to an
// existing OTLP backend — Jaeger, Grafana Tempo, an OpenTelemetry
// Collector — over OTLP/HTTP (binary protobuf, POST <endpoint>/v1/traces
// and /v1/logs) or OTLP/gRPC (pdata's ptraceotlp and plogotlp clients),
// gzip-compressed by default. It is the scale path: when one machine's
// store is not enough, the backend the users already run keeps the data.
//
// It owns the queue, the exporters, the retries and their metrics. It
// does not redact: the caller hands it data that internal/redact has
// already cleaned, the same data the local store gets, so that no secret
// leaves Vigil. It does not receive OTLP (internal/ingest/otlp) or decide
// what is forwarded beyond Config.Signals.
//
// # Queue
//
// ConsumeTraces and ConsumeLogs copy the batch and queue it; they never
// block on the backend and never fail the receiver. The queue holds
// Config.QueueSize batches; when it is full the oldest batch is dropped
// and counted in vigil_forward_dropped_total. Run sends with four
// workers; when its context ends it stops taking batches, sends what is
// queued for at most 5 s more, then counts what is left as failed
// (reason "shutdown").
//
// # Retries
//
// As the OTLP specification says: HTTP 429, 502, 503 and 504, gRPC
// Unavailable, DeadlineExceeded, Aborted, OutOfRange, DataLoss and
// Canceled, ResourceExhausted with a RetryInfo, and connection errors are
// retried with an exponential backoff (1 s doubling to 30 s, ±20%
// jitter), or after the server's Retry-After or RetryInfo delay, for up
// to 5 minutes; anything else (400, 401, 413, 500, InvalidArgument, …) is
// not retried. Each attempt is bounded by Config.Timeout. A partial
// success is logged and its refused items counted (reason "partial").
//
// # Metrics
//
//	vigil_forward_sent_spans_total            spans the backend accepted
//	vigil_forward_sent_log_records_total      log records the backend accepted
//	vigil_forward_failed_total{signal,reason} items not forwarded: rejected,
//	                                          retries_exhausted, partial,
//	                                          shutdown, marshal
//	vigil_forward_dropped_total{signal}       items dropped from a full queue
//	vigil_forward_retries_total{signal}       attempts retried
//	vigil_forward_queue_length                batches waiting
//
// BenchmarkForward, with Vigil's own receiver in the same process on two
// shared cores, measured about 260,000 spans/s over OTLP/HTTP and 300,000
// over gRPC, in batches of 100 spans.
//
// Logs never hold payloads or header values; URLs are logged without user
// information, and repeated failures are logged once per 30 s.
package forward
