// Package logsignals turns log records into counters the diagnosis can
// use: NCCL timeouts and errors, CUDA errors and out-of-memory, OOM kills,
// NVIDIA XIDs from kernel logs, HTTP 5xx responses, GPUs fallen off the
// bus; and the templates of the records (with internal/logtemplates'
// Drain miner). It owns the patterns (MatchText,
// MatchRecord), the levels (severity.go), the running totals
// and their cardinality bound, and writes them into a metric store
// (storage.AppendableV2). It does not receive, store, index or redact
// logs (internal/ingest/otlp, internal/traces, internal/redact), nor
// decide what the counters mean (internal/diagnose).
//
// # Series
//
//	vigil_log_events_total{event, node, namespace, pod, service}
//	vigil_log_xid_total{node, xid, pci}
//	vigil_log_templates_total{node, namespace, pod, service, severity, template}
//	vigil_log_template_successions_total{node, namespace, pod, service, severity, template, next}
//	vigil_log_span_first_total{node, namespace, pod, service, severity, span_name, template}
//
// event is one of nccl_timeout, nccl_error, cuda_error, cuda_oom,
// oom_killed, xid, http_5xx, gpu_fell_off_bus, system_oom (an OOM kill
// for the whole host, also counted as oom_killed). The entity comes from
// the resource attributes: node is k8s.node.name, else host.name; namespace
// k8s.namespace.name; pod k8s.pod.name; service service.name. An empty
// one is left out. xid is the XID code, pci the GPU's PCI address as the
// driver writes it ("0000:3b:00"). Config.MaxSeries bounds both families
// together; a new series past it counts in an overflow series labelled
// otel_metric_overflow="true" (vigil_log_events_total keeps its event
// label there, vigil_log_xid_total keeps none).
//
// # Templates
//
// A record's level is its SeverityNumber (OpenTelemetry's ranges), else
// its SeverityText, else a structured body's level field (level, lvl,
// severity, loglevel, log.level, levelname; a map body, or a JSON object
// in text), else the text's: a level word among its first six tokens,
// bare or bracketed ("ERROR", "[WARN]", "ERROR:root:"), a level=… pair
// (logfmt, Go's slog), klog's and glog's leading letter ("E1112 …"). A
// record at Templates.MinSeverity or above (by default info: every record
// that states a level; warn; or all, records with no level too) is mined:
// its message goes to its service's Drain miner (the pod's, or the
// node's, where it names no service), and its template's series counts
// it. The message is the text, or a structured body's message field; where
// the level came from the text, what follows the level: the header before
// it (a timestamp, a thread, the level word) is the same on every line of
// the layout, and left in it makes any two short lines of a length look
// alike to Drain (drain3's advice is the same: mine the message, not the
// header). The template label is the cluster's template when the series
// was made, so that a template that generalises later keeps counting
// where it did. Info lines are mined because a code path's steps are
// logged at info: a request that fails between two of them stops the
// second while the first goes on, which internal/diagnose reads as a
// break. With min_severity warn, records below warning are not mined, and
// a one-pass gate (no level word of warning or above anywhere in the text)
// skips them without decoding JSON. Templates.MaxPerService bounds each
// miner (the least recently seen template goes); Templates.MaxSeries
// bounds the template series, apart from the events' MaxSeries, so that a
// service's many info templates never crowd out an XID's counter; past it
// a template counts in its level's overflow series.
//
// A record that says where it was written is its statement's: OpenTelemetry's
// code attributes (code.file.path and code.line.number, or the older
// code.filepath and code.lineno), else a source location among the first
// tokens of its message (Logback's "t.s.TravelServiceImpl#451", klog's and
// Go's "controller.go:114": logtemplates.Location). One statement is one
// template, whatever its variables (a list of two names or of three, which
// Drain, splitting by token count, would make two), and two statements
// whose texts are alike are two templates (Drain would merge them); its
// label is its first record's masked text. A service has up to
// Templates.MaxPerService statements; records past them, and records that
// name no location, are mined by Drain.
//
// # Successions
//
// With Templates.Successions (the default), a mined record that names its
// span (trace and span ID) counts in vigil_log_template_successions_total
// under the template of the span's previous mined record (template) and
// its own (next, with its level as severity): which step of a request
// came next after which. The previous record is the span's latest in
// time, in this batch or an earlier one; a record older than its span's
// latest counts nothing. The Consumer remembers the last record of the
// 65,536 most recent spans, in two generations. The series count towards
// Templates.MaxSeries, with the templates'. A request that fails between
// two statements stops the second coming next after the first, however
// the service's other paths mix: internal/diagnose tests each succession
// against the rest of its first template's records.
//
// The Consumer is also a traces consumer (ConsumeTraces): it learns the
// name of each span it receives (65,536 recent ones, in two generations),
// and counts each span's first mined record under its span's name in
// vigil_log_span_first_total, once, when the later of the two comes (the
// span, which is sent when it ends, or its first record). A span that
// logged nothing counts nothing: with the span metrics' calls of that
// name, internal/diagnose reads the spans that no longer begin with the
// statement they began with (a request that fails before its first
// statement). Where traces are read apart from the logs (a trace file
// before a log file), SetSpanNames gives the names.
//
// BenchmarkConsumeLogs, the GPU cluster's mix (most lines info, one in
// seven JSON): 216 k records/s on one core with the miner at info (the
// default: every line is levelled, a JSON line decoded, and mined), 727 k
// at warn, 1.10 M with the miner off; with one record in ten a warning or
// an error, 217 k at info. The miner is a third of the time at info, the
// JSON bodies another third. Measured again on 2026-12-02 (another load
// on the machine; three runs of 2 s each): the mix 453 k records/s, 485 k
// before statements had templates of their own (the scan for a location
// and its check against the masked text); records that name their
// statement and span, four to a span, 416 k with the successions and
// span-first counts, 451 k without.
//
// # Matching
//
// A record is matched on its body: plain text; a text that holds a JSON
// object, or a map body, by its message fields (message, msg, log,
// MESSAGE, error, err, exception, nested ones such as error.message) and
// its HTTP status fields (status, status_code, statusCode,
// response_code, http.response.status_code, http.status_code, nested
// http.response.status_code); and on its attributes
// http.response.status_code and http.status_code. A record counts at most
// once per event; a CUDA OOM is not also a cuda_error, an NCCL timeout not
// also an nccl_error; XID 79 is also gpu_fell_off_bus. The patterns and
// their near-misses are listed with real-looking lines in
// testdata/lines.txt. One incident often writes several matching lines
// (one per rank of a job, a summary line after the detail), so read the
// counters as "how often, from where", not as a count of incidents.
// Known follow-up lines are not counted: the kernel's
// "oom-kill:constraint=…" (its "Killed process" line counts), PyTorch's
// "Some NCCL operations have failed or timed out" and "Exception (either
// an error or timeout) detected by watchdog".
//
// # Writing
//
// Totals are cumulative from the Consumer's creation. Each batch of logs
// that matched appends every series it changed once, in one transaction,
// at the batch's newest record time (Timestamp, else ObservedTimestamp),
// capped at the injected clock and never earlier than the previous write
// plus a millisecond. A new series first gets a 0 at the previous write
// (at most 5 minutes earlier), so increase() and rate() see its first
// event. Samples the store refuses for good are skipped and counted; any
// other failure is logged and counted, and the totals are written with
// the next batch: ConsumeLogs never returns an error, so that an OTLP
// client's retry does not count the same records twice.
//
// # Cost
//
// Cheap substring gates run before any regular expression, and a JSON
// body is decoded only when its text holds a pattern's keyword or a 5xx
// status field. BenchmarkConsumeLogs (a GPU cluster's usual mix, one
// record in 50 an event) measured about 1.5 million records/s on one of
// two shared cores; an ordinary line costs about 0.3 µs, an XID line 1.5 µs.
//
// # For the diagnosis
//
// internal/diagnose reads the counters (its logs.go and hyp_logs.go):
//
//   - vigil_log_xid_total is XID evidence like dcgm-exporter's, with the
//     GPU found by its PCI address (dcgm-exporter's pci_bus_id label), the
//     node where none maps; the same XID from both is one cause with both
//     as evidence, and one the exporter missed (no XID field, a repeat the
//     sticky gauge hides, no exporter at all) is a cause of its own.
//     gpu_fell_off_bus with no XID line counts as XID 79.
//   - nccl_timeout in a training job's ranks is the job's stall when its
//     GPU activity hides it (and, with no metrics of the job at all, the
//     stall of the workload its pods belong to); the stall's summary names
//     the first nccl_error, cuda_error, cuda_oom, oom_killed or XID the
//     job's ranks or nodes logged in the 15 minutes before the timeouts.
//   - oom_killed in a pod is pod_oom_killed (sooner than kube-state-
//     metrics' restart, without its stale last reason); system_oom (the
//     kernel's killer acting for the whole host, not a container's memory
//     limit) is node_memory_pressure on its node.
//   - http_5xx of a service the service graph does not cover is
//     error_rate_high when its count per step jumps.
//   - vigil_log_templates_total is the generic layer's (--entity-label):
//     a warning template whose records rose, or an info template that fell
//     behind another of its pod's, ranks its service (generic_logs.go);
//     so does a succession that fell behind the rest of its first
//     template's records (a step that no longer comes next in its spans).
package logsignals
