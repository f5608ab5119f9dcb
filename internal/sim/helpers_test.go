package sim

import (
	"bytes"
	"context"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/store"
)

// run is one simulated run, written as OpenMetrics and loaded into an
// embedded store through fileimport, the path `vigil diagnose --input`
// takes.
type run struct {
	sim   *Simulator
	om    []byte
	store store.Store
}

// simulate runs a scenario for dur with seed and loads its output.
func simulate(t testing.TB, name string, seed uint64, dur time.Duration) *run {
	t.Helper()
	sc, err := ParseScenario(name)
	require.NoError(t, err)
	return simulateScenario(t, Config{Seed: seed, Duration: dur}, sc)
}

func simulateScenario(t testing.TB, cfg Config, sc Scenario) *run {
	t.Helper()
	s, err := New(cfg, sc)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, s.WriteOpenMetrics(context.Background(), &buf))
	f, err := fileimport.Read("metrics.om", bytes.NewReader(buf.Bytes()), fileimport.DefaultOptions(s.Config().Start))
	require.NoError(t, err)
	end := s.Config().Start.Add(s.Config().Duration)
	st, err := fileimport.OpenTemp(context.Background(), []*fileimport.File{f}, func() time.Time { return end }, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return &run{sim: s, om: buf.Bytes(), store: st}
}

// end is the time of the run's last scrape.
func (r *run) end() time.Time { c := r.sim.Config(); return c.Start.Add(c.Duration) }

// instant evaluates q at at and returns the result by the value of label.
func (r *run) instant(t testing.TB, q string, at time.Time, label string) map[string]float64 {
	t.Helper()
	v, _, err := store.Query(context.Background(), r.store, q, at)
	require.NoError(t, err, q)
	out := map[string]float64{}
	for _, s := range v.(promql.Vector) {
		out[s.Metric.Get(label)] = s.F
	}
	return out
}

// series evaluates q over the whole run at step and returns each series'
// points by the value of label.
func (r *run) series(t testing.TB, q string, step time.Duration, label string) map[string][]promql.FPoint {
	t.Helper()
	c := r.sim.Config()
	v, _, err := store.QueryRange(context.Background(), r.store, q, c.Start, r.end(), step)
	require.NoError(t, err, q)
	out := map[string][]promql.FPoint{}
	for _, s := range v.(promql.Matrix) {
		out[s.Metric.Get(label)] = s.Floats
	}
	return out
}

// keys returns a map's keys, sorted.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// testLabels pins the label variants so that test queries can name labels;
// TestTopologyOfSimulation covers the others.
var testLabels = Labels{DCGMHost: HostnameUpper, DCGMPod: PodLabelsNew, NVLinkType: NVLinkGauge, NodeInstance: InstanceName,
	XIDCount: On, NVLinkErrors: On, KSM: KSMHonored, DCGMBlank: BlankAbsent, VLLM: VLLMNew}

// Timing of the fault tests: a 14-minute run with the onset at 7 minutes.
const (
	faultRun   = 14 * time.Minute
	faultAfter = 7 * time.Minute
)

// simulateRun runs a scenario (every fault's onset at faultAfter) for
// faultRun, or dur if set, into an embedded store through Run.
func simulateRun(t testing.TB, name string, seed uint64, dur time.Duration) *run {
	t.Helper()
	sc, err := ParseScenario(name)
	require.NoError(t, err)
	for i := range sc.Faults {
		sc.Faults[i].After = faultAfter
	}
	if dur == 0 {
		dur = faultRun
	}
	s, err := New(Config{Seed: seed, Duration: dur, Labels: testLabels}, sc)
	require.NoError(t, err)
	clock := NewClock(s.Config().Start)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clock.Now, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, s.Run(context.Background(), st, RunOptions{Clock: clock}))
	return &run{sim: s, store: st}
}

// truth is the run's only fault.
func (r *run) truth(t testing.TB) Fault {
	t.Helper()
	f := r.sim.Truth()
	require.Len(t, f, 1)
	return f[0]
}

// gpuSeries evaluates q (a per-GPU dcgm-exporter expression) over the run
// at the DCGM interval and returns each GPU's points by "node/gpu".
func (r *run) gpuSeries(t testing.TB, q string) map[string][]promql.FPoint {
	t.Helper()
	c := r.sim.Config()
	v, _, err := store.QueryRange(context.Background(), r.store, q, c.Start, r.end(), c.DCGMInterval)
	require.NoError(t, err, q)
	out := map[string][]promql.FPoint{}
	for _, s := range v.(promql.Matrix) {
		out[s.Metric.Get("Hostname")+"/"+s.Metric.Get("gpu")] = s.Floats
	}
	return out
}

// value evaluates a query that gives one number at at.
func (r *run) value(t testing.TB, q string, at time.Time) float64 {
	t.Helper()
	v, _, err := store.Query(context.Background(), r.store, q, at)
	require.NoError(t, err, q)
	vec := v.(promql.Vector)
	require.Len(t, vec, 1, "%s at %s: %v", q, at, vec)
	return vec[0].F
}

// empty reports whether q has no result at at.
func (r *run) empty(t testing.TB, q string, at time.Time) bool {
	t.Helper()
	v, _, err := store.Query(context.Background(), r.store, q, at)
	require.NoError(t, err, q)
	return len(v.(promql.Vector)) == 0
}

// meanBetween is the mean of the points in [from, to].
func meanBetween(pts []promql.FPoint, from, to time.Time) float64 {
	sum, n := 0.0, 0
	for _, p := range pts {
		if p.T >= from.UnixMilli() && p.T <= to.UnixMilli() {
			sum += p.F
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// firstBelow is the time of the first point at or after from below v, or
// the zero time.
func firstBelow(pts []promql.FPoint, from time.Time, v float64) time.Time {
	for _, p := range pts {
		if p.T >= from.UnixMilli() && p.F < v {
			return time.UnixMilli(p.T).UTC()
		}
	}
	return time.Time{}
}

// c rebuilds the run's cluster (its static shape: specs and names).
func (s *Simulator) c() *cluster { return newCluster(s.cfg) }
