// Package petshop scores `vigil diagnose` on Amazon's PetShop
// root-cause-analysis data set (github.com/amazon-science/petshop-root-cause-analysis,
// data CC-BY-4.0; Hardt et al., 2024): a call graph of about 40 services,
// latency and availability faults, 5-minute aggregates. The data set is
// not in the repository (it is tens of megabytes and this project has no
// network at test time); the package reads it where it lies, runs the real
// vigil binary on every issue and prints Vigil's top-1 and top-3 recall
// per scenario and split next to the published traversal baseline's top-1
// (57–83%). In every `go test` run it does the same on a synthetic data set
// in exactly the same layout, generated at test time, so the harness
// itself is tested.
//
// Run it on the real data:
//
//	git clone https://github.com/amazon-science/petshop-root-cause-analysis
//	vigil eval --suite petshop --data petshop-root-cause-analysis/dataset
//	VIGIL_PETSHOP_DIR=/path/to/petshop-root-cause-analysis/dataset go test ./internal/realdata/petshop -run DataSet -v -timeout 1h
//
// VIGIL_PETSHOP_DIR may also name one scenario's directory. The test logs
// the table and each issue's ground truth against Vigil's first three; it
// fails only when the harness fails (a file it cannot read, a binary that
// exits non-zero).
//
// # What it reads
//
// Per scenario (low_traffic, high_traffic, temporal_traffic1,
// temporal_traffic2): graph.csv, the call graph as an adjacency matrix (a 1
// at row R, column C: R calls C); noissue/metrics.csv, the normal period;
// {train,test}/issue_N/metrics.csv, a short window (about 25 minutes)
// around one issue, and target.json, its symptom and root-cause node. A
// metrics.csv has three header rows (microservice, metric, statistic), an
// index name row (unix_timestamp), then a row per 5-minute step, empty
// cells for no value. Malformed input is an error naming the file and
// line.
//
// # How an issue becomes Vigil's input
//
// The last 12 hours of the normal period, shifted in time to end one step
// before the issue window, then the issue window, as OpenMetrics text.
// Twelve hours: the generic layer judges each series against its robust
// level and spread before the onset, and half a day of traffic swings
// gives it a spread to judge by (the traversal baseline trains on the
// whole normal period, about a day and a half); on the synthetic set 24
// hours did no better and took longer, 6 hours a little worse (the table
// below). Per node, with the entity label service:
//
//   - latency (Average, p50, p90, p95, p99) → petshop_latency_seconds{service, statistic}
//   - requests Sum → petshop_requests{service}, a gauge of the requests per
//     step: the generic layer reads a gauge's value as it is, which here is
//     already the per-step count a counter's increase would give back, and a
//     missing step costs one value, not the two increases around it
//   - availability Average (percent) → petshop_availability_ratio{service}
//     (percent/100), and requests × (1 − availability) →
//     petshop_failed_requests{service}, the failures as a count. (Built
//     when the generic layer gave a series that never moved before the
//     onset a spread of 1 in its own unit, so that a ratio held at 1 that
//     fell to 0.7 moved 0.3 spreads and was missed; it now gets 5% of its
//     level, and the failed-requests series no longer changes the result:
//     97% top-1 and 100% top-3 with or without it, against 94% and 97%
//     without it before.)
//
// and the call graph as the OpenTelemetry servicegraph connector's series
// that the engine's service-graph walk reads: for each edge R → C,
// traces_service_graph_request_total{client=R, server=C} grows per step by
// C's requests (1 where missing), traces_service_graph_request_failed_total
// by (1 − C's availability) × those requests, and
// traces_service_graph_request_server_seconds (a histogram with only its
// +Inf bucket) by C's latency Average × requests over requests. The walk
// starts at the entity the statistical ranking puts first and follows calls
// down to the deepest callee whose incoming calls turned slow or failing
// no later than its caller's.
//
// `vigil diagnose --input FILE --entity-label service --step 5m --window W
// --at T --json` runs with T the issue window's last step + 1 step and W
// back to the history's first step: Vigil sees what the baseline is handed
// (the normal period and the whole issue window; the baseline scores the
// window's third row, or the first anomalous one of the target after it,
// on the target's metric and statistic only). The target itself is not
// given to Vigil. Vigil's causes, in rank order, each service once, are
// scored as the data set's in_top_k scores a method's ranking.
//
// # The synthetic data set
//
// Thirteen nodes (PetSite calling four services that call DynamoDB and SQL
// tables, an SQS queue with a Lambda behind it, S3, SSM and outside APIs,
// named as PetShop's are), a 30-hour normal period with a daily traffic
// swing, and eight issues of six rows, the fault from the third: latency
// ×8–10 on a leaf (reaching the front end through its callers, smaller),
// 25–30% of the requests failing on a mid-tier service (and, 0.6 of it, on
// its callers), and an overload (requests ×4–5, slower) on a table and on a
// service. Measured with VIGIL_PETSHOP_VARIANTS=1 (seeds 1–4, 32 issues, on
// two shared cores):
//
//	conversion                     top-1  top-3  walk led  s/issue
//	as converted (12 h history)     100%   100%     25%       0.6
//	no service graph                 75%   100%      —        0.5
//	no failed requests              100%   100%     22%       0.5
//	6 h history                     100%   100%     28%       0.3
//	24 h history                    100%   100%     28%       1.3
//	mild faults (×3, 8%, ×2)         97%   100%     28%       0.6
//	mild faults, no service graph    69%    91%      —        0.5
//
// ("walk led": the first cause is where the service-graph walk took the
// ranking; s/issue: one run of the binary, start-up included, on a
// machine shared with other builds; measured after the flat-series fix
// and the load climb; before them "as converted" was 97%/100%, "no failed
// requests" 94%/97%, "mild faults" 91%/100%.) Without the graph every
// failing-service issue names PetSite first (its failures are the most
// visible); the walk takes it down to the service.
// The one miss of seed 1 before the load climb (internal/diagnose's
// generic_load.go) was the overload of petlistadoptions: its callees'
// requests rise as much as its own, one of them ranked first, and the walk
// down did not climb back to the caller; the walk now climbs the load up
// and seed 1 scores 8 of 8. TestPetShopSynthetic requires seed 1's 8 of 8
// at top-1, no empty answer, and a top-1 that collapses when each issue's
// ground truth is swapped for the next one's.
//
// Run, behind `vigil eval --suite petshop --data DIR`, diagnoses each
// issue in the process with the engine as `vigil diagnose --input` would;
// the package's tests run the real binary on the synthetic set and, when
// it is there, on ../shared/realdata/petshop.
package petshop
