package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/kinds"
)

// The series the cost recorder writes every cycle. node_gpu_hourly_cost
// is OpenCost's name and meaning (the hourly price of one GPU on a node),
// so that OpenCost's dashboards read Vigil's; it is not written when the
// prices are OpenCost's own.
const (
	MetricGPUCostHourly     = "vigil_gpu_cost_hourly"
	MetricGPUIdleCostHourly = "vigil_gpu_idle_cost_hourly"
	MetricCostPer1MTokens   = "vigil_cost_per_1m_tokens"
	MetricNodeGPUHourlyCost = cost.MetricOpenCostGPUPrice
)

// costRecorder computes, every evaluation cycle, what the GPUs cost over
// the cost section's window before the cycle, and writes it as series:
//
//	vigil_gpu_cost_hourly{state="allocated", node, namespace, pod, workload, tenant, model, currency}
//	vigil_gpu_cost_hourly{state="unallocated", node, currency}
//	    the cost per hour of the GPUs a pod holds, and of a node's GPUs no
//	    pod holds: their sum is the cluster's GPU cost per hour;
//	vigil_gpu_idle_cost_hourly{node, namespace, pod, workload, tenant, model, currency}
//	    the part of a pod's cost per hour its GPUs do not use;
//	vigil_cost_per_1m_tokens{model, tenant, basis, token_type, currency}
//	    what a million prompt or generated tokens cost, on the allocation
//	    and the usage basis;
//	node_gpu_hourly_cost{node}
//	    OpenCost's: the price of one GPU of the node for one hour.
//
// It keeps the cycle's report for the gpu_idle findings' cost per day.
type costRecorder struct {
	read     cost.Source
	app      storage.AppendableV2
	prices   *cost.Prices
	currency string
	window   time.Duration
	logger   *slog.Logger

	mu   sync.Mutex
	last *cost.Report
}

// newCostRecorder returns the recorder of the cost section; nil when the
// section sets no price.
func newCostRecorder(cfg config.Config, read cost.Source, app storage.AppendableV2, logger *slog.Logger) (*costRecorder, error) {
	cc := cfg.Cost
	if !cc.Enabled() {
		return nil, nil
	}
	prices, err := cc.Load()
	if err != nil {
		return nil, UsageError{fmt.Errorf("cost: %w", err)}
	}
	r := &costRecorder{read: read, app: app, prices: prices, currency: strings.ToUpper(cc.Currency), window: cc.Window, logger: logger}
	if prices != nil {
		r.currency = prices.Currency
	}
	return r, nil
}

// task is the watcher's task; nil without a recorder.
func (r *costRecorder) task() func(context.Context, time.Time) error {
	if r == nil {
		return nil
	}
	return r.record
}

// record computes the window before at and writes its series at at. A
// window with no GPU writes nothing.
func (r *costRecorder) record(ctx context.Context, at time.Time) error {
	rep, err := cost.Compute(ctx, r.read, cost.Options{From: at.Add(-r.window), To: at, Prices: r.prices, Currency: r.currency, By: cost.ByPod})
	switch {
	case errors.Is(err, cost.ErrNoGPUs):
		r.setLast(nil)
		return nil
	case err != nil:
		r.setLast(nil)
		return fmt.Errorf("cost: %w", err)
	}
	r.setLast(rep)
	hours := rep.To.Sub(rep.From).Hours()
	if hours <= 0 {
		return nil
	}
	app := r.app.AppenderV2(ctx)
	ts := at.UnixMilli()
	add := func(name string, v float64, kv ...string) error {
		ls := labels.NewBuilder(labels.FromStrings(append([]string{"__name__", name}, kv...)...))
		if name != MetricNodeGPUHourlyCost {
			ls.Set("currency", rep.Currency)
		}
		_, err := app.Append(0, ls.Labels(), 0, ts, v, nil, nil, storage.AOptions{})
		return err
	}
	var errs []error
	type tokenKey struct{ model, tenant string }
	perModel := map[tokenKey]*cost.Row{}
	for _, row := range rep.By {
		kv := entityLabels(row.Entity)
		errs = append(errs, add(MetricGPUCostHourly, row.Cost/hours, append([]string{"state", "allocated"}, kv...)...),
			add(MetricGPUIdleCostHourly, row.IdleCost/hours, kv...))
		if m := row.Entity["model"]; m != "" {
			k := tokenKey{m, row.Entity["tenant"]}
			agg := perModel[k]
			if agg == nil {
				agg = &cost.Row{}
				perModel[k] = agg
			}
			agg.Cost += row.Cost
			agg.IdleCost += row.IdleCost
			agg.Tokens.Prompt += row.Tokens.Prompt
			agg.Tokens.Generation += row.Tokens.Generation
		}
	}
	for _, n := range rep.Nodes {
		errs = append(errs, add(MetricGPUCostHourly, n.Cost.Unallocated/hours, "state", "unallocated", "node", n.Node))
		if r.prices != nil {
			errs = append(errs, add(MetricNodeGPUHourlyCost, n.Hourly, "node", n.Node))
		}
	}
	for k, agg := range perModel {
		used := agg.Cost - agg.IdleCost
		for _, t := range []struct {
			kind   string
			tokens float64
		}{{"prompt", agg.Tokens.Prompt}, {"generation", agg.Tokens.Generation}} {
			if t.tokens <= 0 {
				continue
			}
			errs = append(errs,
				add(MetricCostPer1MTokens, agg.Cost/t.tokens*1e6, "model", k.model, "tenant", k.tenant, "basis", "allocation", "token_type", t.kind),
				add(MetricCostPer1MTokens, used/t.tokens*1e6, "model", k.model, "tenant", k.tenant, "basis", "usage", "token_type", t.kind))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(fmt.Errorf("cost: append: %w", err), app.Rollback())
	}
	return app.Commit()
}

// entityLabels are a row's entity as label pairs, the empty ones left out.
func entityLabels(e map[string]string) []string {
	var kv []string
	for _, k := range []string{"node", "namespace", "pod", "workload", "tenant", "model", "cluster"} {
		if v := e[k]; v != "" {
			kv = append(kv, k, v)
		}
	}
	return kv
}

func (r *costRecorder) setLast(rep *cost.Report) {
	r.mu.Lock()
	r.last = rep
	r.mu.Unlock()
}

// annotate adds to each gpu_idle finding what its pod's idle GPUs cost a
// day at the last window's prices and activity: "… ; idle cost 94.08
// USD/day (8 GPUs at 0.50 USD/h, 2% active)".
func (r *costRecorder) annotate(_ context.Context, _ time.Time, rep *diagnose.Report) {
	if r == nil || rep == nil {
		return
	}
	r.mu.Lock()
	last := r.last
	r.mu.Unlock()
	if last == nil {
		return
	}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.Kind != kinds.GPUIdle || strings.Contains(f.Summary, "idle cost ") {
			continue
		}
		for _, row := range last.By {
			if row.Entity["namespace"] != f.Entity["namespace"] || row.Entity["pod"] != f.Entity["pod"] || row.GPUHoursAllocated <= 0 {
				continue
			}
			price := row.Cost / row.GPUHoursAllocated
			f.Summary += "; " + cost.IdleClause(row.GPUs, price, row.Efficiency, last.Currency)
			break
		}
	}
}

// costPrices are the cost section's prices for the web UI's /cost: the
// prices, or with OpenCost's none and the currency; nil and "" without a
// cost section, or when its prices file does not load (logged; the
// evaluation refuses to start on it).
func (s *Server) costPrices() (*cost.Prices, string) {
	cc := s.cfg.Cost
	if !cc.Enabled() {
		return nil, ""
	}
	p, err := cc.Load()
	if err != nil {
		s.logger.Warn("the cost page has no prices", "err", err)
		return nil, ""
	}
	if p != nil {
		return p, p.Currency
	}
	return nil, strings.ToUpper(cc.Currency)
}
