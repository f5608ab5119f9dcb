// Package nezha scores `vigil diagnose` on the days of the Nezha
// multimodal root-cause-analysis data set in ../shared/realdata/nezha (or
// VIGIL_NEZHA_DIR): Online Boutique (2022-08-22) and Train Ticket
// (2023-01-29), per-pod 1-minute metrics. It runs the real binary's
// `vigil eval --suite nezha --data DIR`: each fault becomes a case
// (internal/realdata/nezha: the real minutes from five past the previous
// injection to five past this one), diagnosed as `vigil diagnose --input`
// would with --entity-label service, five minutes after the injection. The
// test prints top-1 and top-3 of the injected pod's service per day and
// fault type, next to a naive baseline: the service whose series moved
// most, in robust spreads of the minutes before the injection (the largest
// over its columns of |median after − median before| / MAD before, with a
// floor of 1 % of the median). A day is scored on its metrics alone, and
// again with its logs (OTLP JSON logs, whose warning and error templates
// Vigil counts), its traces (OTLP JSON spans) or its calls' latencies
// (servicegraph series) where it has them, each alone and together. Nezha itself, which also
// reads traces and logs, reports service-level AS@1 0.93 (Online
// Boutique) and 0.87 (Train Ticket). The test fails only when the harness
// does (a file it cannot read, a binary that exits non-zero).
package nezha
