// Package authbench measures what authentication and TLS cost Vigil's HTTP
// listener: remote-write throughput and query latency of `vigil serve`
// with no web configuration against the same with --web.config.file
// (TLS and a bcrypt basic-auth user, through exporter-toolkit, as
// Prometheus serves them), each a fresh process, alternating.
//
// The package has no code outside its tests; `make bench` runs it.
package authbench
