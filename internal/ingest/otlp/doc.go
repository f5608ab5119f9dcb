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
// MetricsAppender is the metrics consumer that stores OTLP metrics in a
// storage.AppendableV2 with Prometheus's own OTLP translation.
//
// It does not store or index traces and logs, redact them, or decide where
// they go: that is the consumers' job.
package otlp
