package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
)

// failuresView answers "where are failures happening?": the window's
// failed requests by tenant, service, route, model, provider and error
// type from the span metrics, the inference engines' failures by model,
// and the timeouts and retries — the data of /failures and
// /api/v1/failures.
type failuresView struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Verdict string    `json:"verdict"`
	Answer  string    `json:"answer"`
	Counts  []count   `json:"counts"`
	// Requests are the spans services served (span metrics), nil without
	// span metrics.
	Requests *outcome `json:"requests,omitempty"`
	Timeouts float64  `json:"timeouts"`
	Retries  float64  `json:"retries"`
	// Breakdowns split the failures by one label each, most failures
	// first.
	Breakdowns []breakdown  `json:"breakdowns"`
	Warnings   []string     `json:"warnings"`
	Charts     []chartView  `json:"-"`
	Lead       []leadResult `json:"-"`
	// hasTenants: the span metrics carry a tenant label.
	hasTenants bool
}

// breakdown is the failures split by one dimension.
type breakdown struct {
	// By is the dimension (tenant, route, ...); From says which counters.
	By    string       `json:"by"`
	Title string       `json:"title"`
	From  string       `json:"from"`
	Rows  []failureRow `json:"rows"`
	// More counts the rows left out.
	More int `json:"more,omitempty"`
}

// failureRow is one value of a breakdown.
type failureRow struct {
	Value    string  `json:"value"`
	Requests float64 `json:"requests"`
	Failed   float64 `json:"failed"`
	// Rate is the failed share of the value's requests, Share its share of
	// the breakdown's failures.
	Rate  jsonNum `json:"error_ratio"`
	Share jsonNum `json:"share_of_failures"`
	// RateText and ShareText are for the page.
	RateText, ShareText string `json:"-"`
	ShareWidth          int    `json:"-"`
}

// leadResult is where most failures are in one breakdown, for the answer.
type leadResult struct{ By, Value, Share, Rate string }

// maxFailureRows is the most rows a breakdown lists.
const maxFailureRows = 15

// spanDimensions are the span metrics' labels a breakdown splits by, with
// the spans it counts: the services' own (server) spans for services and
// routes, every span that carries the label for the others.
var spanDimensions = []struct {
	by, title string
	labels    []string
	match     string
}{
	{"tenant", "By tenant", []string{"tenant"}, spanKindServer},
	{"service", "By service", []string{"service_name"}, spanKindServer},
	{"route", "By route (service and operation)", []string{"service_name", "span_name"}, spanKindServer},
	{"model", "By model (the spans' gen_ai.request.model)", []string{"gen_ai_request_model"}, ""},
	{"provider", "By provider", []string{"gen_ai_provider_name"}, ""},
	{"error_type", "By error type", []string{"error_type"}, ""},
}

// failures builds the view of w.
func (h *Handler) failures(ctx context.Context, w timeRange) (*failuresView, error) {
	v := &failuresView{From: w.From, To: w.To, Counts: []count{}, Breakdowns: []breakdown{}, Warnings: []string{}}
	have, err := h.metricSet(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("render failures: %w", err)
	}
	if have.Has(spanmetrics.MetricCalls) {
		if err := h.spanFailures(ctx, have, w, v); err != nil {
			return nil, fmt.Errorf("render failures: %w", err)
		}
	}
	out, vals, err := h.engineOutcomes(ctx, have, w, []string{catalog.KeyNamespace, catalog.KeyModel})
	if err != nil {
		return nil, fmt.Errorf("render failures: %w", err)
	}
	if len(out) > 0 {
		names := map[string][]string{}
		for k, ev := range vals {
			names[k] = []string{ev[0] + "/" + ev[1]}
		}
		v.Breakdowns = append(v.Breakdowns, newBreakdown("engine_model", "By model (the inference engines' counters)", "the inference engines' request counters", out, names))
	}
	v.answer()
	return v, nil
}

// spanFailures fills the span metrics' totals and breakdowns.
func (h *Handler) spanFailures(ctx context.Context, have catalog.MetricSet, w timeRange, v *failuresView) error {
	total, err := h.spanCount(ctx, w, spanmetrics.MetricCalls, spanKindServer)
	if err != nil {
		return err
	}
	failed, err := h.spanCount(ctx, w, spanmetrics.MetricCalls, spanKindServer, spanErrors)
	if err != nil {
		return err
	}
	v.Requests = &outcome{Requests: total, Failed: failed}
	if have.Has(spanmetrics.MetricTimeouts) {
		if v.Timeouts, err = h.spanCount(ctx, w, spanmetrics.MetricTimeouts); err != nil {
			return err
		}
	}
	if have.Has(spanmetrics.MetricRetries) {
		if v.Retries, err = h.spanCount(ctx, w, spanmetrics.MetricRetries); err != nil {
			return err
		}
	}
	for _, d := range spanDimensions {
		out, vals, err := h.spanOutcomes(ctx, w, d.labels, d.match)
		if err != nil {
			return err
		}
		if len(out) == 0 {
			continue
		}
		b := newBreakdown(d.by, d.title, "span metrics", out, vals)
		v.Breakdowns = append(v.Breakdowns, b)
		v.hasTenants = v.hasTenants || d.by == "tenant"
	}
	return nil
}

// newBreakdown sorts a dimension's outcomes, most failures first.
func newBreakdown(by, title, from string, out map[string]*outcome, vals map[string][]string) breakdown {
	b := breakdown{By: by, Title: title, From: from, Rows: []failureRow{}}
	var failed float64
	for _, o := range out {
		failed += o.Failed
	}
	for k, o := range out {
		r := failureRow{Value: strings.Join(vals[k], " "), Requests: o.Requests, Failed: o.Failed, Rate: jsonNum(o.failedRatio()), Share: jsonNum(0)}
		if failed > 0 {
			r.Share = jsonNum(o.Failed / failed)
		}
		r.RateText, r.ShareText = fmtUnit(float64(r.Rate), "%"), fmtPercent(float64(r.Share))
		r.ShareWidth = int(float64(r.Share)*100 + 0.5)
		b.Rows = append(b.Rows, r)
	}
	slices.SortFunc(b.Rows, func(a, b failureRow) int {
		return cmp.Or(cmp.Compare(b.Failed, a.Failed), cmp.Compare(b.Requests, a.Requests), naturalCompare(a.Value, b.Value))
	})
	b.More = max(0, len(b.Rows)-maxFailureRows)
	b.Rows = b.Rows[:min(len(b.Rows), maxFailureRows)]
	return b
}

// answer sets the verdict, the sentence and the counts.
func (v *failuresView) answer() {
	var requests, failed float64
	from := ""
	switch {
	case v.Requests != nil && v.Requests.Requests > 0:
		requests, failed, from = v.Requests.Requests, v.Requests.Failed, "the services served"
	default:
		for _, b := range v.Breakdowns {
			if b.By == "engine_model" {
				for _, r := range b.Rows {
					requests, failed = requests+r.Requests, failed+r.Failed
				}
				from = "the inference engines counted"
			}
		}
	}
	if requests == 0 {
		v.Verdict, v.Answer = verdictNoData, "No data yet: no request counted (no span metrics, no inference engine's request counters) from "+fmtTime(v.From)+" to "+fmtTime(v.To)+"."
		return
	}
	ratio := failed / requests
	cls := "ok"
	if ratio > 0.01 {
		cls = "bad"
	}
	v.Counts = append(v.Counts,
		count{Label: "requests", N: fmtNum(requests), Class: "none"},
		count{Label: "failed", N: fmt.Sprintf("%s (%s)", fmtNum(failed), fmtPercent(ratio)), Class: cls})
	if v.Requests != nil {
		v.Counts = append(v.Counts, count{Label: "timeouts", N: fmtNum(v.Timeouts), Class: nonZero(v.Timeouts)},
			count{Label: "retries", N: fmtNum(v.Retries), Class: nonZero(v.Retries)})
	}
	if failed == 0 {
		v.Verdict, v.Answer = verdictHealthy, fmt.Sprintf("Nowhere: none of the %s requests %s failed in the window.", fmtNum(requests), from)
		return
	}
	for _, b := range v.Breakdowns {
		if len(b.Rows) > 1 && b.Rows[0].Failed > 0 && b.By != "error_type" {
			r := b.Rows[0]
			v.Lead = append(v.Lead, leadResult{By: b.By, Value: r.Value, Share: r.ShareText, Rate: r.RateText})
		}
	}
	v.Verdict = verdictHealthy
	if ratio > 0.01 {
		v.Verdict = verdictUnhealthy
	}
	parts := []string{fmt.Sprintf("%s of the %s requests %s failed", fmtPercent(ratio), fmtNum(requests), from)}
	for _, l := range v.Lead {
		parts = append(parts, fmt.Sprintf("%s %s has %s of the failures (%s of its requests failed)", strings.ReplaceAll(l.By, "_", " "), l.Value, l.Share, l.Rate))
	}
	v.Answer = strings.Join(parts, "; ") + "."
}

func nonZero(x float64) string {
	if x > 0 {
		return "bad"
	}
	return "ok"
}

// failuresCharts are /failures' charts over w.
func (h *Handler) failuresCharts(ctx context.Context, have catalog.MetricSet, w timeRange, v *failuresView) []chartView {
	var jobs []chartJob
	if v.Requests != nil {
		all := selector(spanmetrics.MetricCalls, spanKindServer)
		bad := selector(spanmetrics.MetricCalls, spanKindServer, spanErrors)
		jobs = append(jobs, chartJob{title: "Error ratio by service", unit: "%", fallback: "all",
			query: "sum by (service_name) (rate(" + bad + "[5m])) / sum by (service_name) (rate(" + all + "[5m]))"})
		if v.hasTenants {
			jobs = append(jobs, chartJob{title: "Failed requests per second by tenant", unit: "/s", fallback: "all",
				query: "sum by (tenant) (rate(" + selector(spanmetrics.MetricCalls, spanKindServer, spanErrors, `tenant!=""`) + "[5m]))"})
		}
		if have.Has(spanmetrics.MetricTimeouts) {
			jobs = append(jobs, chartJob{title: "Timeouts per second by service", unit: "/s", fallback: "all",
				query: "sum by (service_name) (rate(" + selector(spanmetrics.MetricTimeouts) + "[5m]))"})
		}
	}
	if qs, err := h.cat.Queries("infer.request_failure", have, catalog.QueryOptions{By: []string{catalog.KeyModel}}); err == nil {
		jobs = append(jobs, chartJob{title: "Inference engines' failed requests per second by model", unit: "/s", fallback: "all", query: qs[0].Expr})
	}
	out := make([]chartView, len(jobs))
	for n := range jobs {
		jobs[n].out = &out[n]
	}
	h.chartAll(ctx, jobs, w)
	return out
}

// failuresPage is /failures.
func (h *Handler) failuresPage(ctx context.Context, r *request) (any, error) {
	w := questionWindow(r.rng, r.now)
	v, err := h.failures(ctx, w)
	if err != nil {
		return nil, err
	}
	if v.Verdict != verdictNoData {
		have, err := h.metricSet(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("render failures: %w", err)
		}
		v.Charts = h.failuresCharts(ctx, have, w, v)
	}
	return v, nil
}
