//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// platform answers "is the platform healthy?": nodes, GPUs and their
// allocation, restarts, and the share of requests that succeed.
func platform() *dashboard.DashboardBuilder {
	gpuReq := sel("kube_pod_container_resource_requests", `resource="nvidia_com_gpu"`, mNamespace, mNode)
	return newDashboard("vigil-platform", "Vigil / Platform",
		"Is the platform healthy? Nodes, GPUs and their allocation, restarts and request success (kube-state-metrics, dcgm-exporter, the services' span metrics).").
		WithRow(row("Capacity")).
		WithPanel(number("Nodes ready", "Nodes whose Ready condition is true.", "none",
			q(`sum(`+sel("kube_node_status_condition", `condition="Ready"`, `status="true"`, mNode)+`)`, "ready"))).
		WithPanel(number("Nodes not ready", "Nodes whose Ready condition is false or unknown.", "none",
			q(`sum(`+sel("kube_node_status_condition", `condition="Ready"`, `status!="true"`, mNode)+`)`, "not ready"))).
		WithPanel(number("GPUs reporting", "GPUs dcgm-exporter reports.", "none",
			q(`count(`+gpuExpr(func(m []string, _ string) string { return gsel("DCGM_FI_DEV_GPU_UTIL", m) })+`)`, "GPUs"))).
		WithPanel(number("GPUs allocated", "Share of the nodes' allocatable GPUs that pods request.", "percentunit",
			q(`sum(`+gpuReq+`) / sum(`+sel("kube_node_status_allocatable", `resource="nvidia_com_gpu"`, mNode)+`)`, "allocated"))).
		WithPanel(graph("GPU allocation", "GPUs allocatable on the nodes, and requested by pods, by namespace.", "none",
			q(`sum(`+sel("kube_node_status_allocatable", `resource="nvidia_com_gpu"`, mNode)+`)`, "allocatable"),
			q(`sum by (namespace) (`+gpuReq+`)`, "requested by {{namespace}}"))).
		WithPanel(graph("Nodes by condition", "Nodes whose condition is true, by condition (Ready, MemoryPressure, DiskPressure, ...).", "none",
			q(`sum by (condition) (`+sel("kube_node_status_condition", `status="true"`, mNode)+`)`, "{{condition}}"))).
		WithRow(row("Workloads")).
		WithPanel(graph("Container restarts", "Restarts per container in each rate window.", "none",
			q(`sum by (namespace, pod) (increase(`+sel("kube_pod_container_status_restarts_total", mNamespace)+`[`+rateWindow+`]))`, "{{namespace}}/{{pod}}"))).
		WithPanel(graph("Pods by phase", "Pods in each phase.", "none",
			q(`sum by (phase) (`+sel("kube_pod_status_phase", mNamespace)+`)`, "{{phase}}"))).
		WithPanel(graph("Deployments short of replicas", "Desired minus available replicas of each deployment.", "none",
			q(`sum by (namespace, deployment) (`+sel("kube_deployment_spec_replicas", mNamespace)+`) - sum by (namespace, deployment) (`+
				sel("kube_deployment_status_replicas_available", mNamespace)+`)`, "{{namespace}}/{{deployment}}"))).
		WithPanel(graph("GPU utilisation by namespace", "Mean GPU utilisation of the GPUs attributed to each namespace's pods (dcgm-exporter's pod attribution).", "percent",
			q(gpuExpr(func(m []string, _ string) string {
				return `avg by (namespace) (` + gsel("DCGM_FI_DEV_GPU_UTIL", m, `namespace!=""`) + `)`
			}), "{{namespace}}"))).
		WithRow(row("Requests")).
		WithPanel(graph("Request success", "Share of server spans that did not fail, by service (the spanmetrics connector's calls).", "percentunit",
			q(`sum by (service_name) (`+rate(sel("traces_span_metrics_calls_total", `span_kind="SPAN_KIND_SERVER"`, `status_code!="STATUS_CODE_ERROR"`))+`) / sum by (service_name) (`+
				rate(sel("traces_span_metrics_calls_total", `span_kind="SPAN_KIND_SERVER"`))+`)`, "{{service_name}}"))).
		WithPanel(graph("Inference requests finished", "Requests the inference engines finished per second, by model.", "reqps",
			q(perModel("infer.request_success", shape{}), "{{namespace}}/{{model}}")))
}
