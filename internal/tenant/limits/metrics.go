package limits

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// enforcerMetrics are the Enforcer's metrics. Their tenant label takes the
// tenants that have state: Purge deletes a tenant's series with its state.
// The reason and limit labels are limit names.
type enforcerMetrics struct {
	discardedSamples *prometheus.CounterVec
	discardedSpans   *prometheus.CounterVec
	rejected         *prometheus.CounterVec
	active           *prometheus.GaugeVec
}

func newEnforcerMetrics(reg prometheus.Registerer) enforcerMetrics {
	f := promauto.With(reg)
	return enforcerMetrics{
		discardedSamples: f.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_tenant_discarded_samples_total",
			Help: "Samples not stored because their tenant was over a limit, by the limit (reason).",
		}, []string{"tenant", "reason"}),
		discardedSpans: f.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_tenant_discarded_spans_total",
			Help: "Spans and log records not stored because their tenant was over a limit, by the limit (reason).",
		}, []string{"tenant", "reason"}),
		rejected: f.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_tenant_rejected_requests_total",
			Help: "Requests refused whole because their tenant was over a limit.",
		}, []string{"tenant", "limit"}),
		active: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_tenant_active_series",
			Help: "Series a tenant wrote to within the idle timeout.",
		}, []string{"tenant"}),
	}
}

// tenantMetrics are one tenant's series of the metrics that hot paths
// update, looked up once.
type tenantMetrics struct {
	name                               string
	discardedRate, discardedActive     prometheus.Counter
	discardedPerMetric, discardedSpans prometheus.Counter
	rejectedSamples, rejectedSpans     prometheus.Counter
	active                             prometheus.Gauge
}

func (m enforcerMetrics) forTenant(tenant string) tenantMetrics {
	return tenantMetrics{
		name:               tenant,
		discardedRate:      m.discardedSamples.WithLabelValues(tenant, IngestionRate),
		discardedActive:    m.discardedSamples.WithLabelValues(tenant, MaxActiveSeries),
		discardedPerMetric: m.discardedSamples.WithLabelValues(tenant, MaxSeriesPerMetric),
		discardedSpans:     m.discardedSpans.WithLabelValues(tenant, SpansRate),
		rejectedSamples:    m.rejected.WithLabelValues(tenant, IngestionRate),
		rejectedSpans:      m.rejected.WithLabelValues(tenant, SpansRate),
		active:             m.active.WithLabelValues(tenant),
	}
}

// rejected returns the tenant's counter of requests refused over limit.
func (t tenantMetrics) rejected(m enforcerMetrics, limit string) prometheus.Counter {
	return m.rejected.WithLabelValues(t.name, limit)
}

// forget deletes the tenant's series of every metric.
func (m enforcerMetrics) forget(tenant string) {
	l := prometheus.Labels{"tenant": tenant}
	m.discardedSamples.DeletePartialMatch(l)
	m.discardedSpans.DeletePartialMatch(l)
	m.rejected.DeletePartialMatch(l)
	m.active.DeletePartialMatch(l)
}
