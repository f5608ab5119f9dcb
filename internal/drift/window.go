package drift

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// Store is what window comparisons read: a queryable store and its PromQL
// engine (the embedded store, or a remote Prometheus-compatible API).
type Store interface {
	storage.Queryable
	Engine() promql.QueryEngine
}

// Windows compares two windows of a classic histogram that a model server
// exports for a feature: the buckets' increases over the baseline window
// (ending where the current one starts) against those over the current
// window (ending at the evaluation time).
type Windows struct {
	// Metric is the histogram's name (without _bucket).
	Metric string
	// By are the labels whose values name a feature: one comparison per
	// combination (none: the whole histogram is one feature).
	By []string
	// Baseline and Current are the windows' lengths.
	Baseline, Current time.Duration
	// Method is a binned method (default psi); Threshold 0 is its default.
	Method    Method
	Threshold float64
}

// WindowResult is one feature's drift with the labels that name it.
type WindowResult struct {
	Result
	// Labels are the By labels' values of the feature.
	Labels map[string]string
}

// CompareWindows compares w's windows ending at at, one result per feature
// with observations in both windows, sorted by feature. A feature that one
// window lacks is left out and named in skipped.
func CompareWindows(ctx context.Context, st Store, w Windows, at time.Time) (_ []WindowResult, skipped []string, _ error) {
	base, err := HistogramCounts(ctx, st, w.Metric, w.By, w.Baseline, at.Add(-w.Current))
	if err != nil {
		return nil, nil, err
	}
	cur, err := HistogramCounts(ctx, st, w.Metric, w.By, w.Current, at)
	if err != nil {
		return nil, nil, err
	}
	var out []WindowResult
	for _, k := range sortedKeys(base, cur) {
		b, c := base[k], cur[k]
		if b == nil || c == nil {
			skipped = append(skipped, k)
			continue
		}
		ref, now := BucketCounts(b.Buckets, c.Buckets)
		r, err := CompareCounts(k, ref, now, w.Method, w.Threshold)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, WindowResult{Result: r, Labels: b.Labels})
	}
	return out, skipped, nil
}

// Histogram is one feature's cumulative buckets over a window.
type Histogram struct {
	// Labels are the By labels' values.
	Labels map[string]string
	// Buckets maps each upper bound to its cumulative count's increase.
	Buckets map[float64]float64
}

// HistogramCounts returns the increase of each cumulative bucket of a
// classic histogram over window ending at end, per feature (the by labels'
// values, named as FeatureName does) and upper bound.
func HistogramCounts(ctx context.Context, st Store, metric string, by []string, window time.Duration, end time.Time) (map[string]*Histogram, error) {
	group := strings.Join(append(slices.Clone(by), "le"), ", ")
	qs := fmt.Sprintf("sum by (%s) (increase(%s_bucket[%s]))", group, metric, model.Duration(window))
	q, err := st.Engine().NewInstantQuery(ctx, st, nil, qs, end)
	if err != nil {
		return nil, fmt.Errorf("drift: %s: %w", qs, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("drift: %s: %w", qs, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		return nil, fmt.Errorf("drift: %s: %w", qs, err)
	}
	out := map[string]*Histogram{}
	for _, s := range vec {
		le, err := strconv.ParseFloat(s.Metric.Get("le"), 64)
		if err != nil {
			continue
		}
		k := FeatureName(metric, s.Metric, by)
		h := out[k]
		if h == nil {
			h = &Histogram{Labels: map[string]string{}, Buckets: map[float64]float64{}}
			for _, l := range by {
				h.Labels[l] = s.Metric.Get(l)
			}
			out[k] = h
		}
		h.Buckets[le] += s.F
	}
	return out, nil
}

// FeatureName names a feature by the histogram and its by labels:
// metric{a="x", b="y"}, or the metric alone.
func FeatureName(metric string, lset labels.Labels, by []string) string {
	if len(by) == 0 {
		return metric
	}
	parts := make([]string, 0, len(by))
	for _, l := range by {
		parts = append(parts, fmt.Sprintf("%s=%q", l, lset.Get(l)))
	}
	return metric + "{" + strings.Join(parts, ", ") + "}"
}

// BucketCounts turns two windows' cumulative buckets into counts per
// bucket over the union of their upper bounds (a bucket one side lacks
// counts as the next one down).
func BucketCounts(base, cur map[float64]float64) (ref, now []float64) {
	var bounds []float64
	for le := range base {
		bounds = append(bounds, le)
	}
	for le := range cur {
		if _, ok := base[le]; !ok {
			bounds = append(bounds, le)
		}
	}
	slices.SortFunc(bounds, cmp.Compare[float64])
	per := func(cum map[float64]float64) []float64 {
		out := make([]float64, len(bounds))
		prev := 0.0
		for i, le := range bounds {
			c, ok := cum[le]
			if !ok {
				c = prev
			}
			out[i] = math.Max(0, c-prev)
			prev = math.Max(prev, c)
		}
		return out
	}
	return per(base), per(cur)
}

// sortedKeys returns the keys of both maps, sorted.
func sortedKeys[V any](a, b map[string]V) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
