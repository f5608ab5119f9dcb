package otlp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-obs/vigil/internal/store"
)

// hostPort is the endpoint of a receiver as the exporters take it.
func hostPort(url string) string { return strings.TrimPrefix(url, "http://") }

var sdkResource = resource.NewSchemaless(attribute.String("service.name", "checkout"), attribute.String("k8s.pod.name", "checkout-0"))

// TestSDKTraces sends spans with the OpenTelemetry Go SDK's exporters,
// over gRPC and HTTP, gzip-compressed or not, and finds them in the
// consumer with their names, ids and attributes.
func TestSDKTraces(t *testing.T) {
	exporters := map[string]func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error){
		"grpc": func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(tr.grpcAddr), otlptracegrpc.WithInsecure())
		},
		"grpc-gzip": func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(tr.grpcAddr), otlptracegrpc.WithInsecure(), otlptracegrpc.WithCompressor("gzip"))
		},
		"http": func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(hostPort(tr.httpURL)), otlptracehttp.WithInsecure())
		},
		"http-gzip": func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(hostPort(tr.httpURL)), otlptracehttp.WithInsecure(),
				otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		},
	}
	for name, newExporter := range exporters {
		t.Run(name, func(t *testing.T) {
			s := &sink{}
			tr := startReceiver(t, s, Options{})
			ctx := t.Context()
			exp, err := newExporter(ctx, tr)
			require.NoError(t, err)
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(sdkResource))
			tracer := tp.Tracer("checkout")
			var want []trace.SpanContext
			for i := range 3 {
				_, span := tracer.Start(ctx, "GET /cart", trace.WithAttributes(attribute.Int("i", i), attribute.StringSlice("tags", []string{"a", "b"})))
				want = append(want, span.SpanContext())
				span.End()
			}
			require.NoError(t, tp.Shutdown(ctx))

			spans := s.spans()
			require.Len(t, spans, 3)
			for i, sp := range spans {
				require.Equal(t, "GET /cart", sp.Name())
				require.Equal(t, [16]byte(want[i].TraceID()), [16]byte(sp.TraceID()))
				require.Equal(t, [8]byte(want[i].SpanID()), [8]byte(sp.SpanID()))
				v, ok := sp.Attributes().Get("i")
				require.True(t, ok)
				require.Equal(t, int64(i), v.Int())
				tags, ok := sp.Attributes().Get("tags")
				require.True(t, ok)
				require.Equal(t, 2, tags.Slice().Len())
			}
			svc, ok := s.traces[0].ResourceSpans().At(0).Resource().Attributes().Get("service.name")
			require.True(t, ok)
			require.Equal(t, "checkout", svc.Str())
			require.Equal(t, 3.0, counterValue(t, tr.reg, "vigil_otlp_received_spans_total", "transport", transportOf(name)))
		})
	}
}

func transportOf(name string) string {
	if strings.HasPrefix(name, "grpc") {
		return transportGRPC
	}
	return transportHTTP
}

// TestSDKLogs sends log records with the SDK's exporters over gRPC and
// HTTP and finds their bodies, severities and attributes in the consumer.
func TestSDKLogs(t *testing.T) {
	exporters := map[string]func(ctx context.Context, tr *testReceiver) (sdklog.Exporter, error){
		"grpc": func(ctx context.Context, tr *testReceiver) (sdklog.Exporter, error) {
			return otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(tr.grpcAddr), otlploggrpc.WithInsecure())
		},
		"http": func(ctx context.Context, tr *testReceiver) (sdklog.Exporter, error) {
			return otlploghttp.New(ctx, otlploghttp.WithEndpoint(hostPort(tr.httpURL)), otlploghttp.WithInsecure(),
				otlploghttp.WithCompression(otlploghttp.GzipCompression))
		},
	}
	for name, newExporter := range exporters {
		t.Run(name, func(t *testing.T) {
			s := &sink{}
			tr := startReceiver(t, s, Options{})
			ctx := t.Context()
			exp, err := newExporter(ctx, tr)
			require.NoError(t, err)
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)), sdklog.WithResource(sdkResource))
			var rec otellog.Record
			rec.SetBody(attribute.MapValue(attribute.String("msg", "KV cache full"), attribute.Int("blocks", 0)))
			rec.SetSeverity(otellog.SeverityWarn)
			rec.AddAttributes(attribute.String("request.id", "r-42"))
			lp.Logger("vllm").Emit(ctx, rec)
			require.NoError(t, lp.Shutdown(ctx))

			recs := s.logRecords()
			require.Len(t, recs, 1)
			require.Equal(t, "KV cache full", recs[0].Body().Map().AsRaw()["msg"])
			require.Equal(t, "Warn", recs[0].SeverityNumber().String())
			id, ok := recs[0].Attributes().Get("request.id")
			require.True(t, ok)
			require.Equal(t, "r-42", id.Str())
			require.Equal(t, 1.0, counterValue(t, tr.reg, "vigil_otlp_received_log_records_total", "transport", name))
		})
	}
}

// TestSDKMetrics sends a counter, a gauge and a histogram with the SDK's
// exporters over gRPC and HTTP into a MetricsAppender on the embedded
// store, and finds the series under their Prometheus names.
func TestSDKMetrics(t *testing.T) {
	exporters := map[string]func(ctx context.Context, tr *testReceiver) (sdkmetric.Exporter, error){
		"grpc": func(ctx context.Context, tr *testReceiver) (sdkmetric.Exporter, error) {
			return otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(tr.grpcAddr), otlpmetricgrpc.WithInsecure(), otlpmetricgrpc.WithCompressor("gzip"))
		},
		"http": func(ctx context.Context, tr *testReceiver) (sdkmetric.Exporter, error) {
			return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(hostPort(tr.httpURL)), otlpmetrichttp.WithInsecure())
		},
	}
	for name, newExporter := range exporters {
		t.Run(name, func(t *testing.T) {
			st := openStore(t)
			tr := startReceiver(t, nil, Options{Metrics: NewMetricsAppender(st, nil, nil)})
			ctx := t.Context()
			exp, err := newExporter(ctx, tr)
			require.NoError(t, err)
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(sdkResource))
			meter := mp.Meter("vllm")
			requests, err := meter.Int64Counter("vllm.requests", metric.WithUnit("{request}"))
			require.NoError(t, err)
			requests.Add(ctx, 3, metric.WithAttributes(attribute.String("model", "llama")))
			latency, err := meter.Float64Histogram("vllm.e2e.latency", metric.WithUnit("s"))
			require.NoError(t, err)
			latency.Record(ctx, 0.25)
			_, err = meter.Float64ObservableGauge("gpu.utilization", metric.WithUnit("1"),
				metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error { o.Observe(0.5); return nil }))
			require.NoError(t, err)
			require.NoError(t, mp.Shutdown(ctx))

			names := seriesNames(t, st)
			for _, want := range []string{"vllm_requests_total", "vllm_e2e_latency_seconds_bucket", "vllm_e2e_latency_seconds_count", "vllm_e2e_latency_seconds_sum", "gpu_utilization_ratio", "target_info"} {
				require.Contains(t, names, want)
			}
			series := selectSeries(t, st, "vllm_requests_total")
			require.Len(t, series, 1)
			require.Equal(t, "checkout", series[0].Get("job"))
			require.Equal(t, "checkout-0", series[0].Get("k8s_pod_name"))
			require.Equal(t, "llama", series[0].Get("model"))
			require.Positive(t, counterValue(t, tr.reg, "vigil_otlp_received_data_points_total", "transport", name))
		})
	}
}

// openStore opens the embedded store in a temporary directory.
func openStore(t *testing.T) *store.Embedded {
	t.Helper()
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), nil, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// seriesNames returns the metric names in st.
func seriesNames(t *testing.T, st *store.Embedded) []string {
	t.Helper()
	q, err := st.Querier(0, time.Now().Add(time.Hour).UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	names, _, err := q.LabelValues(t.Context(), model.MetricNameLabel, nil)
	require.NoError(t, err)
	return names
}

// selectSeries returns the label sets of the series named name in st.
func selectSeries(t *testing.T, st *store.Embedded, name string) []labels.Labels {
	t.Helper()
	q, err := st.Querier(0, time.Now().Add(time.Hour).UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), true, nil, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, name))
	var out []labels.Labels
	for ss.Next() {
		out = append(out, ss.At().Labels())
	}
	require.NoError(t, ss.Err())
	return out
}
