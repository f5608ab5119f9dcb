// Package reliability probes `vigil serve`, the real binary, with the
// requests real clients make and the bad ones hostile or broken clients
// make: a browser and a Grafana with direct access (an Origin header, a
// CORS preflight), a remote-read client, Remote-Write senders that repeat a
// timestamp or send a body under the wrong protobuf content type. Each
// test names the finding of issue 17 it guards.
//
//   - TestBadInputCatalogue sends 66 bad inputs over remote write, OTLP,
//     push, the query API and remote read, and records for each the status,
//     whether the server still answers and whether data stored before it
//     is still there.
//   - TestAbuse runs the abuses (looping heavy queries, writers that ignore
//     Retry-After, a crowd of half-sent requests) from 127.0.0.1 while a
//     victim on 127.0.0.2 goes on, and reports the victim's p99 against
//     idle.
//   - TestMemoryBudget sends the bursts that took the server to 18.7 GB
//     under memory.budget 2GiB, and the same remote-write burst to
//     Prometheus 2.42 (only under make reliability).
//
// With VIGIL_RELIABILITY_OUT set (make reliability) the tables go to
// files there; otherwise to the test log.
//
// The package has no code outside its tests.
package reliability
