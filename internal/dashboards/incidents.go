//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// Vigil's own series: the alerts of its rules (ALERTS, as Prometheus's
// rule manager writes them into the store it evaluates) and its own
// metrics (stored by its self-monitoring, or scraped by a Prometheus).
const (
	alerts  = "ALERTS"
	firing  = `alertstate="firing"`
	changes = "vigil_incident_changes_total"
)

// incidents answers "what is Vigil paging about?": its firing alerts and
// symptoms, the incidents it opens, re-diagnoses and resolves, and whether
// it sees enough to be believed.
func incidents() *dashboard.DashboardBuilder {
	return newDashboard("vigil-incidents", "Vigil / Incidents",
		"What is Vigil paging about? Its alerts and symptoms (ALERTS of the SLO, symptom and watchdog rules), its incidents (vigil_incident_changes_total) and its own health (vigil_watch_*). Each incident's diagnosis is on Vigil's /incidents page.").
		WithRow(row("Alerts")).
		WithPanel(number("Alerts firing", "Vigil's alerts firing now, the watchdog included (it always fires: a silent watchdog means a dead Vigil).", "none",
			q(`count(`+sel(alerts, firing)+`)`, "firing"))).
		WithPanel(number("Pages firing", "Alerts of severity page firing now.", "none",
			q(`count(`+sel(alerts, firing, `severity="page"`)+`) or vector(0)`, "pages"))).
		WithPanel(number("Incidents opened", "Incidents Vigil opened over the dashboard's range (its counter has no series before the first one).", "none",
			q(`sum(increase(`+sel(changes, `change="opened"`)+`[$__range])) or vector(0)`, "opened"))).
		WithPanel(number("Vigil blind", "1 when Vigil's latest cycle saw no telemetry it understands: its silence is then no verdict of healthy.", "none",
			q(`max(`+sel("vigil_watch_blind")+`)`, "blind"))).
		WithPanel(graph("Alerts firing by severity", "Vigil's alerts firing, by severity.", "none",
			q(`count by (severity) (`+sel(alerts, firing)+`)`, "{{severity}}"))).
		WithPanel(graph("Symptoms", "Vigil's symptom alerts pending (their condition holds, not yet for their for: duration) or firing, by symptom (the vigil_symptom label of its SLO rules).", "none",
			q(`count by (vigil_symptom, alertstate) (`+sel(alerts, `vigil_symptom!=""`)+`)`, "{{vigil_symptom}} {{alertstate}}"))).
		WithPanel(list("Alerts now", "Vigil's alerts pending or firing now, with their labels.",
			q(`max by (alertname, alertstate, severity, vigil_symptom, slo, namespace, model) (`+sel(alerts)+`)`, ""))).
		WithRow(row("Incidents and Vigil itself")).
		WithPanel(graph("Incident changes", "Incidents opened, re-diagnosed and resolved in each rate window.", "none",
			q(`sum by (change) (increase(`+sel(changes)+`[`+rateWindow+`]))`, "{{change}}"))).
		WithPanel(graph("Evaluation cycles", "Vigil's evaluation cycles (rules, symptoms, diagnosis, incidents) per second, and those that failed.", "ops",
			q(`sum(`+rate(sel("vigil_watch_cycles_total"))+`)`, "cycles"),
			q(`sum(`+rate(sel("vigil_watch_cycle_failures_total"))+`)`, "failed"))).
		WithPanel(graph("Evaluation cycle duration (p95)", "95th percentile of the wall time of one evaluation cycle.", "s",
			q(`histogram_quantile(0.95, sum by (le) (`+rate(sel("vigil_watch_cycle_duration_seconds_bucket"))+`))`, "p95")))
}
