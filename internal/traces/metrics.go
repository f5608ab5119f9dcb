package traces

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	spans, logs    prometheus.Counter
	dropped        *prometheus.CounterVec
	retentionParts *prometheus.CounterVec
	retentionBytes *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, diskBytes func() float64) *metrics {
	m := &metrics{
		spans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_traces_spans_stored_total",
			Help: "Spans written to the trace store (a span sent twice counts twice, stored once).",
		}),
		logs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_traces_logs_stored_total",
			Help: "Log records written to the trace store.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_traces_dropped_total",
			Help: "Spans and log records not stored, by signal and reason (too_old: past retention; future: over an hour ahead of the clock; invalid: no trace id, span id or start time).",
		}, []string{"signal", "reason"}),
		retentionParts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_traces_retention_deleted_total",
			Help: "Hours of spans and logs (time partitions) deleted by retention, by reason (age, size).",
		}, []string{"reason"}),
		retentionBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_traces_retention_deleted_bytes_total",
			Help: "Estimated bytes on disk of the partitions deleted by retention, by reason (age, size).",
		}, []string{"reason"}),
	}
	disk := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vigil_traces_disk_bytes",
		Help: "Bytes on disk of the trace store (tables, WAL, manifest).",
	}, diskBytes)
	for _, r := range []string{"age", "size"} {
		m.retentionParts.WithLabelValues(r)
		m.retentionBytes.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.spans, m.logs, m.dropped, m.retentionParts, m.retentionBytes, disk)
	}
	return m
}
