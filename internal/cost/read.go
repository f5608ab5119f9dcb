package cost

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/topology"
)

// Source is what Compute reads: a queryable store and its PromQL engine
// (topology.Source). Compute reads raw samples in (From, To] and instant
// queries at To; nothing after To.
type Source interface {
	storage.Queryable
	Engine() promql.QueryEngine
}

// eachSeries selects the raw float samples of metric (with the extra
// matchers) in (mint, maxt] and calls fn with each series' labels and its
// samples, skipping staleness markers and DCGM's blank sentinels.
func eachSeries(ctx context.Context, src Source, mint, maxt int64, metric string, extra []*labels.Matcher, fn func(lset labels.Labels, ts []int64, vs []float64)) error {
	q, err := src.Querier(mint+1, maxt)
	if err != nil {
		return fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	ms := append([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, metric)}, extra...)
	set := q.Select(ctx, false, &storage.SelectHints{Start: mint + 1, End: maxt}, ms...)
	var it chunkenc.Iterator
	var ts []int64
	var vs []float64
	for set.Next() {
		s := set.At()
		it = s.Iterator(it)
		ts, vs = ts[:0], vs[:0]
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			if typ != chunkenc.ValFloat {
				continue
			}
			t, v := it.At()
			if t <= mint || t > maxt || value.IsStaleNaN(v) || math.IsNaN(v) || catalog.IsBlank(v) {
				continue
			}
			ts, vs = append(ts, t), append(vs, v)
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("read %s: %w", metric, err)
		}
		if len(ts) > 0 {
			fn(s.Labels(), ts, vs)
		}
	}
	if err := set.Err(); err != nil {
		return fmt.Errorf("select %s: %w", metric, err)
	}
	return nil
}

// instant runs qs at at with selectors looking back over lookback and calls
// fn for each sample of the vector; a warning of the store is an error.
func instant(ctx context.Context, src Source, qs string, at time.Time, lookback time.Duration, fn func(lset labels.Labels, v float64)) error {
	warns, err := topology.EachSample(ctx, src, qs, at, lookback, fn)
	if err == nil && len(warns) > 0 {
		err = fmt.Errorf("query %s: %w", qs, warns[0])
	}
	return err
}

// metricNames lists the metric names with a sample in (mint, maxt].
func metricNames(ctx context.Context, src Source, mint, maxt int64) (catalog.MetricSet, error) {
	q, err := src.Querier(mint+1, maxt)
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

// estimateInterval is the median spacing of the samples of metric in the
// hour before maxt, over at most 64 series of GPU 0 (a sample of the
// cluster, not all of it), else of any GPU; 0 when it cannot tell.
func estimateInterval(ctx context.Context, src Source, metric string, maxt int64) (time.Duration, error) {
	for _, ms := range [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "gpu", "0")}, nil} {
		d, err := medianSpacing(ctx, src, metric, maxt, ms)
		if err != nil || d > 0 {
			return d, err
		}
	}
	return 0, nil
}

func medianSpacing(ctx context.Context, src Source, metric string, maxt int64, ms []*labels.Matcher) (time.Duration, error) {
	var deltas []int64
	n := 0
	err := eachSeries(ctx, src, maxt-time.Hour.Milliseconds(), maxt, metric, ms, func(_ labels.Labels, ts []int64, _ []float64) {
		if n >= 64 {
			return
		}
		n++
		for i := 1; i < len(ts); i++ {
			deltas = append(deltas, ts[i]-ts[i-1])
		}
	})
	if err != nil || len(deltas) == 0 {
		return 0, err
	}
	slices.Sort(deltas)
	return time.Duration(deltas[len(deltas)/2]) * time.Millisecond, nil
}

// ksmLabel reads a kube-state-metrics label; scraped without honor_labels
// the original is under exported_NAME, which wins.
func ksmLabel(lset labels.Labels, name string) string {
	if v := lset.Get("exported_" + name); v != "" {
		return v
	}
	return lset.Get(name)
}
