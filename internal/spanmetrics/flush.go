package spanmetrics

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
)

// Metric names.
const (
	MetricCalls    = "traces_span_metrics_calls_total"
	MetricDuration = "traces_span_metrics_duration_seconds"
	MetricTimeouts = "traces_span_metrics_timeouts_total"
	MetricRetries  = "traces_span_metrics_retries_total"
	MetricSelf     = "traces_span_metrics_self_seconds"

	MetricGraphRequests      = "traces_service_graph_request_total"
	MetricGraphFailed        = "traces_service_graph_request_failed_total"
	MetricGraphServerSeconds = "traces_service_graph_request_server_seconds"
	MetricGraphClientSeconds = "traces_service_graph_request_client_seconds"
)

// family is the name and metadata of one metric family.
type family struct {
	name string
	meta metadata.Metadata
}

var (
	famCalls    = family{MetricCalls, metadata.Metadata{Type: model.MetricTypeCounter, Help: "Spans by service, operation, kind, status, model, provider, error type and tenant."}}
	famDuration = family{MetricDuration, metadata.Metadata{Type: model.MetricTypeHistogram, Unit: "seconds", Help: "Span durations by service, operation, kind, status, model, provider, error type and tenant."}}
	famTimeouts = family{MetricTimeouts, metadata.Metadata{Type: model.MetricTypeCounter, Help: "Spans that failed by a timeout or deadline (Vigil's addition to the span metrics)."}}
	famRetries  = family{MetricRetries, metadata.Metadata{Type: model.MetricTypeCounter, Help: "Spans that retry an earlier call (Vigil's addition to the span metrics)."}}
	famSelf     = family{MetricSelf, metadata.Metadata{Type: model.MetricTypeSummary, Unit: "seconds", Help: "Span self time: duration less the union of the children's intervals (Vigil's addition to the span metrics)."}}
	famRequests = family{MetricGraphRequests, metadata.Metadata{Type: model.MetricTypeCounter, Help: "Requests between two services."}}
	famFailed   = family{MetricGraphFailed, metadata.Metadata{Type: model.MetricTypeCounter, Help: "Failed requests between two services."}}
	famServer   = family{MetricGraphServerSeconds, metadata.Metadata{Type: model.MetricTypeHistogram, Unit: "seconds", Help: "Request durations seen by the server."}}
	famClient   = family{MetricGraphClientSeconds, metadata.Metadata{Type: model.MetricTypeHistogram, Unit: "seconds", Help: "Request durations seen by the client."}}
)

// sample is one value to append.
type sample struct {
	fam   *family
	lbls  labels.Labels
	st    int64
	v     float64
	ex    exemplarRec
	hasEx bool
}

// Flush writes every series' running total at the clock's time, in one
// transaction. Samples the store refuses for good (out of order, duplicate,
// too old) are skipped and counted; any other failure rolls the write back
// and is returned, and the next flush writes the totals again.
func (c *Consumer) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	now := c.now()
	c.mu.Lock()
	c.expireEdges(now)
	c.lastFlush = now
	c.dirty = false
	samples := c.snapshot()
	nSpans, nEdges, nPending, nSelf := len(c.spans), len(c.edges), len(c.pending), len(c.selfPend)
	c.mu.Unlock()
	c.m.series.WithLabelValues("self_pending").Set(float64(nSelf))
	c.m.series.WithLabelValues("span").Set(float64(nSpans))
	c.m.series.WithLabelValues("edge").Set(float64(nEdges))
	c.m.series.WithLabelValues("pending").Set(float64(nPending))
	if len(samples) == 0 {
		return nil
	}
	t := max(now.UnixMilli(), c.lastFlushMs+1)
	if err := c.write(ctx, samples, t); err != nil {
		c.m.flushes.WithLabelValues("error").Inc()
		return fmt.Errorf("write span metrics: %w", err)
	}
	c.lastFlushMs = t
	c.m.flushes.WithLabelValues("ok").Inc()
	return nil
}

// write appends samples at t and commits.
func (c *Consumer) write(ctx context.Context, samples []sample, t int64) error {
	app := c.app.AppenderV2(ctx)
	var ex [1]exemplar.Exemplar
	rejected := 0
	for i := range samples {
		s := &samples[i]
		opts := storage.AOptions{MetricFamilyName: s.fam.name, Metadata: s.fam.meta}
		if s.hasEx {
			ex[0] = exemplar.Exemplar{
				Labels: labels.FromStrings("span_id", s.ex.spanID.String(), "trace_id", s.ex.traceID.String()),
				Value:  s.ex.value, Ts: s.ex.ts, HasTs: true,
			}
			opts.Exemplars = ex[:]
		}
		_, err := app.Append(0, s.lbls, s.st, t, s.v, nil, nil, opts)
		var partial *storage.AppendPartialError
		switch {
		case err == nil:
		case errors.As(err, &partial):
			c.m.rejected.WithLabelValues("exemplar").Add(float64(len(partial.ExemplarErrors)))
		case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrOutOfBounds),
			errors.Is(err, storage.ErrDuplicateSampleForTimestamp), errors.Is(err, storage.ErrTooOldSample):
			rejected++
		default:
			return errors.Join(fmt.Errorf("append %s: %w", s.lbls, err), app.Rollback())
		}
	}
	if rejected > 0 {
		c.m.rejected.WithLabelValues("sample").Add(float64(rejected))
		c.logger.Debug("samples refused by the store", "count", rejected)
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// snapshot lists the samples of every series and takes their fresh
// exemplars. The caller holds c.mu.
func (c *Consumer) snapshot() []sample {
	out := make([]sample, 0, len(c.spans)*(len(c.cfg.Buckets)+6)+len(c.edges)*(2*len(c.cfg.Buckets)+8))
	for _, s := range c.spans {
		out = append(out, sample{fam: &famCalls, lbls: withName(s.lbls, MetricCalls, ""), st: s.startMs, v: s.calls})
		takeExemplar(&out[len(out)-1], &s.callsEx)
		if s.timeouts > 0 {
			out = append(out, sample{fam: &famTimeouts, lbls: withName(s.lbls, MetricTimeouts, ""), st: s.startMs, v: s.timeouts})
		}
		if s.retries > 0 {
			out = append(out, sample{fam: &famRetries, lbls: withName(s.lbls, MetricRetries, ""), st: s.startMs, v: s.retries})
		}
		out = c.appendHist(out, &famDuration, s.lbls, s.startMs, &s.dur, true)
		// Written once a span of the series had a child (a leaf's self
		// time is its duration: a copy of it), from the flush of that
		// span, though its self time is taken only once its children can
		// have come (EdgeWait): as a rule, the two have the same history.
		if s.parent {
			out = append(out,
				sample{fam: &famSelf, lbls: withName(s.lbls, MetricSelf+"_sum", ""), st: s.startMs, v: s.selfSum},
				sample{fam: &famSelf, lbls: withName(s.lbls, MetricSelf+"_count", ""), st: s.startMs, v: s.selfCount})
		}
	}
	for _, e := range c.edges {
		out = append(out,
			sample{fam: &famRequests, lbls: withName(e.lbls, MetricGraphRequests, ""), st: e.startMs, v: e.total},
			sample{fam: &famFailed, lbls: withName(e.lbls, MetricGraphFailed, ""), st: e.startMs, v: e.failed})
		out = c.appendHist(out, &famServer, e.lbls, e.startMs, &e.server, false)
		out = c.appendHist(out, &famClient, e.lbls, e.startMs, &e.client, false)
	}
	return out
}

// appendHist lists the _bucket, _sum and _count samples of h.
func (c *Consumer) appendHist(out []sample, fam *family, lbls labels.Labels, st int64, h *hist, exemplars bool) []sample {
	var cum uint64
	for i, n := range h.counts {
		cum += n
		le := "+Inf"
		if i < len(c.cfg.Buckets) {
			le = strconv.FormatFloat(c.cfg.Buckets[i], 'f', -1, 64)
		}
		out = append(out, sample{fam: fam, lbls: withName(lbls, fam.name+"_bucket", le), st: st, v: float64(cum)})
		if exemplars {
			takeExemplar(&out[len(out)-1], &h.ex[i])
		}
	}
	return append(out,
		sample{fam: fam, lbls: withName(lbls, fam.name+"_sum", ""), st: st, v: h.sum},
		sample{fam: fam, lbls: withName(lbls, fam.name+"_count", ""), st: st, v: float64(h.count)})
}

// takeExemplar moves a fresh exemplar into s.
func takeExemplar(s *sample, e *exemplarRec) {
	if !e.fresh {
		return
	}
	s.ex, s.hasEx = *e, true
	e.fresh = false
}

// withName adds __name__ and, when le is set, le to lbls.
func withName(lbls labels.Labels, name, le string) labels.Labels {
	b := labels.NewScratchBuilder(lbls.Len() + 2)
	b.Add(model.MetricNameLabel, name)
	if le != "" {
		b.Add(model.BucketLabel, le)
	}
	lbls.Range(func(l labels.Label) { b.Add(l.Name, l.Value) })
	b.Sort()
	return b.Labels()
}
