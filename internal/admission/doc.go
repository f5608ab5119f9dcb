// Package admission decides what `vigil serve` takes on when it is pushed
// harder than it can bear, so that it answers 503 or 429 with Retry-After
// instead of running out of memory, and one client cannot starve the
// others.
//
//   - Budget bounds the memory that ingest requests (remote write, OTLP,
//     push) hold while they are decoded and stored, in bytes, with a fair
//     share for each client: a request is charged its body as sent plus
//     its decoded size times the measured expansion of its decoder.
//   - FairGate bounds the queries of the HTTP API that run at once and
//     shares the cores between clients, so that a looping dashboard
//     cannot starve the pager's own queries.
//   - Conns bounds the connections of the HTTP server without letting a
//     crowd of half-sent requests lock out new clients, and keeps a
//     reserve of connections for the health probes.
//   - Memory resolves the memory budget (configured, or the cgroup's
//     limit) and sets GOMEMLIMIT from it.
//
// A client is the IP address a request comes from (ClientOf).
package admission
