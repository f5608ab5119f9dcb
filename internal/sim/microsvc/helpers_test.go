package microsvc

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

// collector is an in-memory storage.AppendableV2 that keeps every
// committed sample by series.
type collector struct {
	mu     sync.Mutex
	series map[string]*collected
	byRef  []*collected
	rounds int
}

type collected struct {
	ref  storage.SeriesRef
	lset labels.Labels
	t    []int64
	v    []float64
}

func newCollector() *collector { return &collector{series: map[string]*collected{}} }

func (c *collector) AppenderV2(context.Context) storage.AppenderV2 { return &collectorApp{c: c} }

type pending struct {
	ref storage.SeriesRef
	t   int64
	v   float64
}

type collectorApp struct {
	c *collector
	p []pending
}

// Append keeps the sample until Commit; a series' ref is its index + 1.
func (a *collectorApp) Append(ref storage.SeriesRef, ls labels.Labels, _, t int64, v float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if ref == 0 {
		k := ls.String()
		s := a.c.series[k]
		if s == nil {
			s = &collected{lset: ls}
			a.c.series[k] = s
			a.c.byRef = append(a.c.byRef, s)
			s.ref = storage.SeriesRef(len(a.c.byRef))
		}
		ref = s.ref
	}
	a.p = append(a.p, pending{ref: ref, t: t, v: v})
	return ref, nil
}

func (a *collectorApp) Commit() error {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	for _, p := range a.p {
		s := a.c.byRef[p.ref-1]
		s.t = append(s.t, p.t)
		s.v = append(s.v, p.v)
	}
	a.c.rounds++
	a.p = nil
	return nil
}

func (a *collectorApp) Rollback() error { a.p = nil; return nil }

var _ storage.AppendableV2 = (*collector)(nil)

// run is one generated run, collected through Run.
type run struct {
	gen *Generator
	c   *collector
}

func generate(t testing.TB, cfg Config, f FaultSpec) *run {
	t.Helper()
	g, err := New(cfg, f)
	require.NoError(t, err)
	c := newCollector()
	require.NoError(t, g.Run(context.Background(), c, RunOptions{}))
	return &run{gen: g, c: c}
}

// one returns the values of the series of metric name whose labels
// include match, requiring exactly one.
func (r *run) one(t testing.TB, name string, match ...string) []float64 {
	t.Helper()
	var found []*collected
	for _, s := range r.c.series {
		if s.lset.Get("__name__") != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			ok = ok && s.lset.Get(match[i]) == match[i+1]
		}
		if ok {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "%s %v", name, match)
	return found[0].v
}

// rate is a counter's per-second increase between consecutive samples,
// a reset read as a start from zero (PromQL's irate); it has one value
// fewer than the counter.
func rate(v []float64, step time.Duration) []float64 {
	out := make([]float64, len(v)-1)
	for i := 1; i < len(v); i++ {
		d := v[i] - v[i-1]
		if d < 0 {
			d = v[i]
		}
		out[i-1] = d / step.Seconds()
	}
	return out
}

// metric returns a service's metric that a fault kind moves, one value
// per scrape after the first: the CPU in cores, the working set, the mean
// latency (prometheus style) or the median latency (rcaeval style).
func (r *run) metric(t testing.TB, kind, svc string) []float64 {
	t.Helper()
	cfg := r.gen.Config()
	if cfg.Style == StyleRCAEval {
		var v []float64
		switch kind {
		case FaultCPU:
			v = r.one(t, "cpu", "service", svc)
		case FaultMemory:
			v = r.one(t, "mem", "service", svc)
		default:
			v = r.one(t, "latency", "service", svc, "quantile", "0.5")
		}
		return v[1:]
	}
	switch kind {
	case FaultCPU:
		return rate(r.one(t, "container_cpu_usage_seconds_total", "service", svc), cfg.Step)
	case FaultMemory:
		return r.one(t, "container_memory_working_set_bytes", "service", svc)[1:]
	}
	sum := rate(r.one(t, "http_server_request_duration_seconds_sum", "service", svc), cfg.Step)
	count := rate(r.one(t, "http_server_request_duration_seconds_count", "service", svc), cfg.Step)
	out := make([]float64, len(sum))
	for i := range sum {
		out[i] = sum[i] / count[i]
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantile(s, 0.5)
}

func scaleOf(xs []float64) float64 { return robustScale(slices.Clone(xs)) }

// deviation is how far the median of xs from index split on lies from
// the median before it, in robust scales of the part before it.
func deviation(xs []float64, split int) float64 {
	pre, post := xs[:split], xs[split:]
	return (median(post) - median(pre)) / math.Max(scaleOf(pre), 1e-12)
}

// onsetIndex is the index of the fault's onset in a metric's values
// (which start at the second scrape).
func (r *run) onsetIndex() int {
	cfg := r.gen.Config()
	return int(r.gen.Truth()[0].Onset.Sub(cfg.Start)/cfg.Step) - 1
}
