// Package dashboards builds Vigil's Grafana dashboards as code, with the
// grafana-foundation-sdk builders: one dashboard per question an operator of
// an AI cluster asks (platform, GPUs, inference, failures, incidents), each
// with the datasource, cluster, namespace, node and model variables.
//
// Every target is PromQL over the signal catalog's metric names (reading
// every inference engine the catalog knows, vLLM, NIM, SGLang, TGI and
// Triton, joined by `or`), over Vigil's own recorded series (internal/slo)
// and over Vigil's own metrics; it may use Grafana's $__rate_interval,
// $__interval, $__range and the dashboards' variables.
//
// It does not serve, provision or upload dashboards: `vigil dashboards`
// writes the JSON files, and the Helm chart ships the copies kept in
// deploy/helm/vigil/dashboards (a golden test keeps them current).
package dashboards
