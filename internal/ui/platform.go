package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/topology"
)

// platformView answers "is the platform healthy?": the nodes, the
// deployments' replicas, the containers that restarted and the requests
// that succeeded over the window — the data of /platform and of
// /api/v1/platform.
type platformView struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Verdict is healthy, unhealthy or "no data"; Answer says why in a
	// sentence, Counts in numbers.
	Verdict string  `json:"verdict"`
	Answer  string  `json:"answer"`
	Counts  []count `json:"counts"`
	Nodes   struct {
		Ready    int `json:"ready"`
		NotReady int `json:"not_ready"`
		Unknown  int `json:"unknown"`
	} `json:"nodes"`
	// Unready are the nodes not ready, or whose readiness no
	// kube-state-metrics reports.
	Unready []nodeState `json:"unready"`
	// Deployments are the workloads' desired and available replicas.
	Deployments []replicaRow `json:"deployments"`
	// Restarts are the pods whose containers restarted in the window,
	// most restarts first (at most maxRestartRows).
	Restarts []restartRow `json:"restarts"`
	// Requests are the requests of the window and those that failed, from
	// the span metrics where there are some, else from the inference
	// engines' counters; RequestsFrom says which.
	Requests     *outcome `json:"requests,omitempty"`
	RequestsFrom string   `json:"requests_from,omitempty"`
	// TargetsDown are the scrape targets whose up is 0.
	TargetsDown []string    `json:"targets_down"`
	Warnings    []string    `json:"warnings"`
	Charts      []chartView `json:"-"`
	Success     string      `json:"-"`
}

// nodeState is a node that is not ready, and why Vigil thinks so.
type nodeState struct {
	Node  string `json:"node"`
	State string `json:"state"`
}

// replicaRow is one workload's replicas.
type replicaRow struct {
	Namespace string  `json:"namespace"`
	Workload  string  `json:"workload"`
	Desired   float64 `json:"desired"`
	Available float64 `json:"available"`
	Short     bool    `json:"short"`
}

// restartRow is one pod's container restarts in the window.
type restartRow struct {
	Namespace string  `json:"namespace"`
	Pod       string  `json:"pod"`
	Restarts  float64 `json:"restarts"`
}

// maxRestartRows is the most pods the restarts' table lists.
const maxRestartRows = 20

// platform builds the view of w.
func (h *Handler) platform(ctx context.Context, w timeRange) (*platformView, error) {
	v := &platformView{From: w.From, To: w.To, Deployments: []replicaRow{}, Restarts: []restartRow{}, Unready: []nodeState{},
		TargetsDown: []string{}, Warnings: []string{}, Counts: []count{}}
	have, err := h.metricSet(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("render platform: %w", err)
	}
	if len(have) == 0 {
		v.Verdict, v.Answer = verdictNoData, "No data yet: the store holds no series from "+fmtTime(w.From)+" to "+fmtTime(w.To)+"."
		return v, nil
	}
	if err := h.platformNodes(ctx, w, v); err != nil {
		return nil, fmt.Errorf("render platform: %w", err)
	}
	if err := h.platformReplicas(ctx, have, w, v); err != nil {
		return nil, fmt.Errorf("render platform: %w", err)
	}
	if err := h.platformRequests(ctx, have, w, v); err != nil {
		return nil, fmt.Errorf("render platform: %w", err)
	}
	if have.Has("up") {
		down, err := h.instant(ctx, `up == 0`, w.To)
		if err != nil {
			return nil, fmt.Errorf("render platform: %w", err)
		}
		for _, s := range down {
			v.TargetsDown = append(v.TargetsDown, s.Metric.Get("job")+" "+s.Metric.Get("instance"))
		}
		slices.Sort(v.TargetsDown)
	}
	v.answer()
	return v, nil
}

// platformNodes counts the topology's nodes by readiness at w.To.
func (h *Handler) platformNodes(ctx context.Context, w timeRange, v *platformView) error {
	topo, err := topology.Build(ctx, h.opts.Store, h.cat, w.To, topology.DefaultOptions())
	switch {
	case errors.Is(err, topology.ErrNoData):
		return nil
	case err != nil:
		return fmt.Errorf("build the topology at %s: %w", fmtTime(w.To), err)
	}
	for _, n := range topo.Nodes {
		switch {
		case n.Ready == nil:
			v.Nodes.Unknown++
			v.Unready = append(v.Unready, nodeState{Node: n.Name, State: "readiness unknown (no kube-state-metrics condition)"})
		case *n.Ready:
			v.Nodes.Ready++
		default:
			v.Nodes.NotReady++
			v.Unready = append(v.Unready, nodeState{Node: n.Name, State: "not ready"})
		}
	}
	slices.SortFunc(v.Unready, func(a, b nodeState) int {
		return cmp.Or(cmp.Compare(a.State, b.State), naturalCompare(a.Node, b.Node))
	})
	v.Warnings = append(v.Warnings, topo.Warnings...)
	return nil
}

// platformReplicas reads the deployments' replicas at w.To and the
// containers' restarts over w, by the catalog's kube-state-metrics names.
func (h *Handler) platformReplicas(ctx context.Context, have catalog.MetricSet, w timeRange, v *platformView) error {
	keys := []string{catalog.KeyNamespace, catalog.KeyWorkload}
	read := func(signal string) (map[string]float64, map[string][]string, error) {
		qs, err := h.cat.Queries(signal, have, catalog.QueryOptions{By: keys})
		if err != nil {
			return nil, nil, nil // no source in the store: nothing to show
		}
		out, names := map[string]float64{}, map[string][]string{}
		for _, q := range qs {
			vec, err := h.instant(ctx, q.Expr, w.To)
			if err != nil {
				return nil, nil, err
			}
			ls := h.keyLabels(q, keys)
			for _, s := range vec {
				ev := entityValues(s.Metric, ls)
				k := strings.Join(ev, "/")
				out[k] += s.F
				names[k] = ev
			}
		}
		return out, names, nil
	}
	desired, names, err := read("k8s.deployment_replicas")
	if err != nil {
		return err
	}
	available, _, err := read("k8s.deployment_replicas_available")
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(desired) {
		r := replicaRow{Namespace: names[k][0], Workload: names[k][1], Desired: desired[k], Available: available[k]}
		r.Short = r.Available < r.Desired
		v.Deployments = append(v.Deployments, r)
	}
	if qs, err := h.cat.Queries("k8s.container_restarts", have, catalog.QueryOptions{}); err == nil {
		q := qs[0]
		ls := h.keyLabels(q, []string{catalog.KeyNamespace, catalog.KeyPod})
		expr := byClause(flatLabels(ls), "increase("+selector(q.Source.Metric)+"["+promDuration(w.To.Sub(w.From))+"])") + " > 0"
		vec, err := h.instant(ctx, expr, w.To)
		if err != nil {
			return err
		}
		for _, s := range vec {
			ev := entityValues(s.Metric, ls)
			v.Restarts = append(v.Restarts, restartRow{Namespace: ev[0], Pod: ev[1], Restarts: s.F})
		}
		slices.SortFunc(v.Restarts, func(a, b restartRow) int {
			return cmp.Or(cmp.Compare(b.Restarts, a.Restarts), naturalCompare(a.Pod, b.Pod))
		})
		v.Restarts = v.Restarts[:min(len(v.Restarts), maxRestartRows)]
	}
	return nil
}

// platformRequests counts the window's requests: the services' (span
// metrics, the spans they served) where there are some, else the
// inference engines'.
func (h *Handler) platformRequests(ctx context.Context, have catalog.MetricSet, w timeRange, v *platformView) error {
	if have.Has(spanmetrics.MetricCalls) {
		total, err := h.spanCount(ctx, w, spanmetrics.MetricCalls, spanKindServer)
		if err != nil {
			return err
		}
		if total > 0 {
			failed, err := h.spanCount(ctx, w, spanmetrics.MetricCalls, spanKindServer, spanErrors)
			if err != nil {
				return err
			}
			v.Requests, v.RequestsFrom = &outcome{Requests: total, Failed: failed}, "the services' spans (span metrics)"
			return nil
		}
	}
	out, _, err := h.engineOutcomes(ctx, have, w, nil)
	if err != nil {
		return err
	}
	if o := out[""]; o != nil && o.Requests > 0 {
		v.Requests, v.RequestsFrom = o, "the inference engines' request counters"
	}
	return nil
}

// answer sets the verdict, the sentence and the counts.
func (v *platformView) answer() {
	var bad []string
	nodes := v.Nodes.Ready + v.Nodes.NotReady + v.Nodes.Unknown
	cls := func(n int) string {
		if n > 0 {
			return "bad"
		}
		return "ok"
	}
	if nodes > 0 {
		v.Counts = append(v.Counts, count{Label: "nodes ready", N: fmt.Sprintf("%d of %d", v.Nodes.Ready, nodes), Class: cls(v.Nodes.NotReady)})
	}
	if v.Nodes.NotReady > 0 {
		bad = append(bad, plural(v.Nodes.NotReady, "node is", "nodes are")+" not ready")
	}
	short := 0
	for _, d := range v.Deployments {
		if d.Short {
			short++
		}
	}
	if len(v.Deployments) > 0 {
		v.Counts = append(v.Counts, count{Label: "deployments at their replicas", N: fmt.Sprintf("%d of %d", len(v.Deployments)-short, len(v.Deployments)), Class: cls(short)})
	}
	if short > 0 {
		bad = append(bad, plural(short, "deployment has", "deployments have")+" fewer replicas available than desired")
	}
	v.Counts = append(v.Counts, count{Label: "pods with restarts", N: fmt.Sprint(len(v.Restarts)), Class: cls(len(v.Restarts))})
	if len(v.Restarts) > 0 {
		bad = append(bad, plural(len(v.Restarts), "pod's containers", "pods' containers")+" restarted")
	}
	if v.Requests != nil {
		r := v.Requests.failedRatio()
		v.Success = fmtPercent(1 - r)
		c := count{Label: "requests succeeded", N: v.Success, Class: "ok"}
		if r > 0.01 {
			c.Class = "bad"
			bad = append(bad, fmtPercent(r)+" of the requests failed")
		}
		v.Counts = append(v.Counts, c)
	}
	if len(v.TargetsDown) > 0 {
		v.Counts = append(v.Counts, count{Label: "scrape targets down", N: fmt.Sprint(len(v.TargetsDown)), Class: "bad"})
		bad = append(bad, plural(len(v.TargetsDown), "scrape target is", "scrape targets are")+" down")
	}
	if len(bad) == 0 {
		v.Verdict, v.Answer = verdictHealthy, "Yes: every node reporting readiness is ready, every deployment has its replicas, no container restarted"
		if v.Requests != nil {
			v.Answer += " and " + v.Success + " of the requests succeeded"
		}
		v.Answer += "."
		if nodes == 0 && len(v.Deployments) == 0 {
			v.Verdict, v.Answer = verdictNoData, "No Kubernetes data yet: no kube-state-metrics series in the window."
		}
		return
	}
	v.Verdict, v.Answer = verdictUnhealthy, "No: "+strings.Join(bad, "; ")+"."
}

// plural writes "1 node is" or "3 nodes are".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// platformCharts are /platform's charts over w.
func (h *Handler) platformCharts(ctx context.Context, have catalog.MetricSet, w timeRange) []chartView {
	var jobs []chartJob
	add := func(title, unit, query, fallback string) {
		jobs = append(jobs, chartJob{title: title, unit: unit, query: query, fallback: fallback})
	}
	if qs, err := h.cat.Queries("k8s.node_condition", have, catalog.QueryOptions{By: []string{}}); err == nil {
		m := qs[0].Source.Metric
		add("Nodes ready", "nodes", "sum("+selector(m, `condition="Ready"`, `status="true"`)+")", "ready")
	}
	if qs, err := h.cat.Queries("k8s.deployment_replicas_available", have, catalog.QueryOptions{By: []string{catalog.KeyNamespace, catalog.KeyWorkload}}); err == nil {
		add("Replicas available", "replicas", qs[0].Expr, "available")
	}
	if qs, err := h.cat.Queries("k8s.container_restarts", have, catalog.QueryOptions{By: []string{catalog.KeyNamespace}}); err == nil {
		q := qs[0]
		add("Container restarts per 5 minutes", "restarts", byClause(flatLabels(h.keyLabels(q, []string{catalog.KeyNamespace})),
			"increase("+selector(q.Source.Metric)+"[5m])"), "restarts")
	}
	if have.Has(spanmetrics.MetricCalls) {
		all := selector(spanmetrics.MetricCalls, spanKindServer)
		failed := selector(spanmetrics.MetricCalls, spanKindServer, spanErrors)
		add("Requests succeeded (the services' spans)", "%", "1 - (sum(rate("+failed+"[5m])) or vector(0)) / sum(rate("+all+"[5m]))", "succeeded")
	}
	out := make([]chartView, len(jobs))
	for n := range jobs {
		jobs[n].out = &out[n]
	}
	h.chartAll(ctx, jobs, w)
	return out
}

// platformPage is /platform: the answer first, then the tables and the
// charts.
func (h *Handler) platformPage(ctx context.Context, r *request) (any, error) {
	w := questionWindow(r.rng, r.now)
	v, err := h.platform(ctx, w)
	if err != nil {
		return nil, err
	}
	if v.Verdict != verdictNoData || len(v.Counts) > 0 {
		have, err := h.metricSet(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("render platform: %w", err)
		}
		v.Charts = h.platformCharts(ctx, have, w)
	}
	return v, nil
}
