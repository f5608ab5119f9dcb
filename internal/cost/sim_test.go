package cost_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/sim"
)

// grCapture keeps every DCGM_FI_PROF_GR_ENGINE_ACTIVE sample the simulator
// appends: the test's own record of what each GPU did.
type grCapture struct {
	samples []grSample
}

type grSample struct {
	pod string
	t   int64
	v   float64
}

func (c *grCapture) AppenderV2(context.Context) storage.AppenderV2 { return c }

func (c *grCapture) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	if ls.Get("__name__") == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" {
		pod := ls.Get("pod")
		if ls.Get("exported_pod") != "" {
			pod = ls.Get("exported_pod")
		}
		c.samples = append(c.samples, grSample{pod: pod, t: t, v: v})
	}
	return 1, nil
}

func (c *grCapture) Commit() error   { return nil }
func (c *grCapture) Rollback() error { return nil }

// TestSimulatedCluster checks the simulator's healthy cluster against its
// ground truth, computed here and not by the package: 10 nodes of 8 H100s
// (80 GPUs), the 8-node training job holding 64, the vLLM deployment 4 × 2
// = 8 and the notebook 1, so 73 allocated and 7 free, all of the run; at
// 3.00 an hour, 240.00 an hour in all, 219.00 allocated, 21.00 unallocated.
// The used hours are the test's own sum of every attributed GPU's
// GR_ENGINE_ACTIVE samples times the 30 s interval, from what the
// simulator appended.
func TestSimulatedCluster(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Duration = 30 * time.Minute
	sc, err := sim.ParseScenario(sim.Healthy)
	require.NoError(t, err)
	s, err := sim.New(cfg, sc)
	require.NoError(t, err)
	cfg = s.Config()
	require.Equal(t, 30*time.Second, cfg.DCGMInterval)

	capture := &grCapture{}
	require.NoError(t, s.Run(t.Context(), capture, sim.RunOptions{}))
	var buf bytes.Buffer
	require.NoError(t, s.WriteOpenMetrics(t.Context(), &buf))
	path := filepath.Join(t.TempDir(), "sim.om")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))

	// The range: the DCGM rounds after the first, so that each counts
	// one 30 s step.
	var first, last int64 = 1 << 62, 0
	for _, smp := range capture.samples {
		first, last = min(first, smp.t), max(last, smp.t)
	}
	from, to := time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
	steps := to.Sub(from) / cfg.DCGMInterval
	hours := (time.Duration(steps) * cfg.DCGMInterval).Hours()

	gpus := cfg.Nodes * cfg.GPUsPerNode
	held := cfg.TrainingNodes*cfg.GPUsPerNode + cfg.Replicas*cfg.GPUsPerReplica + 1
	require.Equal(t, 80, gpus)
	require.Equal(t, 73, held)
	used := 0.0
	for _, smp := range capture.samples {
		if smp.t > first && smp.pod != "" {
			used += smp.v * cfg.DCGMInterval.Hours()
		}
	}

	p, err := cost.ParsePrices("p.yaml", []byte("currency: USD\ngpu_hourly: {default: 3.0}\n"))
	require.NoError(t, err)
	rep, err := cost.Compute(t.Context(), openFiles(t, path), cost.Options{From: from, To: to, Prices: p, By: cost.ByWorkload})
	require.NoError(t, err)
	require.Equal(t, cfg.DCGMInterval, rep.Step)
	require.InDelta(t, float64(gpus)*hours, rep.GPUHours.Available, 1e-6)
	require.InDelta(t, float64(held)*hours, rep.GPUHours.Allocated, 1e-6)
	require.InDelta(t, used, rep.GPUHours.Used, 1e-6)
	require.InDelta(t, 3*float64(gpus)*hours, rep.Cost.Total, cent)
	require.InDelta(t, 3*float64(held)*hours, rep.Cost.Allocated, cent)
	require.InDelta(t, 3*float64(gpus-held)*hours, rep.Cost.Unallocated, cent)
	require.InDelta(t, 3*(float64(held)*hours-used), rep.Cost.Idle, cent)

	byWorkload := map[string]cost.Row{}
	for _, r := range rep.By {
		byWorkload[r.Entity["namespace"]+"/"+firstNonEmpty(r.Entity["workload"], r.Entity["pod"])] = r
	}
	train := byWorkload[sim.TrainingNamespace+"/llm-pretrain"]
	require.InDelta(t, float64(cfg.TrainingNodes*cfg.GPUsPerNode), train.GPUs, 1e-9, "rows: %v", keys(byWorkload))
	require.InDelta(t, 3*float64(cfg.TrainingNodes*cfg.GPUsPerNode)*hours, train.Cost, cent)
	nb := byWorkload[sim.NotebookNamespace+"/notebook"] // the StatefulSet of notebook-0
	require.InDelta(t, 1, nb.GPUs, 1e-9, "rows: %v", keys(byWorkload))
	require.InDelta(t, 3*hours, nb.Cost, cent)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
