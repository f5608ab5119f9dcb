// Package promcompat holds the PromQL compatibility battery: an integration
// test that loads the same data — the exposition fixtures under
// testdata/exposition and a generated multi-hour GPU-cluster dump — into
// Debian's Prometheus 2.42 (through promtool's backfill) and into Vigil
// (through `vigil import`), then evaluates the same PromQL through both HTTP
// APIs and through promtool and requires the same answers.
//
// The package has no code outside its tests. The intended differences
// between Prometheus 2.x and the Prometheus 3 engine that Vigil embeds are
// asserted in their own table and described in docs/promql-compat.md, which
// also says how to add queries.
package promcompat
