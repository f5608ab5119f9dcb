// Package redacttest generates the fake secrets and benign look-alikes that
// the redaction tests use: random tokens of the right shape in their usual
// context (a header, a URL, key=value, JSON), never real ones, and values
// that resemble secrets but must pass unchanged (UUIDs, trace ids, hashes,
// base64 images, model names, English about passwords).
//
// It owns the generators and the list of substrings of a secret that must
// not survive redaction (Distinctive). It does not redact, place values in
// telemetry or check outputs: the tests of internal/redact and
// test/redaction do. Every generator is deterministic for a seed, so a
// failing case can be reproduced.
package redacttest
