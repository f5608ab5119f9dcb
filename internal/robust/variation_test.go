package robust

import (
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"
)

// healthyRuns are the runs the variation tests look at.
func healthyRuns(t *testing.T) []*run {
	var out []*run
	for seed := range uint64(14) {
		out = append(out, simulate(t, HealthyScenario, small(2_000_100+seed)))
	}
	return out
}

func TestHealthyVariation(t *testing.T) {
	runs := healthyRuns(t)
	var ckptLens []time.Duration
	appXIDs, missed, resets, prometheusGaps := 0, 0, 0, 0
	for _, r := range runs {
		c := r.cluster()
		name := strconv.FormatUint(r.cfg.Seed, 10)

		// Temperatures of the training GPUs under load, at one instant,
		// spread across at least 10 °C.
		j := c.job
		at := r.loadedInstant(j)
		var temps []float64
		for _, p := range j.pods {
			for _, g := range p.gpus {
				temps = append(temps, r.gpuMean("DCGM_FI_DEV_GPU_TEMP", p.node.name, strconv.Itoa(g.idx), at.Add(-time.Minute), at))
			}
		}
		require.GreaterOrEqual(t, slices.Max(temps)-slices.Min(temps), 10.0, "seed %s: temperatures %v", name, temps)
		for _, s := range r.find("DCGM_FI_DEV_GPU_TEMP") {
			for _, v := range s.between(r.cfg.Start, r.end()) {
				require.Equal(t, math.Round(v), v, "whole degrees")
			}
		}

		// Every checkpoint pauses every rank together, and they recover.
		for _, s := range r.checkpoints() {
			ckptLens = append(ckptLens, s.to.Sub(s.from))
			every := r.dcgmInterval()
			if s.to.Sub(s.from) < 4*every {
				continue
			}
			mid := s.from.Add(s.to.Sub(s.from) / 2)
			during := r.jobMean("DCGM_FI_DEV_GPU_UTIL", j, mid, mid.Add(every))
			after := r.jobMean("DCGM_FI_DEV_GPU_UTIL", j, s.to.Add(time.Minute), s.to.Add(2*time.Minute))
			if math.IsNaN(during) || math.IsNaN(after) {
				continue // a scrape gap there
			}
			require.Less(t, during, 20.0, "seed %s: checkpoint at %s", name, s.from)
			require.Greater(t, after, 85.0, "seed %s: recovery after the checkpoint at %s", name, s.from)
		}

		// Application XIDs, missed scrapes, counter resets, gaps: each
		// where the run drew it.
		w, err := newWorld(r.cfg, Scenario{}, false)
		require.NoError(t, err)
		v := w.var_
		app := false
		for _, s := range r.find("DCGM_FI_DEV_XID_ERRORS") {
			app = app || slices.ContainsFunc(s.changes(), func(x float64) bool { return slices.Contains([]float64{13, 31, 43, 45}, x) })
		}
		require.Equal(t, v.notebookXIDs || v.rollout && app, app, "seed %s: application XIDs", name)
		if app {
			appXIDs++
		}
		if v.replays {
			require.True(t, r.rises("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"), "seed %s: a replay", name)
		}
		if v.remaps {
			require.True(t, r.rises("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"), "seed %s: a correctable remap", name)
		}
		for _, s := range r.find("up") {
			if slices.Contains(s.between(r.cfg.Start, r.end()), 0) {
				missed++
				break
			}
		}
		reset := false
		for _, s := range r.c.series {
			reset = reset || r.isCounter(s.lset.Get(model.MetricNameLabel)) && s.decreases()
		}
		require.Equal(t, v.replicaRestart || v.driverReload, reset, "seed %s: counter resets", name)
		if reset {
			resets++
		}
		require.Equal(t, len(v.promGaps) > 0, r.hasGap(), "seed %s: Prometheus restarts", name)
		if r.hasGap() {
			prometheusGaps++
		}
	}
	require.NotEmpty(t, ckptLens)
	require.Less(t, slices.Min(ckptLens), 90*time.Second, "short checkpoints")
	require.Greater(t, slices.Max(ckptLens), 4*time.Minute, "long checkpoints")
	require.Positive(t, appXIDs, "an application XID in some run")
	require.Positive(t, missed, "a failed scrape in some run")
	require.Positive(t, resets, "a counter reset in some run")
	require.Positive(t, prometheusGaps, "a gap in every series in some run")
	require.Less(t, appXIDs, len(runs), "not in every run")
}

// loadedInstant is an instant at which the job trains (no checkpoint in
// the minute before).
func (r *run) loadedInstant(j *trainJob) time.Time {
	at := r.end().Add(-30 * time.Second)
	for _, s := range r.checkpoints() {
		if !s.from.After(at) && s.to.Add(2*time.Minute).After(at) {
			at = s.from.Add(-30 * time.Second)
		}
	}
	return at
}

// checkpoints are the run's checkpoints.
func (r *run) checkpoints() []span {
	w, err := newWorld(r.cfg, r.g.sc, false)
	require.NoError(r.t, err)
	return w.c.job.checkpoints
}

// dcgmInterval is the run's dcgm-exporter scrape interval.
func (r *run) dcgmInterval() time.Duration {
	w, err := newWorld(r.cfg, r.g.sc, false)
	require.NoError(r.t, err)
	return max(w.dcgmEvery, w.dcgmCollect)
}

// jobMean is a field's mean over the job's GPUs in [from, to).
func (r *run) jobMean(field string, j *trainJob, from, to time.Time) float64 {
	var vs []float64
	for _, p := range j.pods {
		for _, g := range p.gpus {
			for _, s := range r.gpuSeries(field, p.node.name, strconv.Itoa(g.idx)) {
				vs = append(vs, s.between(from, to)...)
			}
		}
	}
	return mean(vs)
}

// rises tells whether some series of a metric rises within the run.
func (r *run) rises(name string) bool {
	for _, s := range r.find(name) {
		if vs := s.between(r.cfg.Start, r.end()); len(vs) > 1 && slices.Max(vs) > vs[0] {
			return true
		}
	}
	return false
}

// changes are the values a series changes to.
func (s *collected) changes() []float64 {
	var out []float64
	prev := math.NaN()
	for i, p := range s.samples {
		if value.IsStaleNaN(p.v) {
			continue
		}
		if i > 0 && p.v != prev {
			out = append(out, p.v)
		}
		prev = p.v
	}
	return out
}

// decreases tells whether a series ever falls (a counter reset).
func (s *collected) decreases() bool {
	prev := math.Inf(-1)
	for _, p := range s.samples {
		if value.IsStaleNaN(p.v) {
			continue
		}
		if p.v < prev {
			return true
		}
		prev = p.v
	}
	return false
}

// isCounter tells whether a metric is a monotonic counter (the exporters'
// counter-typed readings excepted: PCIe throughput and NVLink bandwidth
// are rates).
func (r *run) isCounter(name string) bool {
	switch name {
	case "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "vllm:generation_tokens_total",
		"vllm:prompt_tokens_total", "vllm:e2e_request_latency_seconds_count", "node_cpu_seconds_total":
		return true
	}
	return false
}

// hasGap tells whether a target's up misses a scrape: Prometheus was
// down (a failed scrape still records up 0).
func (r *run) hasGap() bool {
	for _, s := range r.find("up") {
		var ts []int64
		for _, p := range s.samples {
			if !value.IsStaleNaN(p.v) {
				ts = append(ts, p.t)
			}
		}
		every := int64(math.MaxInt64)
		for i := 1; i < len(ts); i++ {
			every = min(every, ts[i]-ts[i-1])
		}
		for i := 1; i < len(ts); i++ {
			if ts[i]-ts[i-1] > 3*every/2 {
				return true
			}
		}
	}
	return false
}
