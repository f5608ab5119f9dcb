// Package otlpbench measures the OTLP receiver's overhead on the request
// path: spans sent over OTLP/gRPC by a real gRPC client, received,
// redacted and stored in the embedded trace store, against the same spans
// written straight to the store — alternating the two at least three
// times — and the redaction's cost as a ratio to ingest without it.
//
//	go test ./test/otlpbench -run '^$' -bench . -benchtime 1x
package otlpbench
