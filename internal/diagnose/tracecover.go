package diagnose

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// The series derived from spans (the span metrics and the service graph)
// are read only where spans were: their writer (the connectors, Vigil's
// own or a Collector's) appends every series' running total at each
// flush while it runs, whether or not a service had calls, so a stretch
// where no calls series of any service has a sample is a stretch the
// traces do not cover (a pipeline that was down, a data set that keeps
// spans only around its faults, spans read from a file that ends), not
// one where every service stopped being called. Without this, the last
// totals held over the lookback read as every service's calls falling to
// zero at once where the traces end.

// traceDerived tells whether a metric is derived from spans.
func traceDerived(metric string) bool {
	return strings.HasPrefix(metric, "traces_span_metrics_") || strings.HasPrefix(metric, "traces_service_graph_")
}

// traceCoverage marks the steps the traces cover: a step with a sample
// of a calls series (traces_span_metrics_calls_total or
// traces_service_graph_request_total) in (t-step, t], and a single step
// without one between two that have one (a flush that came a moment
// late). It is nil when the view has no such series.
func (v *view) traceCoverage(ctx context.Context) ([]bool, error) {
	var names []string
	for _, m := range []string{spanCalls, graphRequests} {
		if v.have.Has(m) {
			names = append(names, m)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	q, err := v.src.Querier(v.start.Add(-v.step).UnixMilli(), v.at.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	fresh := make([]bool, v.n)
	stepMs, base := v.step.Milliseconds(), v.start.UnixMilli()
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, strings.Join(names, "|")))
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue
			}
			t, f := it.At()
			if value.IsStaleNaN(f) {
				continue
			}
			// The step whose (t_i - step, t_i] holds t.
			if i := int(ceilDivMs(t-base, stepMs)); i >= 0 && i < v.n {
				fresh[i] = true
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("read the traces' calls: %w", err)
		}
	}
	if err := ss.Err(); err != nil {
		return nil, fmt.Errorf("select the traces' calls: %w", err)
	}
	return coveredSteps(fresh), nil
}

// coveredSteps is fresh with each single missing step between two fresh
// ones filled in: two or more missing steps running are a gap.
func coveredSteps(fresh []bool) []bool {
	out := make([]bool, len(fresh))
	for i, f := range fresh {
		out[i] = f || i > 0 && i+1 < len(fresh) && fresh[i-1] && fresh[i+1]
	}
	return out
}

// blankUncovered sets the steps the traces do not cover to NaN in the
// series of a span-derived metric (traceCoverage). A view without
// coverage (no calls series) leaves them as they are.
func (v *view) blankUncovered(ctx context.Context, out []rawSeries) error {
	cover, err := v.traceCover(ctx)
	if err != nil || cover == nil {
		return err
	}
	for _, r := range out {
		if !traceDerived(r.lset.Get(model.MetricNameLabel)) {
			continue
		}
		for i, ok := range cover {
			if !ok {
				r.v[i] = math.NaN()
			}
		}
	}
	return nil
}

// traceCover is traceCoverage, computed once per view.
func (v *view) traceCover(ctx context.Context) ([]bool, error) {
	v.mu.Lock()
	done, cover := v.coverDone, v.cover
	v.mu.Unlock()
	if done {
		return cover, nil
	}
	cover, err := v.traceCoverage(ctx)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.cover, v.coverDone = cover, true
	v.mu.Unlock()
	return cover, nil
}
