package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/drift"
	"github.com/vigil-obs/vigil/internal/topology"
)

// runDriftMetric compares two windows of a histogram a model server
// exports for a feature: the buckets' increases over the baseline window
// (ending where the current one starts) against those over the current
// window (ending at --at), one feature per value of the --by labels.
func runDriftMetric(cmd *cobra.Command, e *env, f driftFlags) error {
	switch {
	case f.baseline != "" || f.current != "":
		return usagef("drift: --metric reads a store: give --input, --prometheus or --server, not --baseline and --current")
	case f.count() != 1:
		return usagef("drift: --metric needs exactly one of --input FILE, --prometheus URL or --server URL")
	case f.baseWindow <= 0 || f.curWindow <= 0:
		return usagef("drift: --baseline-window and --current-window must be positive")
	case !model.LegacyValidation.IsValidMetricName(f.metric):
		return usagef("drift: --metric %q is not a metric name", f.metric)
	}
	for _, l := range f.by {
		if !model.LegacyValidation.IsValidLabelName(l) || l == "le" {
			return usagef("drift: --by %q is not a label that can split a histogram", l)
		}
	}
	m, err := drift.ParseMethod(f.method)
	if err != nil {
		return usagef("drift: --method: %v", strings.TrimPrefix(err.Error(), drift.ErrInput.Error()+": "))
	}
	if f.push != "" && f.model == "" {
		return usagef("drift: --push needs --model NAME (the model the features belong to)")
	}
	var at time.Time
	if f.at != "" {
		if at, err = parseTime(f.at); err != nil {
			return usagef("drift: --at: %v", err)
		}
	}
	ctx := cmd.Context()
	src, at, closeSrc, err := openSource(ctx, e, "drift", f.sourceFlags, at, e.loggerAtLeast(slog.LevelWarn).With("component", "drift"))
	if err != nil {
		return err
	}
	defer closeSrc()
	read := func(window time.Duration, end time.Time) (map[string]map[float64]float64, error) {
		return histogramCounts(cmd, src, f.metric, f.by, window, end)
	}
	base, err := read(f.baseWindow, at.Add(-f.curWindow))
	if err != nil {
		return err
	}
	cur, err := read(f.curWindow, at)
	if err != nil {
		return err
	}
	if len(base) == 0 && len(cur) == 0 {
		return usagef("drift: no series of %s_bucket in the windows before %s", f.metric, at.UTC().Format(time.RFC3339))
	}
	rep := &drift.Report{Features: []drift.Result{}}
	for _, k := range sortedKeys(base, cur) {
		ref, now := bucketCounts(base[k], cur[k])
		r, err := drift.CompareCounts(k, ref, now, m, f.threshold)
		if err != nil {
			return usagef("drift: %s", strings.ReplaceAll(err.Error(), drift.ErrInput.Error()+": ", ""))
		}
		rep.Features = append(rep.Features, r)
		rep.Total++
		if r.Drift {
			rep.Drifted++
		}
	}
	return writeDrift(e, f, rep)
}

// histogramCounts returns the increase of each cumulative bucket of a
// classic histogram over window ending at end, per feature (the --by
// labels' values) and upper bound.
func histogramCounts(cmd *cobra.Command, src topology.Source, metric string, by []string, window time.Duration, end time.Time) (map[string]map[float64]float64, error) {
	group := strings.Join(append(slices.Clone(by), "le"), ", ")
	qs := fmt.Sprintf("sum by (%s) (increase(%s_bucket[%s]))", group, metric, model.Duration(window))
	q, err := src.Engine().NewInstantQuery(cmd.Context(), src, nil, qs, end)
	if err != nil {
		return nil, fmt.Errorf("drift: %s: %w", qs, err)
	}
	defer q.Close()
	res := q.Exec(cmd.Context())
	if res.Err != nil {
		return nil, fmt.Errorf("drift: %s: %w", qs, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		return nil, fmt.Errorf("drift: %s: %w", qs, err)
	}
	out := map[string]map[float64]float64{}
	for _, s := range vec {
		le, err := strconv.ParseFloat(s.Metric.Get("le"), 64)
		if err != nil {
			continue
		}
		k := featureName(metric, s.Metric, by)
		if out[k] == nil {
			out[k] = map[float64]float64{}
		}
		out[k][le] += s.F
	}
	return out, nil
}

// featureName names a feature by the histogram and its --by labels.
func featureName(metric string, lset labels.Labels, by []string) string {
	if len(by) == 0 {
		return metric
	}
	parts := make([]string, 0, len(by))
	for _, l := range by {
		parts = append(parts, fmt.Sprintf("%s=%q", l, lset.Get(l)))
	}
	return metric + "{" + strings.Join(parts, ", ") + "}"
}

// bucketCounts turns two windows' cumulative buckets into counts per bucket
// over the union of their upper bounds (a bucket one side lacks counts as
// the next one down).
func bucketCounts(base, cur map[float64]float64) (ref, now []float64) {
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
