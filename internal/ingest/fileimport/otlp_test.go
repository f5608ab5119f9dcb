package fileimport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// keepText keeps the text of the files Read returns for this test, which
// looks at it (Read drops it once validated).
func keepText(t *testing.T) {
	keepData = true
	t.Cleanup(func() { keepData = false })
}

// otlpMetricsLine is one export request as the Collector's file exporter
// writes it: a gauge and a monotonic sum of one pod, at t.
func otlpMetricsLine(t *testing.T, at time.Time, gauge, counter float64) []byte {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "vllm")
	rm.Resource().Attributes().PutStr("k8s.pod.name", "vllm-0")
	rm.Resource().Attributes().PutStr("k8s.namespace.name", "inference")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	g := ms.AppendEmpty()
	g.SetName("gpu.utilization")
	g.SetUnit("1")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(at))
	dp.SetDoubleValue(gauge)
	c := ms.AppendEmpty()
	c.SetName("requests")
	sum := c.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	cp := sum.DataPoints().AppendEmpty()
	cp.SetTimestamp(pcommon.NewTimestampFromTime(at))
	cp.SetDoubleValue(counter)
	b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)
	return b
}

// TestReadOTLPMetrics: OTLP JSON metrics, one request per line, are read
// through Prometheus's OTLP translation (suffixes, job from service.name,
// Kubernetes resource attributes as labels).
func TestReadOTLPMetrics(t *testing.T) {
	keepText(t)
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	var in bytes.Buffer
	for i := range 3 {
		in.Write(otlpMetricsLine(t, at.Add(time.Duration(i)*15*time.Second), 0.5, float64(10*i)))
		in.WriteByte('\n')
	}
	f, err := Read("m.otlp.json", &in, DefaultOptions(at))
	require.NoError(t, err)
	require.Equal(t, FormatOpenMetrics, f.Format)
	// The two metrics and target_info (the resource's other attributes).
	require.Equal(t, 9, f.Samples)
	require.Equal(t, 3, f.Series)
	text := string(f.data)
	require.Contains(t, text, `gpu_utilization_ratio{job="vllm",k8s_namespace_name="inference",k8s_pod_name="vllm-0"} 0.5 1794448800`)
	require.Contains(t, text, `requests_total{`)
	require.True(t, strings.HasSuffix(text, "# EOF\n"))
}

// TestReadOTLPTraces: traces are not metrics: a typed error callers skip.
func TestReadOTLPTraces(t *testing.T) {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("x")
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	_, err = Read("t.otlp.json", bytes.NewReader(b), DefaultOptions(time.Now()))
	require.ErrorIs(t, err, ErrOTLPNotMetrics)
}

// TestReadOTLPBad: a broken line is named by file and line.
func TestReadOTLPBad(t *testing.T) {
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	in := append(otlpMetricsLine(t, at, 1, 1), []byte("\n{\"resourceMetrics\": [{\"bad\n")...)
	_, err := Read("m.json", bytes.NewReader(in), DefaultOptions(at))
	require.ErrorContains(t, err, "m.json:2: OTLP metrics JSON")
}
