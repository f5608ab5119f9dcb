// Package otlp owns Vigil's OTLP receiver: OTLP/gRPC and OTLP/HTTP
// (/v1/traces, /v1/metrics, /v1/logs; binary protobuf and JSON; gzip) for
// traces, metrics and logs, decoded into go.opentelemetry.io/collector/pdata
// and handed to the consumers the caller gives it (TracesConsumer,
// LogsConsumer, MetricsConsumer).
//
// It keeps a bad or greedy client from hurting the server: request sizes,
// requests in flight and the nesting depth of attribute values are bounded,
// and spans without a trace or span id are refused, all before a consumer
// sees the data. Its answers follow the OTLP specification, so that real
// exporters act on them: success, partial success (200 / OK with
// partial_success) for data a consumer or the validation refused in part,
// 400 / InvalidArgument for data that will never be accepted, 429 /
// ResourceExhausted and 503 / Unavailable with a retry hint (Retry-After,
// RetryInfo) when the server is overloaded, 500 / Internal when a consumer
// failed otherwise.
//
// Spans with an empty (all-zero) trace id or span id, which the OTLP protos
// call invalid, are dropped and counted in partial_success; a request of
// nothing but such spans is refused with 400 / InvalidArgument. Ids of the
// wrong length, like any other decoding error, refuse the whole request.
// The nesting limit is checked on the encoded bytes, before pdata decodes
// them: pdata's decoders recurse without a bound, and a 19 MB request of
// two million nested lists (a few kilobytes gzip-compressed) overflows the
// goroutine stack, which kills the process.
//
// It can serve both transports over TLS (TLSConfig, mutual with a client
// CA) and ask its clients for credentials as the OpenTelemetry Collector's
// bearertokenauth and basicauth extensions do (AuthConfig,
// Authenticator): a request without them gets 401 / Unauthenticated
// before its body is read. The identity it authenticated is in the
// consumers' context (Identity), and Options.OnRequest lets the caller
// look at every request's headers or metadata (a tenant) first.
//
// MetricsAppender is the metrics consumer that stores OTLP metrics in a
// storage.AppendableV2 with Prometheus's own OTLP translation.
//
// It does not store or index traces and logs, redact them, or decide where
// they go: that is the consumers' job.
package otlp
