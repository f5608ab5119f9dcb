package otlp

import "github.com/prometheus/client_golang/prometheus"

// Transports, the values of the transport label.
const (
	transportGRPC = "grpc"
	transportHTTP = "http"
)

type metrics struct {
	spans, logs, points *prometheus.CounterVec
	rejected            *prometheus.CounterVec
	rejectedItems       *prometheus.CounterVec
	duration            *prometheus.HistogramVec
	inflight            prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &metrics{
		spans:  counter("vigil_otlp_received_spans_total", "Spans accepted over OTLP, by transport.", "transport"),
		logs:   counter("vigil_otlp_received_log_records_total", "Log records accepted over OTLP, by transport.", "transport"),
		points: counter("vigil_otlp_received_data_points_total", "Metric data points accepted over OTLP, by transport.", "transport"),
		rejected: counter("vigil_otlp_rejected_total",
			"OTLP export requests refused as a whole or in part, by transport, signal and reason.",
			"transport", "signal", "reason"),
		rejectedItems: counter("vigil_otlp_rejected_items_total",
			"Spans, log records and data points refused in partially successful OTLP export requests, by transport, signal and reason.",
			"transport", "signal", "reason"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_otlp_request_duration_seconds",
			Help:    "Time to decode, validate and consume one OTLP export request, by transport and signal.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}, []string{"transport", "signal"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_otlp_inflight_requests",
			Help: "OTLP export requests being decoded and consumed now.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.spans, m.logs, m.points, m.rejected, m.rejectedItems, m.duration, m.inflight)
	}
	return m
}
