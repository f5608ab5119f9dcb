package forward

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Forwarder's own metrics.
type metrics struct {
	sentSpans, sentLogs prometheus.Counter
	failed              *prometheus.CounterVec
	dropped             *prometheus.CounterVec
	retries             *prometheus.CounterVec
	queueLength         prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, q *queue) (*metrics, error) {
	m := &metrics{
		sentSpans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_forward_sent_spans_total",
			Help: "Spans the OTLP backend accepted.",
		}),
		sentLogs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_forward_sent_log_records_total",
			Help: "Log records the OTLP backend accepted.",
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_forward_failed_total",
			Help: "Spans (signal=traces) and log records (signal=logs) not forwarded, by reason: rejected (refused for good), retries_exhausted, partial (refused by a partial success), shutdown (left at shutdown), marshal.",
		}, []string{"signal", "reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_forward_dropped_total",
			Help: "Spans and log records dropped because the forwarding queue was full.",
		}, []string{"signal"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_forward_retries_total",
			Help: "Export attempts retried after a retryable failure.",
		}, []string{"signal"}),
		queueLength: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vigil_forward_queue_length",
			Help: "Batches waiting to be forwarded.",
		}, func() float64 { return float64(q.len()) }),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.sentSpans, m.sentLogs, m.failed, m.dropped, m.retries, m.queueLength} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register forwarding metrics: %w", err)
	}
	return m, nil
}
