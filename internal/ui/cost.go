package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/envelope"
)

// costView answers "what do the GPUs cost, and who pays for idle ones?":
// over the window, GPU-hours available, allocated and used, their cost,
// and the rows of a grouping sorted by idle cost — the data of /cost. Its
// JSON twin, /api/v1/cost, is `vigil cost --json`'s object.
type costView struct {
	From, To time.Time
	// Configured says the UI has prices; Message says why not, or why
	// there are no figures.
	Configured bool
	Message    string
	By         string
	Groupings  []costLink
	Report     *cost.Report
	Rows       []costRowView
	Clusters   []costClusterView
}

// costClusterView is one cluster of the comparison, as printed.
type costClusterView struct {
	Cluster, Used, Allocated, Cost, Idle, Unallocated string
}

// costLink is one grouping's link.
type costLink struct {
	By, Href string
	Current  bool
}

// costRowView is one row as the page prints it.
type costRowView struct {
	Entity                                               string
	GPUs, Allocated, Used, Efficiency, Cost, Idle, Per1M string
	IdleWidth                                            int
	Bad                                                  bool
}

// costOptions are the prices the cost page reads, from Options.
func (h *Handler) costOptions(w timeRange, by string) (cost.Options, error) {
	o := cost.Options{From: w.From, To: w.To, Prices: h.opts.Prices, Currency: h.opts.Currency, By: by, Catalog: h.cat}
	if o.Prices == nil && o.Currency == "" {
		return o, cost.ErrNoPrices
	}
	return o, nil
}

// costReport computes the window's figures by the grouping.
func (h *Handler) costReport(ctx context.Context, w timeRange, by string) (*cost.Report, error) {
	opts, err := h.costOptions(w, by)
	if err != nil {
		return nil, err
	}
	return cost.Compute(ctx, h.opts.Store, opts)
}

func (h *Handler) costPage(ctx context.Context, r *request) (any, error) {
	w := questionWindow(r.rng, r.now)
	by := r.http.URL.Query().Get("by")
	if !slices.Contains(cost.Groupings(), by) {
		by = cost.ByNamespace
	}
	v := &costView{From: w.From, To: w.To, By: by, Configured: true}
	for _, g := range cost.Groupings() {
		v.Groupings = append(v.Groupings, costLink{By: g, Href: "/cost?by=" + g, Current: g == by})
	}
	rep, err := h.costReport(ctx, w, by)
	switch {
	case errors.Is(err, cost.ErrNoPrices) && h.opts.Prices == nil && h.opts.Currency == "":
		v.Configured = false
		v.Message = "No GPU prices: set vigil.yaml's cost section (currency and gpu_hourly, or prices_file; a currency alone reads OpenCost's node_gpu_hourly_cost), and this page shows what the GPUs cost."
		return v, nil
	case errors.Is(err, cost.ErrNoPrices), errors.Is(err, cost.ErrNoGPUs):
		v.Message = err.Error()
		return v, nil
	case err != nil:
		return nil, fmt.Errorf("render cost: %w", err)
	}
	v.Report = rep
	for _, c := range rep.Clusters {
		v.Clusters = append(v.Clusters, costClusterView{Cluster: c.Cluster, Used: fmtPercent(c.Utilization), Allocated: fmtPercent(c.Allocation),
			Cost: fmt.Sprintf("%.2f", c.Cost.Total), Idle: fmt.Sprintf("%.2f", c.Cost.Idle), Unallocated: fmt.Sprintf("%.2f", c.Cost.Unallocated)})
	}
	maxIdle := 0.0
	for _, row := range rep.By {
		maxIdle = max(maxIdle, row.IdleCost)
	}
	for _, row := range rep.By {
		rv := costRowView{
			Entity: costEntity(row.Entity), GPUs: fmt.Sprintf("%.2f", row.GPUs),
			Allocated: fmt.Sprintf("%.2f", row.GPUHoursAllocated), Used: fmt.Sprintf("%.2f", row.GPUHoursUsed),
			Efficiency: fmtPercent(row.Efficiency), Cost: fmt.Sprintf("%.2f", row.Cost), Idle: fmt.Sprintf("%.2f", row.IdleCost),
			Per1M: "–",
			Bad:   row.GPUHoursAllocated > 0 && row.Efficiency < 0.5,
		}
		if maxIdle > 0 {
			rv.IdleWidth = int(row.IdleCost/maxIdle*100 + 0.5)
		}
		if p := row.CostPer1MTokens; p != nil {
			rv.Per1M = per1M("prompt", p.Allocation.Prompt, p.Usage.Prompt) + " " + per1M("generated", p.Allocation.Generation, p.Usage.Generation)
		}
		v.Rows = append(v.Rows, rv)
	}
	return v, nil
}

func per1M(kind string, alloc, usage *float64) string {
	if alloc == nil || usage == nil {
		return ""
	}
	return fmt.Sprintf("%s %.2f (%.2f used)", kind, *alloc, *usage)
}

// costEntity prints a row's entity.
func costEntity(e map[string]string) string {
	var parts []string
	if c := e["cluster"]; c != "" {
		parts = append(parts, c+":")
	}
	switch {
	case e["workload"] != "":
		parts = append(parts, e["namespace"]+"/"+e["workload"])
	case e["model"] != "":
		parts = append(parts, e["namespace"]+"/"+e["model"])
	case e["pod"] != "":
		parts = append(parts, e["namespace"]+"/"+e["pod"])
	default:
		for _, k := range []string{"node", "tenant", "namespace"} {
			if e[k] != "" {
				parts = append(parts, e[k])
			}
		}
	}
	return strings.Join(parts, " ")
}

// CostAPI serves /api/v1/cost: `vigil cost --json`'s object over
// ?from=&to= (the last hour by default) and ?by= (namespace by default),
// in the API's envelope; 400 without prices or a valid grouping, 404 with
// no GPU in the window.
func (h *Handler) CostAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		win, ok := h.apiWindow(w, r)
		if !ok {
			return
		}
		by := r.URL.Query().Get("by")
		if by == "" {
			by = cost.ByNamespace
		}
		if !slices.Contains(cost.Groupings(), by) {
			envelope.WriteError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("by must be one of %s, got %q", strings.Join(cost.Groupings(), ", "), by))
			return
		}
		rep, err := h.costReport(r.Context(), win, by)
		switch {
		case errors.Is(err, cost.ErrNoPrices):
			envelope.WriteError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("%w: set vigil.yaml's cost section", err))
		case errors.Is(err, cost.ErrNoGPUs):
			envelope.WriteError(w, http.StatusNotFound, "not_found", err)
		case err != nil:
			envelope.WriteError(w, http.StatusInternalServerError, "execution", fmt.Errorf("%s: %w", r.URL.Path, err))
		default:
			envelope.WriteData(w, rep)
		}
	})
}
