package server

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/cost/costtest"
	"github.com/vigil-obs/vigil/internal/diagnose"
)

// TestCostRecorder records internal/cost's hand-computed hour (its
// cost_test.go gives the figures) and reads the series back; then a
// gpu_idle finding on research/nb-0 gets its cost per day: 3/7 of a GPU
// at 2.00 an hour, 50% active, is 3/7 × 2 × 0.5 × 24 = 10.29 a day.
func TestCostRecorder(t *testing.T) {
	st := costtest.HandStore(t)
	cfg := config.Default()
	cfg.Cost = cost.DefaultConfig()
	cfg.Cost.Window = time.Hour
	cfg.Cost.Currency = "USD"
	cfg.Cost.GPUHourly = map[string]float64{"NVIDIA A100-SXM4-80GB": 2.5, "NVIDIA H100 80GB HBM3": 4, "default": 2}
	cfg.Cost.NodeOverrides = []cost.NodeOverride{{Match: map[string]string{"node.kubernetes.io/instance-type": "spot-h100"}, GPUHourly: 1.1}}
	require.NoError(t, cfg.Validate())
	out := &capture{}
	rec, err := newCostRecorder(cfg, st, out, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	at := time.Unix(1800003600, 0).UTC()
	require.NoError(t, rec.task()(t.Context(), at))

	// value sums the samples of the series whose labels include kv.
	value := func(kv ...string) float64 {
		t.Helper()
		sum, n := 0.0, 0
		for _, smp := range out.samples {
			ok := smp.t == at.UnixMilli()
			for i := 0; i+1 < len(kv); i += 2 {
				ok = ok && smp.ls.Get(kv[i]) == kv[i+1]
			}
			if ok {
				sum, n = sum+smp.v, n+1
			}
		}
		require.Positive(t, n, "no series with %v", kv)
		return sum
	}
	require.True(t, out.committed)
	require.InDelta(t, 13.10, value("__name__", "vigil_gpu_cost_hourly", "currency", "USD"), 0.005)
	require.InDelta(t, 8.571429, value("__name__", "vigil_gpu_cost_hourly", "state", "unallocated"), 0.005)
	require.InDelta(t, 0.857143, value("__name__", "vigil_gpu_cost_hourly", "namespace", "research", "pod", "nb-0", "node", "gpu-c", "tenant", "research"), 0.005)
	require.InDelta(t, 1.243571, value("__name__", "vigil_gpu_idle_cost_hourly"), 0.005)
	require.InDelta(t, 1.10, value("__name__", "node_gpu_hourly_cost", "node", "gpu-b"), 1e-9)
	require.InDelta(t, 2.50, value("__name__", "node_gpu_hourly_cost", "node", "gpu-a"), 1e-9)
	require.InDelta(t, 1.10, value("__name__", "vigil_cost_per_1m_tokens", "model", "llama-8b", "tenant", "inference", "basis", "allocation", "token_type", "prompt"), 0.005)
	require.InDelta(t, 2.00, value("__name__", "vigil_cost_per_1m_tokens", "model", "llama-8b", "tenant", "inference", "basis", "usage", "token_type", "generation"), 0.005)

	rep := &diagnose.Report{Findings: []diagnose.Cause{
		{Kind: "gpu_idle", Entity: diagnose.Entity{"namespace": "research", "pod": "nb-0"}, Summary: "research/nb-0 holds a GPU slice it barely uses"},
		{Kind: "gpu_idle", Entity: diagnose.Entity{"namespace": "research", "pod": "gone"}, Summary: "unchanged"},
	}}
	rec.annotate(t.Context(), at, rep)
	require.Equal(t, "research/nb-0 holds a GPU slice it barely uses; idle cost 10.29 USD/day (0.429 GPUs at 2.00 USD/h, 50% active)", rep.Findings[0].Summary)
	require.Equal(t, "unchanged", rep.Findings[1].Summary)
}

// TestCostServed runs a driven server over the hand-computed hour (read
// as an attached source is): one cycle records the cost series in the
// embedded store, and the web UI's /cost shows the hour's total.
func TestCostServed(t *testing.T) {
	st := costtest.HandStore(t)
	at := time.Unix(1800003600, 0).UTC()
	cfg := testConfig(t, t.TempDir())
	cfg.OTLP.GRPCListen, cfg.OTLP.HTTPListen = "", ""
	cfg.Cost.Window = time.Hour
	cfg.Cost.Currency = "USD"
	cfg.Cost.GPUHourly = map[string]float64{"NVIDIA A100-SXM4-80GB": 2.5, "NVIDIA H100 80GB HBM3": 4, "default": 2}
	cfg.Cost.NodeOverrides = []cost.NodeOverride{{Match: map[string]string{"node.kubernetes.io/instance-type": "spot-h100"}, GPUHourly: 1.1}}
	require.NoError(t, cfg.Validate())
	s := New(Options{Config: cfg, Now: func() time.Time { return at }, Driven: true, Read: st})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	require.NoError(t, s.Watcher().Cycle(t.Context(), at))

	q, err := s.Store().Querier(at.Add(-time.Minute).UnixMilli(), at.UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", MetricGPUCostHourly))
	total := 0.0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			_, v := it.At()
			total += v
		}
	}
	require.NoError(t, ss.Err())
	require.InDelta(t, 13.10, total, 0.005, "the hour's cost per hour, allocated and not")

	code, body := get(t, "http://"+s.Addr().String()+"/cost?by=node")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "13.10 USD in all")
}

// capture keeps what is appended to it.
type capture struct {
	samples   []captured
	committed bool
}

type captured struct {
	ls labels.Labels
	t  int64
	v  float64
}

func (c *capture) AppenderV2(context.Context) storage.AppenderV2 { return c }

func (c *capture) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	c.samples = append(c.samples, captured{ls: ls, t: t, v: v})
	return 1, nil
}

func (c *capture) Commit() error   { c.committed = true; return nil }
func (c *capture) Rollback() error { return nil }
