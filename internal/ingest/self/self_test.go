package self_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/ingest/self"
	"github.com/vigil-obs/vigil/internal/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var now = time.Date(2026, 11, 12, 2, 50, 0, 0, time.UTC)

func openStore(t *testing.T) *store.Embedded {
	t.Helper()
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// ownRegistry returns a registry with a gauge, a labelled counter and a
// histogram.
func ownRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vigil_test_gauge", Help: "A gauge."})
	g.Set(42)
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vigil_test_total", Help: "A counter."}, []string{"job", "kind"})
	c.WithLabelValues("other", "a").Add(3)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vigil_test_seconds", Help: "A histogram.", Buckets: []float64{1, 10}})
	h.Observe(5)
	reg.MustRegister(g, c, h)
	return reg
}

func query(t *testing.T, s store.Store, q string) map[string]float64 {
	t.Helper()
	v, _, err := store.Query(t.Context(), s, q, now)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, smpl := range v.(promql.Vector) {
		out[smpl.Metric.String()] = smpl.F
	}
	return out
}

func TestOnce(t *testing.T) {
	s := openStore(t)
	ing := self.New(ownRegistry(), s, "127.0.0.1:9700", func() time.Time { return now }, nil, nil)
	require.NoError(t, ing.Once(t.Context()))

	require.Equal(t, map[string]float64{
		`{__name__="up", instance="127.0.0.1:9700", job="vigil"}`: 1,
	}, query(t, s, `up`))
	require.Equal(t, map[string]float64{
		`{__name__="vigil_test_gauge", instance="127.0.0.1:9700", job="vigil"}`: 42,
	}, query(t, s, `vigil_test_gauge`))
	// The job label is Vigil's, whatever the metric said.
	require.Equal(t, map[string]float64{
		`{__name__="vigil_test_total", instance="127.0.0.1:9700", job="vigil", kind="a"}`: 3,
	}, query(t, s, `vigil_test_total`))
	// As Prometheus 3 does when it scrapes, the text parser writes le
	// values as floats.
	require.Equal(t, map[string]float64{
		`{__name__="vigil_test_seconds_bucket", instance="127.0.0.1:9700", job="vigil", le="1.0"}`:  0,
		`{__name__="vigil_test_seconds_bucket", instance="127.0.0.1:9700", job="vigil", le="10.0"}`: 1,
		`{__name__="vigil_test_seconds_bucket", instance="127.0.0.1:9700", job="vigil", le="+Inf"}`: 1,
	}, query(t, s, `vigil_test_seconds_bucket`))
	require.Equal(t, map[string]float64{
		`{__name__="vigil_test_seconds_count", instance="127.0.0.1:9700", job="vigil"}`: 1,
	}, query(t, s, `vigil_test_seconds_count`))
}

func TestRunStoresUntilCancelled(t *testing.T) {
	s := openStore(t)
	reg := prometheus.NewRegistry()
	var ticks int64
	clock := func() time.Time {
		ticks++
		return now.Add(time.Duration(ticks) * time.Second)
	}
	ing := self.New(reg, s, "vigil:9700", clock, nil, reg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx, time.Millisecond) }()

	deadline := time.Now().Add(30 * time.Second)
	for {
		v, _, err := store.Query(t.Context(), s, `count_over_time(up{job="vigil"}[1h])`, now.Add(time.Hour))
		require.NoError(t, err)
		if vec := v.(promql.Vector); len(vec) == 1 && vec[0].F >= 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "three samples of up not stored after 30s")
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
}

// failingAppendable rejects every sample.
type failingAppendable struct{}

func (failingAppendable) AppenderV2(context.Context) storage.AppenderV2 { return failingAppender{} }

type failingAppender struct{}

var errFull = errors.New("disk full")

func (failingAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AOptions) (storage.SeriesRef, error) {
	return 0, errFull
}
func (failingAppender) Commit() error   { return nil }
func (failingAppender) Rollback() error { return nil }

func TestFailuresAreCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	ing := self.New(reg, failingAppendable{}, "vigil:9700", nil, nil, reg)
	err := ing.Once(t.Context())
	require.ErrorIs(t, err, errFull)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx, time.Millisecond) }()
	deadline := time.Now().Add(30 * time.Second)
	for failures(t, reg) < 2 {
		require.True(t, time.Now().Before(deadline), "failures not counted after 30s")
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done, "a failure does not stop Run")
}

// failures returns the value of vigil_self_ingest_failures_total in reg.
func failures(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "vigil_self_ingest_failures_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("vigil_self_ingest_failures_total is not registered")
	return 0
}
