// Package push is Vigil's Pushgateway-compatible push endpoint: batch jobs
// and CronJobs (a drift evaluation, a model-accuracy check) push metric
// groups to PUT/POST/DELETE /metrics/job/<job>{/<label>/<value>} with
// client_golang's push package or curl, exactly as they would to the
// Prometheus Pushgateway.
//
// It owns the grouping key (job and the label pairs of the path, with the
// Pushgateway's @base64 value encoding), the decoding of the Prometheus text
// format and of client_golang's delimited protobuf, the Pushgateway's checks
// (no timestamps, consistent types, no duplicate series) and the groups'
// last values in memory. Each push is appended to the store at push time,
// and every Interval the last values of all groups are appended again, so
// that the series stay live as a scraped Pushgateway's would, until DELETE.
// Series that leave a group get a staleness marker.
//
// What it implements of the Pushgateway (v1.5, checked against Debian's
// prometheus-pushgateway):
//   - PUT replaces every metric of the group (an empty body empties it) and
//     answers 200; POST replaces only the metric families pushed (an empty
//     body only updates push_time_seconds) and answers 200; DELETE removes
//     the group and answers 202, also when there is no such group.
//   - The grouping labels are set on every pushed sample, overwriting a
//     pushed label of the same name, as the Pushgateway does; a missing
//     instance label is empty (that is, absent in the store).
//   - push_time_seconds and push_failure_time_seconds per group; pushed
//     metrics of those names are dropped. A push that is well formed but
//     inconsistent (a timestamp, a type that differs from another group's,
//     a series pushed twice or owned by another group) answers 400 and sets
//     push_failure_time_seconds, creating the group if needed, as the
//     Pushgateway does. A body that does not parse answers 400 and changes
//     nothing.
//   - Request bodies may be gzip-compressed (Content-Encoding: gzip).
//   - A job name or label value may be URL-escaped (%2F too) or base64
//     (name@base64). A grouping label with an empty value is no label in
//     the store: {job="t",b=""} is a group of its own, as on the
//     Pushgateway, but its series are those of {job="t"} (a Prometheus
//     scraping a Pushgateway meets the same collision).
//
// What it does not do: it keeps groups in memory only. A restart of
// `vigil serve` loses them (their history stays in the store), where the
// Pushgateway can keep them in a persistence file; jobs push again on
// their next run. It has no admin wipe, status or /api/v1/metrics API, and
// it stores native histograms as their classic buckets only. Samples are
// never logged; requests are counted in vigil_push_requests_total{code}.
package push
