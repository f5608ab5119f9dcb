package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// The question pages (/platform, /inference, /failures) read the window
// of ?from=&to= (the last hour by default) through the catalog's queries,
// so that the names of whichever exporters a cluster runs are found.

// defaultSpan is the question pages' window without ?from=&to=.
const defaultSpan = time.Hour

// questionWindow is the window a question page shows.
func questionWindow(rng timeRange, now time.Time) timeRange {
	return rng.window(timeRange{From: now.Add(-defaultSpan), To: now})
}

// promDuration writes d as a PromQL range ("1h", "5m30s").
func promDuration(d time.Duration) string {
	return model.Duration(max(d.Truncate(time.Second), time.Second)).String()
}

// metricSet returns the metric names the store holds in w.
func (h *Handler) metricSet(ctx context.Context, w timeRange) (catalog.MetricSet, error) {
	q, err := h.opts.Store.Querier(w.From.Add(-5*time.Minute).UnixMilli(), w.To.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	names, _, err := q.LabelValues(ctx, model.MetricNameLabel, nil)
	if err != nil {
		return nil, fmt.Errorf("list metric names: %w", err)
	}
	return catalog.NewMetricSet(names...), nil
}

// instant evaluates qs at t; a scalar is one series without labels. It
// runs through h.loads: under a page's budget a slow query is errLoading.
func (h *Handler) instant(ctx context.Context, qs string, at time.Time) (promql.Vector, error) {
	key := "instant\x00" + qs + "\x00" + strconv.FormatInt(at.UnixMilli(), 10)
	v, err := h.loads.do(ctx, key, h.opts.QueryTimeout, func(ctx context.Context) (any, error) {
		return h.evalInstant(ctx, qs, at)
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(v.(promql.Vector)), nil // the kept answer is shared
}

// evalInstant evaluates qs at t.
func (h *Handler) evalInstant(ctx context.Context, qs string, at time.Time) (promql.Vector, error) {
	q, err := h.opts.Store.Engine().NewInstantQuery(ctx, h.opts.Store, nil, qs, at)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", qs, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		if errors.Is(res.Err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("evaluate %s: the query ran past %s", qs, h.opts.QueryTimeout)
		}
		return nil, fmt.Errorf("evaluate %s: %w", qs, res.Err)
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{F: v.V, T: v.T}}, nil
	}
	return nil, fmt.Errorf("evaluate %s: an instant query returned a %s", qs, res.Value.Type())
}

// sum is the sum of a vector's values (NaN and Inf left out).
func sum(v promql.Vector) float64 {
	var out float64
	for _, s := range v {
		if !math.IsNaN(s.F) && !math.IsInf(s.F, 0) {
			out += s.F
		}
	}
	return out
}

// firstValue returns the first non-empty value of names in l.
func firstValue(l labels.Labels, names []string) string {
	for _, n := range names {
		if v := l.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// keyLabels returns, for each canonical key, the labels that carry it in
// q's vocabulary.
func (h *Handler) keyLabels(q catalog.Query, keys []string) [][]string {
	out := make([][]string, len(keys))
	for n, k := range keys {
		out[n] = h.cat.GroupLabels(q.Source.Vocabulary, k)
	}
	return out
}

// entityValues returns a series' values of keys, read through ls (from
// keyLabels).
func entityValues(l labels.Labels, ls [][]string) []string {
	out := make([]string, len(ls))
	for n, names := range ls {
		out[n] = firstValue(l, names)
	}
	return out
}

// chartJob is one chart of a question page: a range query whose series
// are drawn as lines, with an optional limit (an SLO's threshold).
type chartJob struct {
	title, query, unit string
	// limit, when set, is drawn as a dashed line and labelled limitLabel.
	limit      *float64
	limitLabel string
	// fallback names a series whose labels tell nothing apart.
	fallback string
	out      *chartView
}

// chartView is one chart for the template.
type chartView struct {
	Title string
	Unit  string
	Plot  plotView
}

// chartAll evaluates the jobs over w, plotParallel at a time.
func (h *Handler) chartAll(ctx context.Context, jobs []chartJob, w timeRange) {
	h.eachQuery(ctx, len(jobs), func(qctx context.Context, i int) {
		j := jobs[i]
		*j.out = chartView{Title: j.title, Unit: j.unit, Plot: h.drawChart(qctx, j, w)}
	})
}

// drawChart evaluates one chart's query and lays its series out.
func (h *Handler) drawChart(ctx context.Context, j chartJob, w timeRange) plotView {
	step := max(time.Second, (w.To.Sub(w.From) / plotSteps).Truncate(time.Second))
	d := plotData{Query: j.query, From: w.From, To: w.To, Step: step, Limit: j.limit, LimitLabel: j.limitLabel}
	ss, err := h.rangeQuery(ctx, j.query, d)
	switch {
	case errors.Is(err, errLoading):
		return plotView{Query: j.query, Loading: true, Chart: true}
	case err != nil:
		return plotView{Query: j.query, Err: fmt.Sprintf("evaluate %s: %v", j.query, err), Chart: true}
	}
	names := seriesNames(ss, nil)
	for n, s := range ss {
		name := names[n]
		if name == "" && len(ss) == 1 { // nothing varies: say what it is
			var parts []string
			s.Metric.Range(func(l labels.Label) {
				if l.Name != model.MetricNameLabel {
					parts = append(parts, l.Name+"="+l.Value)
				}
			})
			name = strings.Join(parts, " ")
		}
		if name == "" {
			name = j.fallback
		}
		d.Faulty = append(d.Faulty, series{Name: name, Values: s.values})
	}
	slices.SortStableFunc(d.Faulty, func(a, b series) int { return naturalCompare(a.Name, b.Name) })
	d.More = max(0, len(d.Faulty)-maxLines)
	d.Faulty = d.Faulty[:min(maxLines, len(d.Faulty))]
	v := drawPlot(d)
	v.Chart = true
	return v
}

// count is one number of a page's answer, with the class that colours it
// (ok, warn, bad or none).
type count struct {
	Label string `json:"label"`
	N     string `json:"value"`
	Class string `json:"-"`
}

// Verdicts of a question page.
const (
	verdictHealthy   = "healthy"
	verdictUnhealthy = "unhealthy"
	verdictNoData    = "no data"
)

// fmtUnit writes v in unit: seconds as ms or s, a ratio as a percentage,
// a rate per second, or a plain number.
func fmtUnit(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	switch unit {
	case "s":
		if math.Abs(v) < 1 {
			return fmtNum(v*1000) + " ms"
		}
		return fmtNum(v) + " s"
	case "%":
		return fmtPercent(v)
	case "/s":
		return fmtNum(v) + "/s"
	}
	return fmtNum(v)
}

// fmtPercent writes a ratio as a percentage, keeping a decimal below 10 %
// and above 90 % where it matters (99.9 %, 0.5 %).
func fmtPercent(r float64) string {
	p := r * 100
	switch {
	case p == 0 || p == 100:
		return fmt.Sprintf("%.0f %%", p)
	case p < 10 || p > 90:
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", p), "0"), ".0") + " %"
	}
	return fmt.Sprintf("%.0f %%", p)
}

// sortedKeys returns m's keys, in natural order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(naturalCompare(a, b), strings.Compare(a, b)) })
	return out
}

// jsonNum is a number that marshals NaN and infinities as null, which
// JSON has no number for.
type jsonNum float64

// MarshalJSON implements json.Marshaler.
func (n jsonNum) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}
