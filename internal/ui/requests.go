package ui

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
)

// outcome counts requests over a window and those that failed.
type outcome struct {
	Requests float64 `json:"requests"`
	Failed   float64 `json:"failed"`
	// Aborted are requests the engine ended unfinished (vLLM's
	// finished_reason="abort": mostly clients that went away), counted in
	// Requests but not as failed.
	Aborted float64 `json:"aborted,omitempty"`
}

// failedRatio is the share of the requests that failed (NaN: none).
func (o outcome) failedRatio() float64 {
	if o.Requests <= 0 {
		return math.NaN()
	}
	return o.Failed / o.Requests
}

// selector writes metric{matchers}, quoting a name that is not a legacy
// metric name.
func selector(metric string, matchers ...string) string {
	ms := slices.DeleteFunc(slices.Clone(matchers), func(s string) bool { return s == "" })
	if !model.LegacyValidation.IsValidMetricName(metric) {
		ms = append([]string{strconv.Quote(metric)}, ms...)
		return "{" + strings.Join(ms, ", ") + "}"
	}
	if len(ms) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(ms, ", ") + "}"
}

// byClause writes "sum by (a, b) (expr)", or "sum(expr)" without labels.
func byClause(by []string, expr string) string {
	if len(by) == 0 {
		return "sum(" + expr + ")"
	}
	return "sum by (" + strings.Join(by, ", ") + ") (" + expr + ")"
}

// flatLabels is the labels of ls in order, each once.
func flatLabels(ls [][]string) []string {
	var out []string
	for _, names := range ls {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// engineOutcomes counts the inference engines' requests over w by the
// canonical keys (none: one total under ""), from the catalog's
// infer.request_success and infer.request_failure sources. A vLLM request
// that finished as "abort" is counted as aborted, not failed: vLLM has no
// failure counter, and an abort is mostly a client that went away. It
// returns the outcome and the keys' values of each entity.
func (h *Handler) engineOutcomes(ctx context.Context, have catalog.MetricSet, w timeRange, keys []string) (map[string]*outcome, map[string][]string, error) {
	out, vals := map[string]*outcome{}, map[string][]string{}
	rng := promDuration(w.To.Sub(w.From))
	add := func(q catalog.Query, matcher string, failed, aborted bool) error {
		ls := h.keyLabels(q, keys)
		expr := byClause(flatLabels(ls), "increase("+selector(q.Source.Metric, matcher)+"["+rng+"])")
		v, err := h.instant(ctx, expr, w.To)
		if err != nil {
			return err
		}
		for _, s := range v {
			ev := entityValues(s.Metric, ls)
			k := strings.Join(ev, "/")
			o := out[k]
			if o == nil {
				o = &outcome{}
				out[k], vals[k] = o, ev
			}
			o.Requests += s.F
			switch {
			case failed:
				o.Failed += s.F
			case aborted:
				o.Aborted += s.F
			}
		}
		return nil
	}
	for _, signal := range []string{"infer.request_success", "infer.request_failure"} {
		qs, err := h.cat.Queries(signal, have, catalog.QueryOptions{By: keys})
		if err != nil {
			continue // no source of it in the store
		}
		for _, q := range qs {
			var err error
			switch {
			case signal == "infer.request_failure":
				err = add(q, "", true, false)
			case slices.Contains(q.Source.Labels, "finished_reason"):
				if err = add(q, `finished_reason!="abort"`, false, false); err == nil {
					err = add(q, `finished_reason="abort"`, false, true)
				}
			default:
				err = add(q, "", false, false)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("count %s: %w", signal, err)
			}
		}
	}
	return out, vals, nil
}

// spanKindServer is the span metrics' kind of a request a service serves.
const spanKindServer = `span_kind="SPAN_KIND_SERVER"`

// spanErrors is the span metrics' matcher of a failed span.
const spanErrors = `status_code="STATUS_CODE_ERROR"`

// spanOutcomes counts spans over w by labels (span metrics' own names:
// service_name, span_name, tenant, ...), of those that match; a series
// without a value of every label is left out.
func (h *Handler) spanOutcomes(ctx context.Context, w timeRange, by []string, match string) (map[string]*outcome, map[string][]string, error) {
	rng := promDuration(w.To.Sub(w.From))
	ms := []string{match}
	for _, l := range by {
		ms = append(ms, l+`!=""`)
	}
	total := byClause(by, "increase("+selector(spanmetrics.MetricCalls, ms...)+"["+rng+"])")
	failed := byClause(by, "increase("+selector(spanmetrics.MetricCalls, append(ms, spanErrors)...)+"["+rng+"])")
	out, vals := map[string]*outcome{}, map[string][]string{}
	for n, expr := range []string{total, failed} {
		v, err := h.instant(ctx, expr, w.To)
		if err != nil {
			return nil, nil, fmt.Errorf("count spans: %w", err)
		}
		for _, s := range v {
			ev := make([]string, len(by))
			for i, l := range by {
				ev[i] = s.Metric.Get(l)
			}
			k := strings.Join(ev, "/")
			o := out[k]
			if o == nil {
				o = &outcome{}
				out[k], vals[k] = o, ev
			}
			if n == 0 {
				o.Requests += s.F
			} else {
				o.Failed += s.F
			}
		}
	}
	return out, vals, nil
}

// spanCount sums one of the span metrics' counters over w.
func (h *Handler) spanCount(ctx context.Context, w timeRange, metric string, matchers ...string) (float64, error) {
	v, err := h.instant(ctx, "sum(increase("+selector(metric, matchers...)+"["+promDuration(w.To.Sub(w.From))+"]))", w.To)
	if err != nil {
		return 0, err
	}
	return sum(v), nil
}

// hasAny reports whether the store holds any of names.
func hasAny(have catalog.MetricSet, names ...string) bool {
	return slices.ContainsFunc(names, have.Has)
}
