package watch

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	cycles, failures prometheus.Counter
	taskFailures     prometheus.Counter
	changes          *prometheus.CounterVec
	duration         prometheus.Histogram
	last             prometheus.Gauge
	blind            prometheus.Gauge
	sourceUp         prometheus.Gauge
	skipped          prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		cycles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_watch_cycles_total", Help: "Evaluation cycles completed (rules, symptoms, diagnosis, incidents).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_watch_cycle_failures_total", Help: "Evaluation cycles that failed.",
		}),
		taskFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_watch_task_failures_total", Help: "Evaluation tasks (scheduled drift evaluations) that failed.",
		}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_incident_changes_total", Help: "Incidents opened, re-diagnosed and resolved.",
		}, []string{"change"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vigil_watch_cycle_duration_seconds", Help: "Wall time of one evaluation cycle.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_watch_last_evaluation_timestamp_seconds", Help: "Data-clock time of the latest evaluation cycle.",
		}),
		blind: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_watch_blind", Help: "1 when the latest cycle's diagnosis saw no telemetry in a vocabulary Vigil knows, or none at all: its silence is no verdict of healthy.",
		}),
		sourceUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_source_up", Help: "1 when the backend an attached Vigil reads (source.url) answered the latest cycle's probe, 0 when not; absent when Vigil reads only its own store.",
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_watch_skipped_cycles_total", Help: "Evaluation cycles skipped because the backend did not answer: nothing was paged or resolved on them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.cycles, m.failures, m.taskFailures, m.changes, m.duration, m.last, m.blind, m.skipped)
	}
	return m
}
