// Package remotewrite owns the Prometheus remote-write receiver at
// /api/v1/write: Remote-Write 1.0 and 2.0 over snappy-compressed protobuf,
// the limits that keep a bad or greedy client from taking the server down
// (body size, samples per request, labels per series, label length, active
// series, requests in flight), and the status codes real senders act on:
// 204 stored; 400 a bad payload or a rejected series (not retried, the rest
// of the request is stored); 413 too large; 415 wrong content type or
// encoding; 503 with Retry-After when overloaded (retried); 500 only when
// storing failed (retried; nothing of the request was stored).
//
// Remote-Write 1.0 bodies are decoded from the protobuf wire format
// (decodev1.go), each series' labels built straight from the body's bytes;
// 2.0 bodies by gogo's generated code.
//
// It does not store anything itself: samples go to a storage.AppendableV2.
package remotewrite
