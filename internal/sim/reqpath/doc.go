// Package reqpath simulates the request path of an AI application as OTLP
// traces and logs: user → API gateway → AI application → vector DB → model
// server (vLLM) → external tool, with a correlation id (the gateway's
// x-request-id) and a tenant on every span and every log record.
//
// It owns the request-path half of issue 5's simulator: the shape of the spans
// (kinds, names, HTTP, database and OpenTelemetry GenAI attributes, vLLM's own
// latency attributes), realistic per-hop latencies (tens of milliseconds at
// the gateway, hundreds in vector search, seconds to tens of seconds of model
// inference, about a second for the external tool), errors, retries and
// timeouts, per-hop logs carrying synthetic fake secrets for issue 8's
// redaction, and the request-path faults: dependency_slow, tenant_failure,
// bad_rollout, inference_capacity_saturated and kv_cache_exhausted, each with
// a subtle variant.
//
// It does not own the cluster, its metrics or the scenario catalogue
// (internal/sim), nor anything that reads traces (ingestion, span metrics,
// the service graph). The caller describes the deployments — so pod and node
// names match the metrics it writes — and the faults; [New] and
// [Generator.Batches] give one [Batch] of pdata per simulated interval, and
// [WriteFiles] writes them as the OpenTelemetry Collector's file exporter
// does: one ExportTraceServiceRequest or ExportLogsServiceRequest JSON per
// line.
//
// Output is deterministic: the same [Config] gives byte-identical files. Each
// request draws from its own random stream (seeded by Config.Seed and the
// request's index), so a fault changes only what it touches. Time is never
// read: Config.Start is required.
//
//	cfg := reqpath.Config{Seed: 1, Start: start, Duration: time.Hour,
//		Faults: []reqpath.Fault{{Kind: reqpath.KindDependencySlow,
//			Entity: map[string]string{"service": "vector-db"}, Onset: start.Add(30 * time.Minute)}}}
//	err := reqpath.WriteFiles(cfg, tracesFile, logsFile)
package reqpath
