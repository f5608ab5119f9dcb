package ui

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
)

// tenantsView answers "which tenant is failing?": per tenant over the
// window, its requests (the services' server spans), failures, error
// ratio, share of all failures, p95 latency and the services it used —
// the data of /tenants and /api/v1/tenants.
type tenantsView struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Verdict string    `json:"verdict"`
	Answer  string    `json:"answer"`
	Counts  []count   `json:"counts"`
	// Labels are the span metrics' label names looked for as the tenant.
	Labels []string `json:"labels_looked_for"`
	// Tenants are sorted by share of the failures, worst first.
	Tenants  []tenantRow `json:"tenants"`
	Warnings []string    `json:"warnings"`
	Charts   []chartView `json:"-"`
	// HasLatency says the span metrics' duration histogram is in the store.
	HasLatency bool `json:"-"`
}

// tenantRow is one tenant over the window.
type tenantRow struct {
	Tenant   string  `json:"tenant"`
	Requests float64 `json:"requests"`
	Failed   float64 `json:"failed"`
	// Rate is the failed share of the tenant's requests, Share its share
	// of all the tenants' failures.
	Rate  jsonNum `json:"error_ratio"`
	Share jsonNum `json:"share_of_failures"`
	// P95 is the p95 of its server spans' durations in seconds (null:
	// no duration histogram).
	P95      jsonNum  `json:"p95_seconds"`
	Services []string `json:"services"`
	// RateText, ShareText and P95Text are for the page.
	RateText, ShareText, P95Text string `json:"-"`
	ShareWidth                   int    `json:"-"`
	Bad                          bool   `json:"-"`
}

// normalErrorRatio is the error ratio above which a tenant fails: the
// threshold /failures colours by.
const normalErrorRatio = 0.01

// tenantLabels are the span metrics' labels that carry the tenant: the
// tenant dimension of /failures' breakdowns.
func tenantLabels() []string {
	for _, d := range spanDimensions {
		if d.by == "tenant" {
			return d.labels
		}
	}
	return nil
}

// tenants builds the view of w.
func (h *Handler) tenants(ctx context.Context, w timeRange) (*tenantsView, error) {
	v := &tenantsView{From: w.From, To: w.To, Counts: []count{}, Labels: tenantLabels(), Tenants: []tenantRow{}, Warnings: []string{}}
	have, err := h.metricSet(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("render tenants: %w", err)
	}
	if have.Has(spanmetrics.MetricCalls) {
		if err := h.tenantRows(ctx, have, w, v); err != nil {
			return nil, fmt.Errorf("render tenants: %w", err)
		}
	}
	v.answer()
	return v, nil
}

// tenantRows fills v.Tenants from the span metrics.
func (h *Handler) tenantRows(ctx context.Context, have catalog.MetricSet, w timeRange, v *tenantsView) error {
	out, vals, err := h.spanOutcomes(ctx, w, v.Labels, spanKindServer)
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return nil
	}
	byService, svcVals, err := h.spanOutcomes(ctx, w, append(slices.Clone(v.Labels), "service_name"), spanKindServer)
	if err != nil {
		return err
	}
	services := map[string][]string{}
	for k, o := range byService {
		if o.Requests > 0 {
			ev := svcVals[k]
			t := strings.Join(ev[:len(v.Labels)], " ")
			services[t] = append(services[t], ev[len(v.Labels)])
		}
	}
	p95 := map[string]float64{}
	if v.HasLatency = have.Has(spanmetrics.MetricDuration + "_bucket"); v.HasLatency {
		if p95, err = h.tenantP95(ctx, w, v.Labels); err != nil {
			return err
		}
	}
	var failed float64
	for _, o := range out {
		failed += o.Failed
	}
	for k, o := range out {
		name := strings.Join(vals[k], " ")
		r := tenantRow{Tenant: name, Requests: o.Requests, Failed: o.Failed, Rate: jsonNum(o.failedRatio()), Share: jsonNum(0), P95: jsonNum(math.NaN()), Services: services[name]}
		if failed > 0 {
			r.Share = jsonNum(o.Failed / failed)
		}
		if p, ok := p95[name]; ok {
			r.P95 = jsonNum(p)
		}
		slices.SortFunc(r.Services, naturalCompare)
		r.Services = slices.Compact(r.Services)
		if r.Services == nil {
			r.Services = []string{}
		}
		r.RateText, r.ShareText, r.P95Text = fmtUnit(float64(r.Rate), "%"), fmtPercent(float64(r.Share)), fmtUnit(float64(r.P95), "s")
		r.ShareWidth = int(float64(r.Share)*100 + 0.5)
		r.Bad = float64(r.Rate) > normalErrorRatio
		v.Tenants = append(v.Tenants, r)
	}
	slices.SortFunc(v.Tenants, func(a, b tenantRow) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(nanLow(b.Rate), nanLow(a.Rate)),
			cmp.Compare(b.Requests, a.Requests), naturalCompare(a.Tenant, b.Tenant), strings.Compare(a.Tenant, b.Tenant))
	})
	return nil
}

// nanLow is r, with NaN (no requests) below every ratio.
func nanLow(r jsonNum) float64 {
	if math.IsNaN(float64(r)) {
		return -1
	}
	return float64(r)
}

// tenantP95 is the p95 of each tenant's server spans over w, from the
// span metrics' duration histogram.
func (h *Handler) tenantP95(ctx context.Context, w timeRange, by []string) (map[string]float64, error) {
	vec, err := h.instant(ctx, tenantP95Query(by, promDuration(w.To.Sub(w.From))), w.To)
	if err != nil {
		return nil, fmt.Errorf("p95 by tenant: %w", err)
	}
	out := map[string]float64{}
	for _, s := range vec {
		ev := make([]string, len(by))
		for i, l := range by {
			ev[i] = s.Metric.Get(l)
		}
		if !math.IsNaN(s.F) {
			out[strings.Join(ev, " ")] = s.F
		}
	}
	return out, nil
}

// tenantP95Query is the p95 of the tenants' server spans over rng.
func tenantP95Query(by []string, rng string) string {
	ms := []string{spanKindServer}
	for _, l := range by {
		ms = append(ms, l+`!=""`)
	}
	return "histogram_quantile(0.95, sum by (" + strings.Join(append([]string{"le"}, by...), ", ") + ") (rate(" +
		selector(spanmetrics.MetricDuration+"_bucket", ms...) + "[" + rng + "])))"
}

// answer sets the verdict, the sentence and the counts.
func (v *tenantsView) answer() {
	if len(v.Tenants) == 0 {
		v.Verdict = verdictNoData
		v.Answer = fmt.Sprintf("No tenants in the data: no span metrics' request carries a tenant label (looked for %s) from %s to %s.",
			strings.Join(v.Labels, ", "), fmtTime(v.From), fmtTime(v.To))
		return
	}
	var requests, failed float64
	var over []tenantRow
	for _, r := range v.Tenants {
		requests, failed = requests+r.Requests, failed+r.Failed
		if r.Bad {
			over = append(over, r)
		}
	}
	v.Counts = append(v.Counts,
		count{Label: "tenants", N: fmtNum(float64(len(v.Tenants))), Class: "none"},
		count{Label: "requests", N: fmtNum(requests), Class: "none"},
		count{Label: "failed", N: fmt.Sprintf("%s (%s)", fmtNum(failed), fmtPercent(failed/requests)), Class: nonZero(failed)},
		count{Label: "over " + fmtPercent(normalErrorRatio) + " failed", N: fmtNum(float64(len(over))), Class: nonZero(float64(len(over)))})
	lead := v.Tenants[0]
	switch {
	case len(over) == 0:
		v.Verdict = verdictHealthy
		v.Answer = fmt.Sprintf("All %s tenants are within normal error ratio: none had more than %s of its requests fail.", fmtNum(float64(len(v.Tenants))), fmtPercent(normalErrorRatio))
	case lead.Bad && float64(lead.Share) >= 0.5:
		v.Verdict = verdictUnhealthy
		v.Answer = fmt.Sprintf("%s has %s of the failures (%s of its requests failed).", lead.Tenant, lead.ShareText, lead.RateText)
	default:
		v.Verdict = verdictUnhealthy
		names := make([]string, len(over))
		for n, r := range over {
			names[n] = r.Tenant + " (" + r.RateText + ")"
		}
		v.Answer = fmt.Sprintf("No tenant stands out: %s of the %s tenants had more than %s of their requests fail: %s.",
			fmtNum(float64(len(over))), fmtNum(float64(len(v.Tenants))), fmtPercent(normalErrorRatio), strings.Join(names, ", "))
	}
}

// tenantsCharts are /tenants' charts over w.
func (h *Handler) tenantsCharts(ctx context.Context, w timeRange, v *tenantsView) []chartView {
	by := strings.Join(v.Labels, ", ")
	var present []string
	for _, l := range v.Labels {
		present = append(present, l+`!=""`)
	}
	all := selector(spanmetrics.MetricCalls, append([]string{spanKindServer}, present...)...)
	bad := selector(spanmetrics.MetricCalls, append([]string{spanKindServer, spanErrors}, present...)...)
	jobs := []chartJob{
		{title: "Error ratio by tenant", unit: "%", fallback: "all",
			query: "sum by (" + by + ") (rate(" + bad + "[5m])) / sum by (" + by + ") (rate(" + all + "[5m]))"},
		{title: "Failed requests per second by tenant", unit: "/s", fallback: "all",
			query: "sum by (" + by + ") (rate(" + bad + "[5m]))"},
	}
	if v.HasLatency {
		jobs = append(jobs, chartJob{title: "p95 latency by tenant (s)", unit: "s", fallback: "all", query: tenantP95Query(v.Labels, "5m")})
	}
	out := make([]chartView, len(jobs))
	for n := range jobs {
		jobs[n].out = &out[n]
	}
	h.chartAll(ctx, jobs, w)
	return out
}

// tenantsPage is /tenants.
func (h *Handler) tenantsPage(ctx context.Context, r *request) (any, error) {
	w := questionWindow(r.rng, r.now)
	v, err := h.tenants(ctx, w)
	if err != nil {
		return nil, err
	}
	if v.Verdict != verdictNoData {
		v.Charts = h.tenantsCharts(ctx, w, v)
	}
	return v, nil
}
