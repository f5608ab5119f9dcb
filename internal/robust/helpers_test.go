package robust

import (
	"context"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

// collected is one series a run appended, staleness markers included.
type collected struct {
	lset    labels.Labels
	samples []sample
}

// collector is an in-memory storage.AppendableV2 that keeps every
// committed sample and checks that each series' samples come in time
// order.
type collector struct {
	t      *testing.T
	series map[uint64]*collected
	rounds int
}

func (c *collector) AppenderV2(context.Context) storage.AppenderV2 { return &collectorApp{c: c} }

type collectorApp struct {
	c       *collector
	pending []struct {
		lset labels.Labels
		s    sample
	}
}

func (a *collectorApp) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, _ *histogram.Histogram,
	_ *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	a.pending = append(a.pending, struct {
		lset labels.Labels
		s    sample
	}{ls, sample{t, v}})
	return 1, nil
}

func (a *collectorApp) Commit() error {
	for _, p := range a.pending {
		k := p.lset.Hash()
		s := a.c.series[k]
		if s == nil {
			s = &collected{lset: p.lset}
			a.c.series[k] = s
		}
		if n := len(s.samples); n > 0 {
			if p.s.t <= s.samples[n-1].t {
				require.Fail(a.c.t, "out of order", "%s", p.lset)
			}
		}
		s.samples = append(s.samples, p.s)
	}
	a.c.rounds++
	return nil
}

func (a *collectorApp) Rollback() error { return nil }

var _ storage.AppendableV2 = (*collector)(nil)

// run is one generated run, collected.
type run struct {
	t   *testing.T
	g   *Generator
	c   *collector
	cfg Config
}

// simulate generates a scenario into memory.
func simulate(t *testing.T, scenario string, cfg Config) *run {
	t.Helper()
	sc, err := ParseScenario(scenario)
	require.NoError(t, err)
	g, err := New(cfg, sc)
	require.NoError(t, err)
	c := &collector{t: t, series: map[uint64]*collected{}}
	require.NoError(t, g.Run(t.Context(), c, RunOptions{}))
	return &run{t: t, g: g, c: c, cfg: g.Config()}
}

// end is the run's last instant.
func (r *run) end() time.Time { return r.cfg.Start.Add(r.cfg.Duration) }

// find returns the series of a metric whose labels have the given values.
func (r *run) find(name string, match ...string) []*collected {
	var out []*collected
	for _, s := range r.c.series {
		if s.lset.Get(model.MetricNameLabel) != name {
			continue
		}
		ok := true
		for i := 0; i < len(match); i += 2 {
			ok = ok && s.lset.Get(match[i]) == match[i+1]
		}
		if ok {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].lset, out[j].lset) < 0 })
	return out
}

// one returns the single series find finds.
func (r *run) one(name string, match ...string) *collected {
	r.t.Helper()
	s := r.find(name, match...)
	require.Len(r.t, s, 1, "%s %v", name, match)
	return s[0]
}

// between returns the real (not stale) values in [from, to).
func (s *collected) between(from, to time.Time) []float64 {
	var out []float64
	for _, p := range s.samples {
		if p.t >= from.UnixMilli() && p.t < to.UnixMilli() && !value.IsStaleNaN(p.v) {
			out = append(out, p.v)
		}
	}
	return out
}

// last returns the last real value before t, and whether there is one.
func (s *collected) last(t time.Time) (float64, bool) {
	v, ok := 0.0, false
	for _, p := range s.samples {
		if p.t < t.UnixMilli() && !value.IsStaleNaN(p.v) {
			v, ok = p.v, true
		}
	}
	return v, ok
}

func mean(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

// gpuSeries returns a dcgm field's series of one GPU.
func (r *run) gpuSeries(field, node, gpu string) []*collected {
	var out []*collected
	for _, host := range []string{"Hostname", "hostname"} {
		out = append(out, r.find(field, host, node, "gpu", gpu)...)
	}
	return out
}

// gpuMean is the mean of a GPU's field over [from, to) across its series
// (an exporter restart may rename them).
func (r *run) gpuMean(field, node, gpu string, from, to time.Time) float64 {
	var vs []float64
	for _, s := range r.gpuSeries(field, node, gpu) {
		vs = append(vs, s.between(from, to)...)
	}
	return mean(vs)
}

// cluster draws the run's cluster again (the layout depends on the seed
// alone).
func (r *run) cluster() *cluster { return newCluster(r.cfg) }
