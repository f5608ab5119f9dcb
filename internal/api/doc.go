// Package api owns Vigil's HTTP surface: Prometheus's own web/api/v1 mounted
// over a store.Store (so query, series, labels, metadata and exemplar answers
// are Prometheus's JSON), Vigil's own metrics at /metrics, and the health
// endpoints /-/healthy and /-/ready.
//
// It does not evaluate queries or store samples itself; the Store does.
package api
