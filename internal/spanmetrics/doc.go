// Package spanmetrics derives metrics from spans, as the OpenTelemetry
// Collector's spanmetrics and servicegraph connectors do, and writes them
// into Vigil's metric store: request rates, errors and latencies per
// service and operation, per model, provider, error type and tenant, and
// the service graph (who calls whom, how often, how slowly, how often it
// fails), and each operation's self time (its spans' durations less their
// children's). It owns the running totals, their cardinality bound, the
// pairing of client and server spans, and the exemplars that lead from a
// metric to a trace. It does not store spans (internal/traces does), compute per-hop
// breakdowns (internal/hops does) or receive OTLP (internal/ingest/otlp).
//
// # Names
//
// The names are the connectors' as a Prometheus exporter writes them, so a
// graph or a dashboard built on someone else's Collector works on Vigil's
// own metrics and the other way round:
//
//	traces_span_metrics_calls_total{service_name, span_name, span_kind, status_code,
//	    gen_ai_request_model, gen_ai_provider_name, error_type, tenant}
//	traces_span_metrics_duration_seconds_bucket{..., le} / _sum / _count
//	traces_service_graph_request_total{client, server, connection_type}
//	traces_service_graph_request_failed_total{client, server, connection_type}
//	traces_service_graph_request_server_seconds_bucket{client, server, connection_type, le} / _sum / _count
//	traces_service_graph_request_client_seconds_bucket{client, server, connection_type, le} / _sum / _count
//
// span_kind is SPAN_KIND_SERVER, SPAN_KIND_CLIENT, …; status_code is
// STATUS_CODE_UNSET, STATUS_CODE_OK or STATUS_CODE_ERROR. The last four
// span-metric labels are present only on spans that carry the attribute
// (span first, then resource): gen_ai.request.model, gen_ai.provider.name,
// error.type and the tenant attribute (Config.TenantAttribute, default
// tenant.id). A series past Config.MaxSeries is counted in one overflow
// series labelled otel_metric_overflow="true", as the connector's
// aggregation_cardinality_limit does.
//
// Two counters are Vigil's additions, with the span metrics' labels:
//
//	traces_span_metrics_timeouts_total  spans whose error.type names a timeout
//	                                    or deadline (or gRPC status 4)
//	traces_span_metrics_retries_total   spans that are retries: they carry
//	                                    http.request.resend_count > 0, or
//	                                    repeat (same service, name and kind)
//	                                    a sibling that failed before them
//
// A timeouts or retries series is written once it has counted something.
//
// # Self time
//
// A span's duration holds its children's: when a callee slows, every
// caller up the tree lasts longer by as much, and a ranking by durations
// blames the callers. Vigil adds, with the span metrics' labels,
//
//	traces_span_metrics_self_seconds_sum / _count
//
// the spans' self time: a span's duration less the union of its children's
// intervals, as Jaeger's trace statistics count it. The children are cut
// at the parent's bounds (a child that outlives its parent counts up to
// the parent's end, one wholly outside not at all), and children that
// overlap — a fan-out, asynchronous work — count once. A child of another
// service that does not fit in its parent only by the hosts' clock skew
// (it is no longer than the parent) is first moved to the parent's middle,
// as internal/hops and Jaeger's clock-skew adjuster do; an asynchronous one
// (a CONSUMER span, or a FOLLOWS_FROM link to its parent) is not. A span
// with no children has its duration as its self time; a CLIENT span
// answered by a SERVER span has the time outside it (the network, the
// client's queues). internal/hops' per-trace exclusive time is another
// measure: the time on the critical path, which needs the whole trace.
//
// Children come in other batches than their parent, and usually before it
// (they end first), but not always: a span is held EdgeWait for its
// children before its self time is taken, and children wait for their
// parent EdgeWait and then treeWait, as the graph's halves do. A child
// that comes after its parent's self time was taken is late, and does not
// count; one whose parent never comes is dropped. The spans and children
// waiting are bounded by MaxPendingEdges (past it, a span's self time is
// taken at once, with the children in so far, and a child is dropped), and
// a span's children by 256 (past it, those closest in time are merged: the
// gaps between them count as theirs). Each outcome is counted in
// vigil_spanmetrics_self_time_spans_total. A self time is thus written up
// to EdgeWait and a flush after the span's duration.
//
// An operation's self time is written once one of its spans has had a
// child, from the flush that wrote that span's duration (so the two have
// the same history, as a rule): a leaf operation's self time is its
// duration, and a copy of the duration series would add nothing but
// weight to it where series are compared.
// They are a sum and a count, not a histogram: the diagnosis reads the
// mean per span (a _sum over its _count), and the duration's buckets
// already say how slow; a histogram would add 20 series per label set.
//
// # Buckets
//
// The duration histograms are classic Prometheus histograms with the
// connectors' default bounds — 2, 4, 6, 8, 10, 50, 100, 200, 400 and
// 800 ms, 1, 1.4, 2, 5, 10 and 15 s — extended with 30, 60 and 120 s,
// because model inference takes tens of seconds and the connectors' last
// bound would put every LLM call in +Inf. Config.Buckets replaces them.
//
// # Service graph
//
// A CLIENT (or PRODUCER) span is paired with the SERVER (or CONSUMER) span
// whose parent it is: the same trace, the server's parent span id equal to
// the client's span id, across batches. A pair makes one request of the
// edge client → server, failed when either side has status ERROR, with
// the client span's duration in the client histogram and the server's in
// the server histogram. connection_type is "messaging_system" for
// producer/consumer pairs, "database" when the client span carries
// db.system or db.system.name, and "" otherwise. A half that waits longer
// than Config.EdgeWait for its other half expires, as in the connector: a
// client span with peer.service, db.namespace, db.name or server.address
// becomes an edge to that "virtual node" (connection_type "virtual_node",
// or "database" for a database), with its own duration on both sides; a
// server span without a parent becomes an edge from the virtual node
// "user"; any other half is dropped and counted.
//
// Real instrumentations do not always record a call as such a pair, so
// the graph also reads the span tree, as Jaeger's and Tempo's per-hop
// views do. A span under a span of another service is a call from that
// service when no client/server pair records it:
//
//   - a SERVER span whose parent is a SERVER, INTERNAL or unspecified
//     span of another service (no CLIENT span in between);
//   - a span of no call kind (INTERNAL, or no kind at all, as some
//     tracers write every span) under a span of another service; under a
//     CLIENT span of another service, it is that call's server half when
//     no SERVER span answers it;
//   - a span of no kind that names a peer (peer.service, server.address,
//     ...) is a call, as a CLIENT span is;
//   - a CLIENT span that no server answers and that names no peer, under a
//     span of another service: a dependency that records its calls under
//     its own service name (connection_type "database" with db.system).
//
// Such a request has the callee's own duration on both sides and counts
// as outcome "tree" in vigil_spanmetrics_service_graph_halves_total.
// Spans of one service under each other are no call. The recent spans'
// services are held for twice EdgeWait, at most MaxPendingEdges of them,
// so a child placed after its parent, or its parent after it, is placed
// either way. A parent ends after its children, often long after (a
// request that retrieves, then waits seconds for a model's answer): a span
// with no client half whose parent has not come when EdgeWait is over
// waits for it five minutes more (treeWait, Prometheus's lookback), still
// counted in MaxPendingEdges; Settle ends that wait too. Without it, spans
// exported one at a time as they end lost 27 % of the calls to the first
// service a request reaches (866 of 1,181 in the simulator's server-only
// style), which a pair of client and server spans, ending together, never
// does.
//
// # Writing
//
// Totals are cumulative from the Consumer's creation, as the connectors'
// default cumulative temporality: each flush appends every series' running
// total (so rate() works between flushes whether or not spans arrived) in
// one transaction, timed by the injected clock — never earlier than the
// previous flush plus a millisecond, so a fixed or coarse clock still gives
// increasing timestamps. ConsumeTraces flushes when Config.FlushInterval
// has passed on the clock since the last flush; 0 flushes after every
// batch, which suits simulated time. Run flushes every FlushInterval of
// wall time, so the series keep their samples while no span arrives.
//
// Exemplars carry trace_id and span_id: on a calls series (value 1) and on
// the duration bucket a span falls in (value: its duration in seconds),
// timed at the span's end. Each flush writes, per series and bucket, the
// newest exemplar seen since the last flush, so
// /api/v1/query_exemplars leads from a latency spike to one of its traces.
package spanmetrics
