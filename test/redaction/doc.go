// Package redaction proves Vigil's redaction end to end through the real
// binary: a corpus of fake secrets of every kind internal/redact knows
// (internal/redact/redacttest), placed in every position a span or a log
// record has — attribute values, arrays, nested maps, span names, events,
// links, status messages, URLs, headers, JSON inside strings, log bodies
// (text, JSON, maps), resource and scope attributes — is sent to `vigil
// serve` with the OpenTelemetry Go SDK's exporters and as OTLP built with
// pdata, and none of it survives in the data directory, the trace store's
// contents, the HTTP API, the CLI's output, Vigil's own logs or what Vigil
// forwards to another OTLP backend; benign look-alikes (UUIDs, trace ids,
// hashes, base64 images, …) placed the same way arrive unchanged. Secrets
// that reach Vigil by other ways are checked the same: the password and a
// header of its forwarding configuration, and the backend's partial-success
// messages quoting a secret, which Vigil logs.
//
// The package has no code outside its tests. The rules themselves are
// tested in internal/redact; these tests check that every path out of the
// process users run goes through them.
package redaction
