package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/envelope"
	"github.com/vigil-obs/vigil/internal/topology"
)

// gpuGrid is every GPU of every node with its health hint: the data of
// /gpus and of /api/v1/gpus.
type gpuGrid struct {
	// At is the instant the hints describe.
	At time.Time `json:"at"`
	// Counts are how many GPUs have each hint, worst first.
	Counts []healthCount `json:"counts"`
	// GPUs counts them all.
	GPUs  int        `json:"gpus"`
	Nodes []gridNode `json:"nodes"`
	// Warnings say what the topology could not read or had to assume.
	Warnings []string `json:"warnings"`
}

// healthCount is how many GPUs have one hint.
type healthCount struct {
	Health string `json:"health"`
	N      int    `json:"gpus"`
	Class  string `json:"-"`
}

// gridNode is one node's row of the grid.
type gridNode struct {
	Name   string    `json:"node"`
	Health string    `json:"health,omitempty"`
	Reason string    `json:"health_reason,omitempty"`
	GPUs   []gridGPU `json:"gpus"`
}

// gridGPU is one GPU's cell. Health is one of the topology's hints
// (lost, xid, ecc, throttled, hot, idle, ok, unknown) or the kind of an
// open incident's cause on it, which wins.
type gridGPU struct {
	Index    string `json:"gpu"`
	UUID     string `json:"uuid,omitempty"`
	Model    string `json:"gpu_model,omitempty"`
	Health   string `json:"health"`
	Reason   string `json:"health_reason,omitempty"`
	Incident string `json:"incident,omitempty"`
	// Class and Href are the cell's, for the page.
	Class string `json:"-"`
	Href  string `json:"-"`
}

// healthOrder is the topology's hints, worst first; a cause kind sorts
// before them all.
var healthOrder = []topology.Health{
	topology.HealthLost, topology.HealthXID, topology.HealthECC, topology.HealthThrottled,
	topology.HealthHot, topology.HealthIdle, topology.HealthOK, topology.HealthUnknown,
}

// healthClass is the CSS class of a hint: its own for the topology's
// hints, "h-cause" for a cause kind.
func healthClass(h string) string {
	if slices.Contains(healthOrder, topology.Health(h)) {
		return "h-" + h
	}
	return "h-cause"
}

// gpus builds the grid at at: the topology's hints from the latest values,
// with the causes of the open incidents on a node or GPU over them.
func (h *Handler) gpus(ctx context.Context, at time.Time) (gpuGrid, error) {
	g := gpuGrid{At: at, Nodes: []gridNode{}, Counts: []healthCount{}, Warnings: []string{}}
	topo, err := topology.Build(ctx, h.opts.Store, nil, at, topology.DefaultOptions())
	switch {
	case errors.Is(err, topology.ErrNoData):
		g.Warnings = append(g.Warnings, "the store holds no data at or in the hour before "+fmtTime(at))
		return g, nil
	case err != nil:
		return g, fmt.Errorf("build the topology at %s: %w", fmtTime(at), err)
	}
	incidentOf := h.applyIncidentHints(topo)
	counts := map[string]int{}
	for _, n := range topo.Nodes {
		if len(n.GPUs) == 0 {
			continue
		}
		row := gridNode{Name: n.Name, Health: string(n.Health), Reason: n.Reason}
		for _, gpu := range n.GPUs {
			c := gridGPU{
				Index: gpu.Index, UUID: gpu.UUID, Model: gpu.Model, Health: string(gpu.Health), Reason: gpu.Reason,
				Incident: incidentOf[[2]string{n.Name, gpu.Index}], Class: healthClass(string(gpu.Health)),
			}
			if c.Incident == "" {
				c.Incident = incidentOf[[2]string{n.Name, ""}]
			}
			if c.Incident != "" {
				c.Href = "/incidents/" + url.PathEscape(c.Incident)
			}
			counts[c.Health]++
			row.GPUs = append(row.GPUs, c)
		}
		g.GPUs += len(row.GPUs)
		g.Nodes = append(g.Nodes, row)
	}
	for k, n := range counts {
		g.Counts = append(g.Counts, healthCount{Health: k, N: n, Class: healthClass(k)})
	}
	rank := func(h string) int {
		if i := slices.Index(healthOrder, topology.Health(h)); i >= 0 {
			return i
		}
		return -1
	}
	slices.SortFunc(g.Counts, func(a, b healthCount) int {
		return cmp.Or(cmp.Compare(rank(a.Health), rank(b.Health)), cmp.Compare(a.Health, b.Health))
	})
	g.Warnings = append(g.Warnings, topo.Warnings...)
	return g, nil
}

// applyIncidentHints sets the causes of the firing incidents on their
// nodes and GPUs, most confident first, and returns the incident of each
// (node, gpu) it set.
func (h *Handler) applyIncidentHints(topo *topology.Topology) map[[2]string]string {
	out := map[[2]string]string{}
	if h.opts.Incidents == nil {
		return out
	}
	type hint struct {
		topology.Hint
		conf float64
		id   string
	}
	var hints []hint
	for _, i := range h.opts.Incidents.List() {
		if !i.Firing() {
			continue
		}
		for _, c := range i.Causes {
			if node := c.Entity["node"]; node != "" {
				hints = append(hints, hint{Hint: topology.Hint{Node: node, GPU: c.Entity["gpu"], Health: topology.Health(c.Kind), Reason: c.Summary}, conf: c.Confidence, id: i.ID})
			}
		}
	}
	slices.SortStableFunc(hints, func(a, b hint) int { return cmp.Compare(b.conf, a.conf) })
	plain := make([]topology.Hint, len(hints))
	for n, hn := range hints {
		plain[n] = hn.Hint
		if k := [2]string{hn.Node, hn.GPU}; out[k] == "" {
			out[k] = hn.id
		}
	}
	topo.ApplyHints(plain)
	return out
}

// gpusPage is /gpus: the counts first, then the grid, at ?to= or now.
func (h *Handler) gpusPage(ctx context.Context, r *request) (any, error) {
	at := r.now
	if !r.rng.To.IsZero() {
		at = r.rng.To
	}
	return h.gpus(ctx, at)
}

// GPUsAPI serves /api/v1/gpus (?time= an instant, default now): what
// /gpus shows, in the API's envelope.
func (h *Handler) GPUsAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			envelope.WriteError(w, http.StatusMethodNotAllowed, "bad_data", errors.New("only GET"))
			return
		}
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
		g, err := h.gpus(r.Context(), at)
		if err != nil {
			envelope.WriteError(w, http.StatusInternalServerError, "execution", err)
			return
		}
		envelope.WriteData(w, g)
	})
}
