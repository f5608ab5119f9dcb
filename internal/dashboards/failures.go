//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// Span metrics (the OpenTelemetry spanmetrics connector's names, which
// Vigil computes from the traces it receives).
const (
	calls    = "traces_span_metrics_calls_total"
	timeouts = "traces_span_metrics_timeouts_total"
	failed   = `status_code="STATUS_CODE_ERROR"`
	server   = `span_kind="SPAN_KIND_SERVER"`
)

// failedBy is the failed spans per second by label, among the spans that
// have it.
func failedBy(label string, more ...string) string {
	return "sum by (" + label + ") (" + rate(sel(calls, append([]string{failed, label + `!=""`}, more...)...)) + ")"
}

// failures answers "what fails, for whom?": failed requests by model,
// provider, tenant, route and error type, the inference engines' aborted
// requests and the containers Kubernetes terminated.
func failures() *dashboard.DashboardBuilder {
	allServer := rate(sel(calls, server))
	return newDashboard("vigil-failures", "Vigil / Failures",
		"What fails, and for whom? Failed requests by model, provider, tenant, route and error type (the services' span metrics: traces_span_metrics_*), aborted inference requests and terminated containers.").
		WithRow(row("Requests")).
		WithPanel(number("Requests failed", "Share of server spans that failed over the dashboard's range.", "percentunit",
			q(`sum(increase(`+sel(calls, server, failed)+`[$__range])) / sum(increase(`+sel(calls, server)+`[$__range]))`, "failed"))).
		WithPanel(number("Failed requests per second", "Server spans that failed, per second.", "reqps",
			q(`sum(`+rate(sel(calls, server, failed))+`)`, "failed"))).
		WithPanel(number("Timeouts per second", "Spans whose error.type names a timeout, per second.", "reqps",
			q(`sum(`+rate(sel(timeouts))+`)`, "timeouts"))).
		WithPanel(number("Tenants with failures", "Tenants with at least one failed request in the rate window.", "none",
			q(`count(`+failedBy("tenant")+` > 0)`, "tenants"))).
		WithPanel(graph("Failed requests by tenant", "Failed spans per second by tenant (the tenant attribute, tenant.id by default).", "reqps",
			q(failedBy("tenant"), "{{tenant}}"))).
		WithPanel(graph("Failure ratio by tenant", "Share of each tenant's server spans that failed: one tenant far above the rest is a tenant_failure.", "percentunit",
			q(`sum by (tenant) (`+rate(sel(calls, server, failed, `tenant!=""`))+`) / sum by (tenant) (`+rate(sel(calls, server, `tenant!=""`))+`)`, "{{tenant}}"))).
		WithPanel(graph("Failed requests by model", "Failed spans per second by the requested model (gen_ai.request.model).", "reqps",
			q(failedBy("gen_ai_request_model", `gen_ai_request_model=~"$model"`), "{{gen_ai_request_model}}"))).
		WithPanel(graph("Failed requests by provider", "Failed spans per second by GenAI provider (gen_ai.provider.name).", "reqps",
			q(failedBy("gen_ai_provider_name"), "{{gen_ai_provider_name}}"))).
		WithPanel(graph("Failed requests by route", "Failed server spans per second by service and route (the span name).", "reqps",
			q(`sum by (service_name, span_name) (`+rate(sel(calls, server, failed))+`)`, "{{service_name}} {{span_name}}"))).
		WithPanel(graph("Failed requests by error type", "Failed spans per second by error.type.", "reqps",
			q(failedBy("error_type"), "{{error_type}}"))).
		WithPanel(list("Where requests fail", "Failed spans per second by service, route, tenant, model and error type, over the rate window.",
			q(`sum by (service_name, span_name, tenant, gen_ai_request_model, error_type) (`+rate(sel(calls, failed))+`) > 0`, ""))).
		WithPanel(graph("Server request rate", "All server spans per second, by service: the denominator of the ratios above.", "reqps",
			q(`sum by (service_name) (`+allServer+`)`, "{{service_name}}"))).
		WithRow(row("Inference engines and Kubernetes")).
		WithPanel(graph("Inference requests by finish reason", "Requests each model finished per second, by finish reason (vLLM: stop, length, abort; other engines: one series).", "reqps",
			q(perModel("infer.request_success", shape{by: []string{"finished_reason"}}), "{{finished_reason}} "+modelLegend))).
		WithPanel(graph("Containers terminated, by reason", "Containers whose last termination had each reason (OOMKilled, Error, ...), by namespace.", "none",
			q(`sum by (namespace, reason) (`+sel("kube_pod_container_status_last_terminated_reason", mNamespace)+`)`, "{{namespace}} {{reason}}")))
}
