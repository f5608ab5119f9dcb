// Package hops breaks a request down hop by hop: for one trace, the
// critical path and each service's exclusive time on it; for a route over
// a window, the median and 95th percentile of those times across its
// traces. It renders both as text (a waterfall with the shares) and JSON,
// and serves them over HTTP. It reads spans from internal/traces; it does
// not store spans, derive span metrics or the service graph
// (internal/spanmetrics does), nor parse command lines (cmd/vigil does).
//
// # The critical path
//
// The critical path of a trace is the chain of work that, made faster,
// makes the request faster: the answer to "where did the 8 seconds go?".
// Breakdown computes it as Jaeger's UI does (packages/jaeger-ui/src/
// components/TracePage/CriticalPath, after Uber's CRISP: "CRISP: Critical
// Path Analysis of Large-Scale Microservice Architectures", Zhang et al.,
// USENIX ATC 2022), walking backwards from the end of the root span:
//
//  1. Start at the root with the cursor at its end.
//  2. Among the span's children that end at or before the cursor, take
//     the one that ends last (the "last finishing child"). The span's own
//     time between that child's end and the cursor is on the path; the
//     child's whole interval is on the path, computed by the same walk
//     inside it; the cursor moves to the child's start.
//  3. Repeat until no child is left; the span's time from its start to
//     the cursor is on the path.
//
// A span's exclusive time on the path is thus its duration less the union
// of the on-path intervals of its children. Concurrent children (a fan-out)
// put only the last to finish on the path, and the parent's time before
// it ends is not the parent's own unless no child covers it: the others
// ran in its shadow. The segments partition the root span's interval, so
// the services' shares add up to the root's duration exactly.
//
// Before the walk, spans are put in order as Jaeger does:
//
//   - Asynchronous children are off the path: a span whose link to its
//     parent (or, when it has no parent, to another span of the trace)
//     carries opentracing.ref_type=follows_from, as the OpenTracing shim
//     and Jaeger's translation write FOLLOWS_FROM, and a CONSUMER span
//     whose parent is a PRODUCER span. Their time is their own, off the
//     path: the parent did not wait for them.
//   - Clock skew: a child of another service that does not fit inside its
//     parent but is no longer than it is shifted, with its descendants, to
//     the middle of the parent, as Jaeger's clock-skew adjuster does (the
//     network latency is taken to be the same both ways). The shift is
//     reported per span.
//   - What still overflows is cut at the parent's bounds: a child that
//     starts before its parent counts from the parent's start, a child
//     that outlives its parent (an asynchronous tail, a timed-out call the
//     server kept working on) counts up to the parent's end, and a child
//     wholly outside its parent is off the path.
//   - The root is the earliest span without a parent. Spans whose parent
//     is missing from the trace, and spans caught in a parent cycle, are
//     put under the root and marked orphan.
//
// # Services and virtual nodes
//
// Each segment of the path counts for the service of its span, except a
// CLIENT or PRODUCER span with no child span: it counts for the service it
// calls, named by peer.service (else server.address, net.peer.name,
// db.system.name or db.system) — the external API or database with no
// spans of its own, a "virtual node" as the service-graph connector calls
// it. A client span whose server span is in the trace counts for the
// caller only for its own time outside the server span (the network, the
// client's queue).
//
// Each service gets a role, for people who do not know the service names:
// "model inference" (a SERVER span carrying gen_ai.operation.name or
// gen_ai.request.model), "vector search" or "database" (db.system on its
// spans or on the client spans that call it; vector search for the
// vector databases), "external tool" (a virtual node called under a
// gen_ai execute_tool span), "external service" (another virtual node),
// "API gateway" (the root service when it only forwards: no INTERNAL
// spans, and every CLIENT span of it is answered by a SERVER span of
// another service) and "application" (the rest).
//
// # Routes
//
// A route is the name of a root span (for HTTP servers "METHOD route") or
// its http.route attribute; Aggregate matches either. It breaks down the
// newest MaxTraces traces of the route in the window (the counts and the
// slowest traces are over all of them) and reports, per service, the
// median and 95th percentile of its exclusive time over the traces it
// appears in, and its share: its exclusive time summed over the traces
// broken down, over their summed durations.
package hops
