package otlp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// allTypes returns one metric of each OTLP type at t, plus a delta sum,
// which Prometheus does not store.
func allTypes(t time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	res := rm.Resource().Attributes()
	res.PutStr("service.name", "vllm")
	res.PutStr("service.instance.id", "vllm-0")
	res.PutStr("k8s.namespace.name", "inference")
	res.PutStr("k8s.pod.name", "vllm-0")
	res.PutStr("cloud.region", "eu-west-1")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	ts := pcommon.NewTimestampFromTime(t)

	g := ms.AppendEmpty()
	g.SetName("gpu.memory.used")
	g.SetUnit("By")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(1 << 30)
	dp.Attributes().PutStr("gpu", "0")

	c := ms.AppendEmpty()
	c.SetName("vllm.request.success")
	sum := c.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp = sum.DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetIntValue(42)

	h := ms.AppendEmpty()
	h.SetName("vllm.time_to_first_token")
	h.SetUnit("s")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hdp := hist.DataPoints().AppendEmpty()
	hdp.SetTimestamp(ts)
	hdp.SetCount(3)
	hdp.SetSum(0.6)
	hdp.ExplicitBounds().FromRaw([]float64{0.1, 0.5})
	hdp.BucketCounts().FromRaw([]uint64{1, 1, 1})

	e := ms.AppendEmpty()
	e.SetName("vllm.e2e_latency")
	e.SetUnit("s")
	exp := e.SetEmptyExponentialHistogram()
	exp.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	edp := exp.DataPoints().AppendEmpty()
	edp.SetTimestamp(ts)
	edp.SetScale(0)
	edp.SetCount(2)
	edp.SetSum(3)
	edp.Positive().SetOffset(0)
	edp.Positive().BucketCounts().FromRaw([]uint64{1, 1})

	s := ms.AppendEmpty()
	s.SetName("rpc.duration")
	s.SetUnit("ms")
	sdp := s.SetEmptySummary().DataPoints().AppendEmpty()
	sdp.SetTimestamp(ts)
	sdp.SetCount(4)
	sdp.SetSum(10)
	q := sdp.QuantileValues().AppendEmpty()
	q.SetQuantile(0.5)
	q.SetValue(2)

	d := ms.AppendEmpty()
	d.SetName("tokens.generated")
	delta := d.SetEmptySum()
	delta.SetIsMonotonic(true)
	delta.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	for range 2 {
		dp = delta.DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		dp.SetIntValue(7)
	}
	return md
}

// TestMetricsAppender stores every OTLP metric type in the embedded store
// and finds the Prometheus names, the promoted resource attributes, and
// the exponential histogram as a native histogram; the delta sum's two
// points are reported as rejected.
func TestMetricsAppender(t *testing.T) {
	st := openStore(t)
	now := time.Now().Truncate(time.Second)
	a := NewMetricsAppender(st, func() time.Time { return now }, nil)
	err := a.ConsumeMetrics(t.Context(), allTypes(now))
	var pe PartialError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Rejected)
	require.Contains(t, pe.Msg, `invalid temporality and type combination for metric "tokens.generated"`)

	require.ElementsMatch(t, []string{
		"gpu_memory_used_bytes",
		"vllm_request_success_total",
		"vllm_time_to_first_token_seconds_bucket", "vllm_time_to_first_token_seconds_count", "vllm_time_to_first_token_seconds_sum",
		"vllm_e2e_latency_seconds",
		"rpc_duration_milliseconds", "rpc_duration_milliseconds_count", "rpc_duration_milliseconds_sum",
		"target_info",
	}, seriesNames(t, st))

	gpu := selectSeries(t, st, "gpu_memory_used_bytes")
	require.Len(t, gpu, 1)
	require.Equal(t, map[string]string{
		"__name__": "gpu_memory_used_bytes", "gpu": "0", "job": "vllm", "instance": "vllm-0",
		"k8s_namespace_name": "inference", "k8s_pod_name": "vllm-0",
	}, gpu[0].Map())
	info := selectSeries(t, st, "target_info")
	require.Len(t, info, 1)
	require.Equal(t, "eu-west-1", info[0].Get("cloud_region"))

	q, err := st.Querier(0, now.Add(time.Hour).UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, "vllm_e2e_latency_seconds"))
	require.True(t, ss.Next())
	it := ss.At().Iterator(nil)
	require.NotEqual(t, 0, int(it.Next()))
	_, fh := it.AtFloatHistogram(nil)
	require.Equal(t, 2.0, fh.Count)
	require.Equal(t, 3.0, fh.Sum)
}

// TestMetricsAppenderRejects: samples the store refuses (a second value at
// the same time, one more than 10 minutes ahead) are counted per data
// point, and the rest of the request is stored.
func TestMetricsAppenderRejects(t *testing.T) {
	st := openStore(t)
	now := time.Now().Truncate(time.Second)
	a := NewMetricsAppender(st, func() time.Time { return now }, nil)
	require.NoError(t, a.ConsumeMetrics(t.Context(), newMetricsData(3, now)))

	md := newMetricsData(3, now)
	dps := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints()
	dps.At(0).SetIntValue(100)                                                 // same time, another value
	dps.At(1).SetTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Minute))) // fine
	dps.At(2).SetTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Hour)))   // too far ahead
	err := a.ConsumeMetrics(t.Context(), md)
	var pe PartialError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Rejected)
	require.Contains(t, pe.Msg, "queue_depth")

	// A classic histogram point refused is one data point, not one per bucket.
	hm := allTypes(now)
	hm.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(2).Histogram().DataPoints().At(0).SetSum(1)
	require.ErrorAs(t, a.ConsumeMetrics(t.Context(), allTypes(now)), &pe)
	require.ErrorAs(t, a.ConsumeMetrics(t.Context(), hm), &pe)
	require.Equal(t, 2+1, pe.Rejected, "the delta sum's 2 points and the histogram's 1")
}

// TestMetricsAppenderStorageFailure: an error of the store that is not
// about one sample rolls the request back and fails it.
func TestMetricsAppenderStorageFailure(t *testing.T) {
	app := &failingAppendable{}
	err := NewMetricsAppender(app, nil, nil).ConsumeMetrics(t.Context(), newMetricsData(2, time.Now()))
	require.ErrorIs(t, err, errDiskFull)
	require.NotErrorAs(t, err, new(PartialError))
	require.True(t, app.rolledBack)
	require.False(t, app.committed)
}

var errDiskFull = errors.New("disk full")

type failingAppendable struct{ committed, rolledBack bool }

func (f *failingAppendable) AppenderV2(context.Context) storage.AppenderV2 { return failingAppender{f} }

type failingAppender struct{ f *failingAppendable }

func (failingAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AOptions) (storage.SeriesRef, error) {
	return 0, errDiskFull
}
func (a failingAppender) Commit() error   { a.f.committed = true; return nil }
func (a failingAppender) Rollback() error { a.f.rolledBack = true; return nil }
