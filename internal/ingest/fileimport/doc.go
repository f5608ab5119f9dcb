// Package fileimport loads metric history from files: OpenMetrics text
// (timestamps in seconds, ending in "# EOF") and Prometheus text exposition
// (timestamps in milliseconds), either possibly gzip-compressed.
//
// A file is read and validated completely before anything is written, so a
// malformed line (reported with its file and line number) leaves nothing
// half-written. Validated files go into TSDB blocks of any age, as promtool's
// backfill writes them (WriteBlocks), or through any appender (Append).
//
// It does not parse Prometheus text with the Prometheus parsers' rules
// changed: the parsing is model/textparse's; this package adds the checks a
// store needs (timestamp units, order, duplicates, label limits).
package fileimport
