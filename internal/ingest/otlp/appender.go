package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// promotedAttributes are the resource attributes kept as labels: those
// that name the entity a series belongs to (the Kubernetes semantic
// conventions). The same list as internal/ingest/fileimport's.
var promotedAttributes = []string{
	"k8s.node.name", "k8s.namespace.name", "k8s.pod.name", "k8s.container.name",
	"k8s.deployment.name", "k8s.statefulset.name", "k8s.job.name", "host.name",
}

// targetInfo is the series of resource attributes the translation adds:
// not a data point of the request.
const targetInfo = "target_info"

// maxAhead is how far in the future a sample may be.
const maxAhead = 10 * time.Minute

// MetricsAppender is a MetricsConsumer that stores metrics with
// Prometheus's own OTLP translation, as `vigil import` does for OTLP JSON
// files: metric names with unit and type suffixes, service.name as job,
// service.instance.id as instance, the Kubernetes resource attributes as
// labels, resource attributes in target_info, exponential histograms as
// native histograms.
//
// Data points the store or the translation refuses for good (out of
// order, duplicate, too old, more than 10 minutes ahead, delta or
// unspecified temporality, invalid histograms) are skipped and reported
// as a PartialError; the others are committed. A storage failure rolls the
// request back and fails it.
type MetricsAppender struct {
	app      storage.AppendableV2
	settings prometheusremotewrite.Settings
	now      func() time.Time
	logger   *slog.Logger
	pool     sync.Pool
}

var _ MetricsConsumer = (*MetricsAppender)(nil)

// NewMetricsAppender returns a MetricsAppender into app. now is the clock
// (nil: time.Now); logger may be nil.
func NewMetricsAppender(app storage.AppendableV2, now func() time.Time, logger *slog.Logger) *MetricsAppender {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &MetricsAppender{
		app: app,
		settings: prometheusremotewrite.Settings{
			AddMetricSuffixes:         true,
			PromoteResourceAttributes: prometheusremotewrite.NewPromoteResourceAttributes(config.OTLPConfig{PromoteResourceAttributes: promotedAttributes}),
			LookbackDelta:             5 * time.Minute,
		},
		now:    now,
		logger: logger,
		pool:   sync.Pool{New: func() any { return prometheusremotewrite.NewPrometheusConverter(nil) }},
	}
}

// ConsumeMetrics translates md and appends it in one transaction. It does
// not modify md.
func (a *MetricsAppender) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	app := &skippingAppender{AppenderV2: a.app.AppenderV2(ctx), maxT: a.now().Add(maxAhead).UnixMilli()}
	conv := a.pool.Get().(*prometheusremotewrite.PrometheusConverter)
	conv.Reset(app)
	defer func() {
		conv.Reset(nil)
		a.pool.Put(conv)
	}()
	annots, err := conv.FromMetrics(ctx, md, a.settings)
	if err := errors.Join(app.fatal, ctx.Err()); err != nil {
		return errors.Join(fmt.Errorf("append OTLP metrics: %w", err), app.Rollback())
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit OTLP metrics: %w", err)
	}
	if ws, _ := annots.AsStrings("", 0, 0); len(ws) > 0 {
		a.logger.Debug("OTLP metrics translated with warnings", "warnings", len(ws), "first", ws[0])
	}
	rejected, msg := app.skipped, app.firstErr
	if err != nil {
		// The translation refuses metrics of delta or unspecified
		// temporality, and metric types it does not know; the rest is in.
		rejected += unstorablePoints(md)
		msg = joinMsg(err.Error(), msg)
	}
	if rejected == 0 && msg == "" {
		return nil
	}
	return PartialError{Rejected: rejected, Msg: msg}
}

// unstorablePoints counts the data points that the translation refuses:
// sums and histograms that are not cumulative.
func unstorablePoints(md pmetric.Metrics) int {
	n := 0
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					if m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
						n += m.Sum().DataPoints().Len()
					}
				case pmetric.MetricTypeHistogram:
					if m.Histogram().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
						n += m.Histogram().DataPoints().Len()
					}
				case pmetric.MetricTypeExponentialHistogram:
					if m.ExponentialHistogram().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
						n += m.ExponentialHistogram().DataPoints().Len()
					}
				}
			}
		}
	}
	return n
}

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// skippingAppender skips the samples the store refuses for good, counting
// the data points they came from, so that the translation goes on with the
// rest; the first other error is kept in fatal.
type skippingAppender struct {
	storage.AppenderV2
	maxT     int64
	skipped  int
	firstErr string
	fatal    error
	// points holds the data points skipped: the samples of one histogram
	// or summary point differ only in name suffix and le or quantile.
	points map[uint64]struct{}
	buf    []byte
}

func (a *skippingAppender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.fatal != nil {
		return 0, a.fatal
	}
	if t > a.maxT {
		a.skip(ls, t, opts, fmt.Errorf("%w: more than %s in the future", storage.ErrOutOfBounds, maxAhead))
		return 0, nil
	}
	nref, err := a.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
	var he histogram.Error
	switch {
	case err == nil, errors.Is(err, (*storage.AppendPartialError)(nil)):
		// A partial error is about exemplars, which are best effort.
		return nref, nil
	case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrTooOldSample),
		errors.Is(err, storage.ErrOutOfBounds), errors.Is(err, storage.ErrDuplicateSampleForTimestamp),
		errors.As(err, &he):
		a.skip(ls, t, opts, err)
		return 0, nil
	}
	a.fatal = err
	return 0, err
}

func (a *skippingAppender) skip(ls labels.Labels, t int64, opts storage.AOptions, err error) {
	if ls.Get(model.MetricNameLabel) == targetInfo {
		return
	}
	var h uint64
	h, a.buf = ls.HashWithoutLabels(a.buf, model.MetricNameLabel, labels.BucketLabel, "quantile")
	h ^= xxhash.Sum64String(opts.MetricFamilyName) ^ uint64(t)*0x9e3779b97f4a7c15
	if a.points == nil {
		a.points = map[uint64]struct{}{}
	}
	if _, seen := a.points[h]; !seen {
		a.points[h] = struct{}{}
		a.skipped++
	}
	if a.firstErr == "" {
		a.firstErr = fmt.Sprintf("%s: %v", ls.Get(model.MetricNameLabel), err)
	}
}
