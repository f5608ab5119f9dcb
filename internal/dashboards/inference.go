//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/vigil-obs/vigil/internal/slo"
)

// modelLegend names a model in a legend.
const modelLegend = "{{namespace}}/{{model}}"

// sloSel selects one of Vigil's SLO recorded series (internal/slo, the
// Sloth-style names) with the variables' matchers.
func sloSel(record string) string { return sel(record, mNamespace, mModel) }

// inference answers "are the models serving well?": latency, time to first
// token, tokens per second, queue, KV cache and the SLOs' burn rates, from
// whichever engine serves each model.
func inference() *dashboard.DashboardBuilder {
	return newDashboard("vigil-inference", "Vigil / Inference",
		"Are the models serving well? Latency, time to first token, throughput, queue, KV cache and SLO burn, per model, from vLLM, NIM, SGLang, TGI or Triton (the signal catalog's names, joined with or).").
		WithRow(row("Latency")).
		WithPanel(graph("Time to first token (p95)", "95th percentile of the time from a request's arrival to its first token (queueing plus prefill). The llm-time-to-first-token SLO wants 95 % within 1 s.", "s",
			q(perModel("infer.ttft", shape{quantile: 0.95}), modelLegend))).
		WithPanel(graph("Request latency (p50, p95)", "End-to-end latency on the server, from arrival to the last token: tens of seconds are normal for long outputs.", "s",
			q(perModel("infer.e2e_latency", shape{quantile: 0.5}), "p50 "+modelLegend),
			q(perModel("infer.e2e_latency", shape{quantile: 0.95}), "p95 "+modelLegend))).
		WithPanel(graph("Inter-token latency (p95)", "95th percentile of the time between output tokens during decode. The llm-inter-token-latency SLO wants 95 % within 100 ms.", "s",
			q(perModel("infer.itl", shape{quantile: 0.95}), modelLegend))).
		WithPanel(graph("Requests per second", "Requests each model finished per second (the latency histogram's count).", "reqps",
			q(perModel("infer.e2e_latency", shape{}), modelLegend))).
		WithRow(row("Throughput and capacity")).
		WithPanel(graph("Tokens per second", "Generated (decode) and prompt (prefill) tokens per second.", "none",
			q(perModel("infer.generation_tokens", shape{}), "generated "+modelLegend),
			q(perModel("infer.prompt_tokens", shape{}), "prompt "+modelLegend))).
		WithPanel(graph("Queue depth", "Requests waiting to be scheduled: Vigil's recorded "+slo.QueueDepthRecord+" (every engine's queue, by namespace and model). The inference-queue-depth SLO wants it under 20.", "none",
			q(`sum by (namespace, model) (`+sel(slo.QueueDepthRecord, mNamespace, mModel)+`)`, modelLegend))).
		WithPanel(graph("Requests running", "Requests in each model's running batch.", "none",
			q(perModel("infer.requests_running", shape{}), modelLegend))).
		WithPanel(graph("KV cache usage", "Share of KV-cache blocks in use (1 = full: the engine preempts or queues requests).", "percentunit",
			q(perModel("infer.kv_cache_usage", shape{}), modelLegend))).
		WithPanel(graph("Preemptions", "Requests preempted per second (the KV cache ran out).", "none",
			q(perModel("infer.preemptions", shape{}), modelLegend))).
		WithRow(row("SLOs")).
		WithPanel(graph("SLO burn rate", "How fast each SLO spends its error budget (slo:current_burn_rate:ratio, Vigil's recorded series): 1 spends it in exactly the SLO's period; 14.4 over 1 h pages.", "none",
			q(`max by (slo, namespace, model) (`+sloSel("slo:current_burn_rate:ratio")+`)`, "{{slo}} {{namespace}}/{{model}}"))).
		WithPanel(graph("SLO error ratio (1 h)", "Share of bad events over the last hour, per SLO (slo:sli_error:ratio_rate1h).", "percentunit",
			q(`max by (slo, namespace, model) (`+sloSel("slo:sli_error:ratio_rate1h")+`)`, "{{slo}} {{namespace}}/{{model}}"))).
		WithPanel(list("SLO error budget remaining", "Share of each SLO's error budget left in its period (slo:period_error_budget_remaining:ratio), and its objective.",
			q(`max by (slo, namespace, model) (`+sloSel("slo:period_error_budget_remaining:ratio")+`)`, ""),
			q(`max by (slo) (`+sel("slo:objective:ratio")+`)`, "")))
}
