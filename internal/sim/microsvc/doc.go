// Package microsvc simulates the telemetry of a microservice application
// with one injected fault, for testing the generic diagnosis layer (`vigil
// diagnose --entity-label service`, which ranks services as metric_anomaly
// causes) on data shaped like the public microservice RCA benchmarks
// (RCAEval RE1/RE2: one faulty service among about a dozen; CPU, memory or
// latency faults; per-service CPU, memory, load and latency).
//
// The applications are Sock Shop (13 services, the default) and Online
// Boutique (11, its load generator left out), with their real call
// graphs. The model, one step per scrape (Config.Step, 15 s by default):
//
//   - Load: a closed-loop load generator (users with a think time, so
//     slower answers mean fewer requests) whose users follow a diurnal
//     cycle and a slow wander; each callee gets its callers' requests times
//     the calls per request, with Poisson-like noise.
//   - CPU: idle plus per-request CPU, with noise, capped at the container's
//     limit. Memory: a base working set plus a garbage-collected heap (a
//     sawtooth that grows with the requests), with noise.
//   - Latency: a service's own time, slowed by queueing (1/(1-ρ), ρ its CPU
//     demand over its limit), plus its synchronous callees' latencies times
//     the calls; a scrape sees the mean of the step's requests. Errors grow
//     with saturation and flow from callees to callers.
//
// Faults (FaultSpec; one per run, on one service, onset between 40% and
// 65% of the run unless given): a CPU hog (1–2 cores: the service's CPU
// and latency rise, and so do its callers' latencies), a memory leak (the
// working set ramps to 3–6× its base over minutes; garbage collection
// slows it a little), a latency injection (200–800 ms on every response:
// its callers wait, throughput falls), an availability fault (20–60% of
// its requests fail, and a caller's request fails whole when one of its
// calls does: 1-(1-p)^calls of them, so an error shows as much in a chain
// of callers as in the service that causes it). Each has a subtle variant that
// moves its metric by 1.8× the service's healthy spread, measured on the
// healthy run of the same seed. Config.FaultScale and NoiseScale multiply
// the effects and every noise. Truth reports the fault with internal/sim's
// Fault fields; the kind is always metric_anomaly and the variant the
// fault's kind.
//
// Every run, healthy or faulty, holds the same decoys (Decoys): two
// scrapes of 1.8× traffic at the entry, a container restart between 10%
// and 30% of the run (its counters start over; the pod's network counters
// do not), and a service whose latency is naturally high-variance all run
// long.
//
// Output (Config.Style): "prometheus" is what Prometheus scrapes in
// Kubernetes — cAdvisor's container_cpu_usage_seconds_total,
// container_memory_working_set_bytes, container_spec_memory_limit_bytes,
// container_network_{receive,transmit}_bytes_total, the services'
// http_requests_total{code} and http_server_request_duration_seconds
// histogram, and up — each with service, namespace, pod and container
// labels; "rcaeval" is the RCAEval columns as gauges: cpu, mem, load,
// latency{quantile="0.5"|"0.9"} and error, by service. Config.Graph adds,
// in either style, the service graph that the OpenTelemetry Collector's
// servicegraph connector would derive from the application's traces
// (traces_service_graph_request_total, _failed_total and the
// _server_seconds and _client_seconds histograms by client and server,
// the virtual client "user" in front of the entry), at the same step:
// what the generic layer walks from a symptom to its cause.
// Generator.WriteOpenMetrics writes a run as OpenMetrics text (what
// promtool's backfill and `vigil import` read); Generator.Run appends it to
// any storage.AppendableV2, one commit per scrape round.
//
// Determinism: time is never read and every concern draws from its own
// seeded math/rand/v2 stream, always the same number of draws, so the same
// Config and FaultSpec give byte-identical output and a faulty run equals
// the healthy run of its seed up to the onset.
//
// It does not own the GPU cluster simulator (internal/sim), the scenario
// names of `vigil simulate`, nor anything that diagnoses.
package microsvc
