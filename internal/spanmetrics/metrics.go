package spanmetrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// selfMetrics are the Consumer's own metrics.
type selfMetrics struct {
	// paired, virtual, tree, expired and dropped are edges' outcomes.
	paired, virtual, tree, expired, dropped prometheus.Counter
	spanOverflow, edgeOverflow              prometheus.Counter
	// selfWaited, ... are the self time's outcomes (selftime.go).
	selfWaited, selfEarly, selfLate, selfOrphan, selfDropped, selfMerged prometheus.Counter

	spans    prometheus.Counter
	overflow *prometheus.CounterVec
	edges    *prometheus.CounterVec
	self     *prometheus.CounterVec
	series   *prometheus.GaugeVec
	flushes  *prometheus.CounterVec
	rejected *prometheus.CounterVec
}

func newSelfMetrics(reg prometheus.Registerer) (*selfMetrics, error) {
	m := &selfMetrics{
		spans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_spanmetrics_spans_total",
			Help: "Spans counted into span metrics and the service graph.",
		}),
		overflow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_spanmetrics_overflow_total",
			Help: "Spans (kind=span) and requests (kind=edge) counted in an overflow series because the series limit was reached.",
		}, []string{"kind"}),
		edges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_spanmetrics_service_graph_halves_total",
			Help: "Service-graph requests by outcome: paired, virtual (a virtual node), tree (placed by the span tree: a call without a client and server span pair), expired (no other half) or dropped (too many pending).",
		}, []string{"outcome"}),
		self: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_spanmetrics_self_time_spans_total",
			Help: "Spans in the self time by outcome: waited (taken once its children could have come), early (taken at once: no room to wait, or a repeated span), late (a child that came after its parent's self time was taken), orphan (a child whose parent never came), dropped (a child with no room to wait) or merged (times a span's many children were merged, closest first).",
		}, []string{"outcome"}),
		series: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_spanmetrics_series",
			Help: "Span-metric series (kind=span), service-graph edges (kind=edge), requests waiting for their other half (kind=pending) and spans waiting for their children or parent for the self time (kind=self_pending) at the last flush.",
		}, []string{"kind"}),
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_spanmetrics_flushes_total",
			Help: "Writes of the span metrics into the store, by result.",
		}, []string{"result"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_spanmetrics_rejected_total",
			Help: "Samples and exemplars the store refused.",
		}, []string{"what"}),
	}
	m.paired, m.virtual, m.tree = m.edges.WithLabelValues("paired"), m.edges.WithLabelValues("virtual"), m.edges.WithLabelValues("tree")
	m.expired, m.dropped = m.edges.WithLabelValues("expired"), m.edges.WithLabelValues("dropped")
	m.spanOverflow, m.edgeOverflow = m.overflow.WithLabelValues("span"), m.overflow.WithLabelValues("edge")
	m.selfWaited, m.selfEarly, m.selfLate = m.self.WithLabelValues("waited"), m.self.WithLabelValues("early"), m.self.WithLabelValues("late")
	m.selfOrphan, m.selfDropped, m.selfMerged = m.self.WithLabelValues("orphan"), m.self.WithLabelValues("dropped"), m.self.WithLabelValues("merged")
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.spans, m.overflow, m.edges, m.self, m.series, m.flushes, m.rejected} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register span metrics' own metrics: %w", err)
	}
	return m, nil
}
