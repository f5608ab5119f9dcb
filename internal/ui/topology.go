package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/envelope"
	"github.com/vigil-obs/vigil/internal/topology"
)

// topologyView is the entity tree at an instant — nodes, their GPUs and
// pods, the pods' workloads, services and models — kept to what matches
// the search ?q=: the data of /topology and /api/v1/topology.
type topologyView struct {
	At     time.Time  `json:"at"`
	Query  string     `json:"q,omitempty"`
	Answer string     `json:"answer"`
	Counts []count    `json:"counts"`
	Nodes  []topoNode `json:"nodes"`
	// Workloads are the workloads with a matching pod, or all of them.
	Workloads []*topology.Workload `json:"workloads"`
	Warnings  []string             `json:"warnings"`
	// To is ?to=, kept by the search form.
	To string `json:"-"`
}

// topoNode is one node with its GPUs and the pods that match.
type topoNode struct {
	Name   string          `json:"node"`
	Ready  string          `json:"ready"`
	Health string          `json:"health,omitempty"`
	Reason string          `json:"health_reason,omitempty"`
	GPUs   []topoGPU       `json:"gpus"`
	Pods   []*topology.Pod `json:"pods"`
}

// topoGPU is one GPU with its hint and the pods attributed to it.
type topoGPU struct {
	Index  string `json:"gpu"`
	Health string `json:"health"`
	Reason string `json:"health_reason,omitempty"`
	Pods   string `json:"pods,omitempty"`
	Class  string `json:"-"`
}

// podMatches reports whether any of the pod's names contains q.
func podMatches(p *topology.Pod, q string) bool {
	fields := append([]string{p.Namespace, p.Pod, p.Workload, p.Model, p.Tenant}, p.Services...)
	return slices.ContainsFunc(fields, func(f string) bool { return strings.Contains(strings.ToLower(f), q) })
}

// topologyAt builds the tree at at, kept to what matches q.
func (h *Handler) topologyAt(ctx context.Context, at time.Time, q string) (*topologyView, error) {
	v := &topologyView{At: at, Query: q, Nodes: []topoNode{}, Workloads: []*topology.Workload{}, Warnings: []string{}, Counts: []count{}}
	topo, err := topology.Build(ctx, h.opts.Store, h.cat, at, topology.DefaultOptions())
	switch {
	case errors.Is(err, topology.ErrNoData):
		v.Answer = "No data yet: the store holds no series at or in the hour before " + fmtTime(at) + "."
		return v, nil
	case err != nil:
		return nil, fmt.Errorf("render topology: build the topology at %s: %w", fmtTime(at), err)
	}
	h.applyIncidentHints(topo)
	lq := strings.ToLower(strings.TrimSpace(q))
	gpus, pods := 0, 0
	for _, n := range topo.Nodes {
		whole := lq == "" || strings.Contains(strings.ToLower(n.Name), lq)
		tn := topoNode{Name: n.Name, Health: string(n.Health), Reason: n.Reason, Ready: "unknown", GPUs: []topoGPU{}, Pods: []*topology.Pod{}}
		if n.Ready != nil {
			tn.Ready = map[bool]string{true: "ready", false: "not ready"}[*n.Ready]
		}
		for _, p := range n.Pods {
			if whole || podMatches(p, lq) {
				tn.Pods = append(tn.Pods, p)
			}
		}
		if !whole && len(tn.Pods) == 0 {
			continue
		}
		for _, g := range n.GPUs {
			var on []string
			for _, p := range g.Pods {
				on = append(on, p.Namespace+"/"+p.Pod)
			}
			tn.GPUs = append(tn.GPUs, topoGPU{Index: g.Index, Health: string(g.Health), Reason: g.Reason, Pods: strings.Join(on, ", "), Class: healthClass(string(g.Health))})
		}
		gpus, pods = gpus+len(tn.GPUs), pods+len(tn.Pods)
		v.Nodes = append(v.Nodes, tn)
	}
	for _, w := range topo.Workloads {
		fields := append([]string{w.Namespace, w.Name, w.Tenant}, append(w.Services, w.Models...)...)
		if lq == "" || slices.ContainsFunc(fields, func(f string) bool { return strings.Contains(strings.ToLower(f), lq) }) {
			v.Workloads = append(v.Workloads, w)
		}
	}
	v.Counts = append(v.Counts, count{Label: "nodes", N: fmt.Sprint(len(v.Nodes)), Class: "none"}, count{Label: "GPUs", N: fmt.Sprint(gpus), Class: "none"},
		count{Label: "pods", N: fmt.Sprint(pods), Class: "none"}, count{Label: "workloads", N: fmt.Sprint(len(v.Workloads)), Class: "none"})
	switch {
	case lq != "" && len(v.Nodes) == 0 && len(v.Workloads) == 0:
		v.Answer = fmt.Sprintf("Nothing matches %q at %s.", q, fmtTime(at))
	case lq != "":
		v.Answer = fmt.Sprintf("%s and %s match %q at %s.", plural(len(v.Nodes), "node", "nodes"), plural(len(v.Workloads), "workload", "workloads"), q, fmtTime(at))
	default:
		v.Answer = fmt.Sprintf("%s with %d GPUs run %d pods of %s at %s.", plural(len(v.Nodes), "node", "nodes"), gpus, pods, plural(len(v.Workloads), "workload", "workloads"), fmtTime(at))
	}
	v.Warnings = append(v.Warnings, topo.Warnings...)
	return v, nil
}

// topologyPage is /topology (?q= searches, ?to= the instant).
func (h *Handler) topologyPage(ctx context.Context, r *request) (any, error) {
	at := r.now
	if !r.rng.To.IsZero() {
		at = r.rng.To
	}
	v, err := h.topologyAt(ctx, at, r.http.URL.Query().Get("q"))
	if err != nil {
		return nil, err
	}
	v.To = r.view.To
	return v, nil
}

// topologyAPI serves /api/v1/topology (?time= an instant, ?q= a search).
func (h *Handler) topologyAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := h.opts.Now()
		at := now
		if s := r.URL.Query().Get("time"); s != "" {
			t, err := parseTime(s, now)
			if err != nil {
				envelope.WriteError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("time=%q: %w", s, err))
				return
			}
			at = t
		}
		v, err := h.topologyAt(r.Context(), at, r.URL.Query().Get("q"))
		if err != nil {
			envelope.WriteError(w, http.StatusInternalServerError, "execution", err)
			return
		}
		envelope.WriteData(w, v)
	})
}
