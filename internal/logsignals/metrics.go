package logsignals

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// selfMetrics are the Consumer's own metrics.
type selfMetrics struct {
	records  prometheus.Counter
	matched  prometheus.Counter
	overflow prometheus.Counter
	series   prometheus.Gauge
	writes   *prometheus.CounterVec
	rejected prometheus.Counter
}

func newSelfMetrics(reg prometheus.Registerer) (*selfMetrics, error) {
	m := &selfMetrics{
		records: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_logsignals_records_total",
			Help: "Log records examined for log-derived signals.",
		}),
		matched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_logsignals_matched_records_total",
			Help: "Log records that matched at least one event.",
		}),
		overflow: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_logsignals_overflow_total",
			Help: "Events counted in an overflow series because the series limit was reached.",
		}),
		series: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_logsignals_series",
			Help: "Series of vigil_log_events_total and vigil_log_xid_total, overflow series included.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_logsignals_writes_total",
			Help: "Writes of the log-derived counters into the store, by result.",
		}, []string{"result"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_logsignals_rejected_samples_total",
			Help: "Samples the store refused (out of order, too old, duplicate).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.records, m.matched, m.overflow, m.series, m.writes, m.rejected} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register log signals' own metrics: %w", err)
	}
	return m, nil
}
