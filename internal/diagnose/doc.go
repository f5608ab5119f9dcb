// Package diagnose is Vigil's diagnosis engine: from the telemetry of a
// window before an evaluation time it finds the symptoms (a training job
// that stalls or slows, inference latency, time to first token, queues and
// errors that grow) and ranks their probable root causes, each with its
// evidence, a calibrated confidence and the action to take; problems with
// no symptom yet are findings.
//
// The engine has two layers. The generic layer (internal/detect, and
// generic.go here for --entity-label) finds onsets and robust deviations
// with a relative floor, compares an entity with its peers at the same
// moment, and ignores blips; where the data holds a service graph
// (traces_service_graph_*, Vigil's or a Collector's), generic_graph.go walks
// it from the entity ranked first down to the anomalous callee that
// explains it (its calls slower or failing, or waited on longer by their
// callers than the callee itself works: its network). The knowledge layer is one hypothesis per
// cause kind (hyp_*.go): which signals evidence it and how strongly, which
// symptoms it explains, what to do; the request path's (span metrics and
// the service graph, requestpath.go) adds latency and error symptoms at
// the services requests enter by, dependency_slow and tenant_failure.
// The counters internal/logsignals derives from logs (logs.go,
// hyp_logs.go) are evidence too: the XIDs the kernel logged (mapped to a
// GPU by its PCI address, merged with dcgm-exporter's), NCCL watchdog
// timeouts as a training job's stall with the first error logged before
// them, the kernel's OOM kills, and HTTP 5xx lines of services that span
// metrics do not cover. rank.go merges, explains away and weighs the
// candidates into the Report.
//
// # The generic layer's evidence beyond spreads
//
//   - Log templates (generic_logs.go). internal/logsignals counts each
//     pod's records by level and template (Drain):
//     vigil_log_templates_total. Two changes rank a service. A rise:
//     counts are Poisson, so a warning template's rise is tested as one:
//     with the same rate throughout, the records after a split are
//     binomial among all of them with the share of the logs' covered time
//     after it. A break: an info template (a step of the normal path)
//     that came slower and fell behind another info template of the same
//     pod, as when requests fail between two log statements and the second
//     is no longer written while the first still is; the pair's counts
//     before and after a split are a 2×2 table, Fisher's exact test gives
//     the chance of the fall with the two in a constant ratio, and the
//     break's p-value is the larger of that and of its own rate's fall
//     (both must hold: less traffic lowers every line alike, more traffic
//     on a partner lowers no line). Every step the logs cover is tried as
//     the split (their change does not wait for 1-minute metric rows), and
//     so is every stretch of 2, 4, 8, 16, ... steps (dyadic lengths, as
//     a multiscale scan tries them) that ended before the window did: a change that went back (a
//     fault that ended, a restart that cured it; a chaos experiment's few
//     minutes) is diluted by the steps after it when set against the
//     window's whole rest, and is tested against the steps before it and,
//     apart, the steps after it, both to hold (the larger p-value; so a
//     line that came faster later does not make the minutes before it a
//     fall). The splits share half of the test's level and the stretches
//     the other half (a weighted Bonferroni correction: a split's p-value
//     is multiplied by twice the splits' number, a stretch's by twice
//     theirs), then by the entity's templates (or pairs) tried. The half
//     costs a change that lasted: a line written for every other request
//     over the last ten of thirty minutes (p = 7e-5 before the
//     corrections) no longer reaches a cause's bar; a line of Train
//     Ticket's route service that stopped for two minutes and came back
//     now ranks it first. Bursts (a batch job's forty
//     lines at once) are divided out by the counts' quasi-Poisson
//     dispersion about the two rates, and a pair whose share wanders from
//     step to step (two endpoints' traffic mixing anew) by the share's
//     quasi-binomial dispersion. An info line that rises is traffic, a
//     warning that stops a recovery: neither is judged. What is left
//     becomes a standard normal deviate, ranked next to the metrics'
//     robust spreads; the cause's evidence is the template (and its
//     partner), the counts before and after, and the query (a break's:
//     the ratio of the two). No template tested, or p ≥ 0.5, no score.
//     A break's p is at least its own rate's fall's, and a tail at least
//     its first term, so a template whose rate fell by too little to score
//     after the corrections is paired with none, and a pair's exact tails
//     are summed only where their first term could score
//     (BenchmarkLogBreaks, one pod's 200 info templates over an hour at
//     30 s: 3.6 ms steady, 0.44 s when the pod's traffic halves and every
//     template's rate falls; 25 s before these bounds).
//     Where the records name their spans, the steps of one request are
//     known, not guessed from the minutes' counts:
//     vigil_log_template_successions_total counts the records of a
//     template that came next after another's in the same span. A
//     succession break is the second template no longer coming next after
//     the first while the first goes on: the same two tests (its own
//     rate's fall; a 2×2 table, here of the succession against the rest of
//     the first template's records, with the share's dispersion), paid for
//     with the pairs. A path no longer called stops both and breaks
//     nothing; a helper statement that two paths log hardly falls when one
//     path breaks before it, but its succession in that path does. With
//     traces as well, the spans of a name (the span metrics' calls) are
//     the step before a span's first record (vigil_log_span_first_total):
//     a request that fails before its span's first statement writes no
//     record, and only the span says it came.
//     The counts are binned at the view's step or at logStep (15 s, the
//     span metrics' flush interval) where the view's is coarser, since
//     records are written as they come, not on the metrics' minute rows;
//     and stretches where no template of any entity was written for two
//     steps running are left out, not counted as steps with no records
//     (a log pipeline that was down, a data set that keeps logs only
//     around its faults).
//     The first step the logs cover counts for the share of it they cover
//     (at least half, or it is left out): its records are of that time
//     only, in the rates' time shares and in the dispersion, where each
//     count's square is taken over its share (a data set that keeps a
//     minute of logs before an injection has four 15 s steps of history,
//     and a break in the first is a break).
//   - Quantiles of few requests (generic.go, thinQuantiles). A summary's
//     quantile q whose _count rose by n since its previous sample has n(1-q)
//     observations above it; under one it is the slowest request, not the
//     service's latency, and the reading is not judged (a service called
//     a few times a minute: p99 5 ms one minute, 28 s the next). A
//     _count that is still zero has observed nothing, however long it
//     holds: its quantiles are of no request (a client library reports NaN
//     there) and are not judged either.
//   - The traces' own time (tracecover.go). The series derived from spans
//     (traces_span_metrics_*, traces_service_graph_*) are read only over
//     the steps the traces cover: a step with a sample of a calls series
//     of any service, or one such step missing between two that have one.
//     Their writer appends every series' total at each flush while it
//     runs, called or not, so a stretch with no calls sample at all is a
//     stretch without traces (a pipeline that was down, a data set that
//     keeps spans only around its faults), not every service's calls
//     falling to zero; without this the totals held over the lookback read
//     as that fall where the traces end, and ranked first. A service whose
//     calls stop while the others' are written still shows its fall.
//   - A series' own readings (data.go, generic.go ownReadings). A series
//     sampled coarser than the steps (its median gap between samples is
//     two steps or more: 1-minute rows read every 15 or 30 s, where span
//     metrics or log counts set the step) is read once a sample: a step at
//     which the lookback holds the sample of the step before is no reading
//     (PromQL's lookback repeats a sample at every step until the next).
//     Its history counts its samples (historyBound below), a change holds
//     for two of them rather than for two steps of one (persistentMax), a
//     counter's increase is the one from its previous sample rather than
//     that and a zero at each step between, and internal/detect skips the
//     held steps as no sample. Read at the steps, one minute row counted
//     as two or four readings, and a rarely called service's p99 moved
//     584,920 spreads against "eight readings" that were four rows. A
//     series sampled at about the step (a scrape late now and then) is
//     read at every step, as before.
//   - History bounds the order (generic.go, historyBound). With n
//     readings before a change, no change is surer, whatever its size in
//     spreads, than the chance 4/((n+1)(n+2)) that two exchangeable
//     readings lie beyond all n: entities are ordered by their deviation so
//     bounded (a log template's deviate is its test's, a peer-judged
//     change's peerBound), then by spreads, so
//     that three readings of a rarely called service do not outrank twenty
//     of another, and the logs' evidence meets the metrics' on one scale.
//     Confidences still come from the spreads that held; where two
//     saturate, the generic layer's order breaks the tie (rank.go), not the
//     entities' names. (Making the confidences follow the bound as well cost
//     Online Boutique 0.50 → 0.38 and the graph suite a fault's recall: not
//     done.) Between the two kinds of evidence the order decides: an
//     entity is no surer than one ranked before it on the other kind
//     (metrics' spreads, a log test's p-value), since the two confidences
//     come from scales of their own (hundreds of spreads over a few
//     minutes' history against deviates of 2–5 from the tests), and they
//     meet only on the bounded deviates; within one kind, its confidences
//     order as before.
//   - Peers where the history is too short (generic_peers.go). A series
//     with fewer than three readings before the onset (minOwnHistory: a
//     window that starts a minute before a fault, a data set with no
//     normal period) has no spread of its own to be judged in; it is
//     judged by the one thing it can be compared with, the same metric of
//     the other entities at the same steps, and only then. Each reading
//     after the onset is a log-ratio over the series' level before (so
//     entities at different levels compare; a series idle before has no
//     level, and its duty cycle is unknown: not judged); the peers' median
//     log-ratio at that step is what they all share (a load that rose
//     everywhere), and their spread about it, over all the steps after
//     the onset, the unit, unless the series' own two readings before
//     differ by more (their range over d2). The change must hold for two
//     readings, as every change does. Its order is bounded as the
//     history bounds the others': were it exchangeable with its m peers,
//     the chance that it lies beyond all of them on either side is
//     2/(m+1) (peerBound: 0.91 deviates with ten peers, 1.71 with forty,
//     none with three), and its confidence is scaled by 1 − 2/(m+1) and
//     is no surer than an entity ranked before it on another kind of
//     evidence (one too weak to report, under minConfidence, caps
//     nothing). A counter's increases are events, whose spread is their
//     own (Poisson: 4 calls a minute falling to none is no ratio of −4.6
//     among peers that call thousands): not judged by peers. A node's
//     column that several pods share is one peer, not several that agree
//     with it; thin quantiles and sparse series are read as everywhere
//     else (the peers see what scoreEntities sees).
//   - The network in front of a service (generic_graph.go,
//     networkGapSeries). Where the service graph has both sides' seconds,
//     the time a service's callers wait for a call beyond what the call
//     takes the service itself is a series of the service's, ranked with
//     its own: a delay on its network, a proxy or a queue in front of it
//     shows there and in none of its own series, and the walk, which
//     starts from the entity ranked first, does not reach it when that
//     entity is no caller of it. Each caller's wait counts beyond the
//     least wait of its calls to its other callees at the same step (what
//     a caller loses on its own side is in every call it makes); a caller
//     with no other callee cannot tell the two apart and is left out.
//   - Shared series (generic.go, markShared). A series that several
//     entities report reading for reading (a node's column that every pod
//     on it carries) is the evidence of what they share: it ranks them
//     alike, and their own series decide between them.
//
// It reads through storage.Queryable only (the embedded store, files loaded
// into a temporary one, or a remote Prometheus-compatible API), raw samples
// aligned on its own steps, so every backend gives the same answer; it
// keeps no state between diagnoses. It does not own the signal catalog
// (internal/catalog), the entity graph (internal/topology) or output beyond
// the Report and its text page.
package diagnose
