// Package nezha reads one day of the Nezha multimodal root-cause-analysis
// data set (github.com/IntelligentDDS/Nezha, MIT; Yu et al., FSE 2023) and
// turns each of its faults into the input a user would give `vigil
// diagnose`: OpenMetrics text with a service label.
//
// # What it reads
//
// A day directory (2022-08-22: Online Boutique; 2023-01-29: Train Ticket)
// holds <day>-fault_list.json, the faults grouped by hour, each with
// inject_time, inject_timestamp, inject_pod and inject_type
// (cpu_contention, cpu_consumed, network_delay, return, exception); and
// metric/<pod>_metric.csv, one row a minute per pod: CPU, memory, syscalls,
// network, client and server latency P90/P95/P99, workload and success
// rate, and columns of the pod's node (NodeCpuUsageRate(%), ...) that every
// pod on that node shares: each column a gauge, but each side's latency
// quantiles one Prometheus summary (nezha_pod_client_latency_seconds
// {quantile="0.9"|"0.95"|"0.99"}, the same for server), whose _count is
// the pod's workload times the rows' interval, summed: the requests the
// quantiles are of, as an exporter's summary has them (the data set counts
// a pod's requests served, not its calls out: the client side's count is
// that proxy); and, where the day has them (Train Ticket), log/*.csv, the
// containers' log lines, which WriteLogs writes as OTLP JSON logs (a
// resource per pod, the text the container wrote as the body, no
// severity), batched as a Collector's filelog receiver and file exporter
// write them, for `vigil diagnose --input` to count their templates as
// `vigil serve` would (internal/logsignals); and,
// where the day has it (Online Boutique), metric/destination_50.csv and
// metric/source_50.csv, each call's median latency a minute as the
// callee's side and as the caller's measured it, for the service graph's
// server and client seconds; and, where the
// day has them (Train Ticket), trace/*.csv, the spans (trace, span and
// parent ids, pod, operation, start and end; no span kind, no status),
// which WriteTraces writes as OTLP JSON, batched as a Collector's file
// exporter behind its batch processor writes them, for `vigil diagnose
// --input` to derive the span metrics and the service graph from, as
// `vigil serve` would (the graph from the span tree: the spans have no
// kind). The other files (front_service.csv, dependency.csv, traceid/) are
// not read.
//
// # Quirks, handled and reported (Day.Notes)
//
//   - The injection time is inject_time, in UTC, as Nezha's own evaluation
//     takes it: on 2023-01-29 most inject_timestamp values are 8 h off and a
//     few others up to a minute.
//   - The TimeStamp column of some metric files is shifted by 2×10⁸ s: rows
//     are timed by the Time column ("2022-08-22 03:51:19.607 +0000 UTC
//     m=+0.11"), which agrees with the injection times.
//   - PodSuccessRate(%) is 0 in every row: a column that never moves says
//     nothing, and it is written like the others.
//   - A few rows of the log files are two lines run together, which is no
//     CSV: they are skipped and counted.
//   - Consecutive log files overlap by a second or so: a line in two files
//     is kept once, and counted.
//
// # A fault as a case
//
// The faults are about eight minutes apart, and the data starts minutes
// before the first one. A case is the real rows from After past the
// previous injection (a minute before this one when they are closer, or
// from the first row) to After past this one: a
// window that holds no other fault's first minutes and gives the engine
// what history there is, a few minutes. The diagnosis is at the injection
// plus After; the root cause is the injected pod's service.
//
// # Modalities
//
// Run scores each modality alone and together: the pods' metrics, the
// logs, the traces, the calls' latencies (Online Boutique), metrics with
// logs, metrics with traces, and all three. The data set records spans and
// log lines for only about three minutes around each injection (from a
// minute or so before it): the traces alone are diagnosed where their
// spans end, and the logs or the traces alone at the span metrics' 15 s
// (Case.Step); with the metrics, a case is diagnosed at the metrics' time
// (After past the injection) and at the step the data gives `vigil
// diagnose --input` (no --step; the engine reads each series once a
// sample, so the minute rows are one reading a row at a finer step), and
// the engine reads the span-derived series only over the steps the traces
// cover.
package nezha
