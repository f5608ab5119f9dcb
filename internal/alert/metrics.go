package alert

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Names of the notifier's own metrics, kept in a private registry and
// exposed under Vigil's names.
const (
	promSent        = "prometheus_notifications_sent_total"
	promErrors      = "prometheus_notifications_errors_total"
	promDropped     = "prometheus_notifications_dropped_total"
	promQueueLength = "prometheus_notifications_queue_length"
	promAMLabel     = "alertmanager"
)

// counters are one webhook receiver's counts, in alerts.
type counters struct {
	sent, failed, dropped, queued atomic.Int64
}

// metrics exposes both paths under one set of names, labelled by
// receiver: the Alertmanager's push URL (as the notifier labels it, with
// no credentials) or the webhook's redacted URL.
type metrics struct {
	notifier *prometheus.Registry
	webhooks []*webhook
	capacity int

	sent, failed, dropped, queueLength, queueCapacity *prometheus.Desc
}

var _ prometheus.Collector = (*metrics)(nil)

func newMetrics(notifierReg *prometheus.Registry, capacity int) *metrics {
	recv := []string{"receiver"}
	return &metrics{
		notifier: notifierReg,
		capacity: capacity,
		sent: prometheus.NewDesc("vigil_notifications_sent_total",
			"Alerts delivered to a receiver (an Alertmanager or a webhook).", recv, nil),
		failed: prometheus.NewDesc("vigil_notifications_failed_total",
			"Alerts in requests to a receiver that failed (each attempt counts).", recv, nil),
		dropped: prometheus.NewDesc("vigil_notifications_dropped_total",
			"Alerts given up on: failed delivery, a full queue or shutdown.", recv, nil),
		queueLength: prometheus.NewDesc("vigil_notifications_queue_length",
			"Alerts waiting to be sent to a receiver.", recv, nil),
		queueCapacity: prometheus.NewDesc("vigil_notifications_queue_capacity",
			"How many alerts each receiver's queue holds.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.sent, m.failed, m.dropped, m.queueLength, m.queueCapacity} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(m.queueCapacity, prometheus.GaugeValue, float64(m.capacity))
	m.collectNotifier(ch)
	for _, w := range m.webhooks {
		c := &w.counters
		ch <- prometheus.MustNewConstMetric(m.sent, prometheus.CounterValue, float64(c.sent.Load()), w.name)
		ch <- prometheus.MustNewConstMetric(m.failed, prometheus.CounterValue, float64(c.failed.Load()), w.name)
		ch <- prometheus.MustNewConstMetric(m.dropped, prometheus.CounterValue, float64(c.dropped.Load()), w.name)
		ch <- prometheus.MustNewConstMetric(m.queueLength, prometheus.GaugeValue, float64(c.queued.Load()), w.name)
	}
}

// collectNotifier renames the notifier's per-Alertmanager metrics.
func (m *metrics) collectNotifier(ch chan<- prometheus.Metric) {
	mfs, err := m.notifier.Gather()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(m.sent, err)
		return
	}
	for _, mf := range mfs {
		desc, typ := m.rename(mf.GetName())
		if desc == nil {
			continue
		}
		for _, pm := range mf.GetMetric() {
			v := pm.GetCounter().GetValue()
			if typ == prometheus.GaugeValue {
				v = pm.GetGauge().GetValue()
			}
			ch <- prometheus.MustNewConstMetric(desc, typ, v, labelValue(pm, promAMLabel))
		}
	}
}

func (m *metrics) rename(name string) (*prometheus.Desc, prometheus.ValueType) {
	switch name {
	case promSent:
		return m.sent, prometheus.CounterValue
	case promErrors:
		return m.failed, prometheus.CounterValue
	case promDropped:
		return m.dropped, prometheus.CounterValue
	case promQueueLength:
		return m.queueLength, prometheus.GaugeValue
	}
	return nil, 0
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
