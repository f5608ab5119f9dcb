// Package manifests renders Vigil's Helm chart (deploy/helm/vigil, embedded
// by package deploy/helm) into plain Kubernetes YAML, in-process, with Helm's
// own Go engine: the chart's values.yaml overlaid with values files and
// --set flags as Helm merges them, checked against the chart's
// values.schema.json as Helm checks them, rendered by Helm's template engine
// and sorted in Helm's install order. The rendered vigil.yaml is then loaded
// with vigil serve's own configuration loader, so values that would keep the
// server from starting are an error here, not in the cluster.
//
// It owns the `vigil manifests` logic and the chart's generated files' source
// of truth in tests (the PrometheusRule groups from the SLO presets). It
// does not talk to a cluster: nothing is applied, and the template's lookup
// function finds nothing.
package manifests
