// Package self stores Vigil's own metrics in its own store at a fixed
// interval, labelled job="vigil", so that a lone `vigil serve` watches itself
// without a scrape configuration.
//
// It does not scrape other targets; the scrape manager does that.
package self

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
)

// Ingester copies a Gatherer's metrics into an appendable.
type Ingester struct {
	gatherer prometheus.Gatherer
	app      storage.AppendableV2
	instance string
	now      func() time.Time
	logger   *slog.Logger
	failures prometheus.Counter
}

// New returns an Ingester; instance is the value of the instance label.
func New(g prometheus.Gatherer, app storage.AppendableV2, instance string, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) *Ingester {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "vigil_self_ingest_failures_total",
		Help: "Times Vigil could not store its own metrics.",
	})
	if reg != nil {
		reg.MustRegister(failures)
	}
	return &Ingester{gatherer: g, app: app, instance: instance, now: now, logger: logger, failures: failures}
}

// Run stores the metrics every interval until ctx ends.
func (i *Ingester) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := i.Once(ctx); err != nil {
			i.failures.Inc()
			i.logger.Warn("store own metrics", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once stores one snapshot of the metrics, all at the clock's current time.
func (i *Ingester) Once(ctx context.Context) error {
	mfs, err := i.gatherer.Gather()
	if err != nil && len(mfs) == 0 {
		return fmt.Errorf("gather: %w", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encode %s: %w", mf.GetName(), err)
		}
	}
	ts := i.now().UnixMilli()
	p := textparse.NewPromParser(buf.Bytes(), labels.NewSymbolTable(), false)
	app := i.app.AppenderV2(ctx)
	var lset labels.Labels
	lb := labels.NewBuilder(labels.EmptyLabels())
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errors.Join(fmt.Errorf("parse own metrics: %w", err), app.Rollback())
		}
		if entry != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		p.Labels(&lset)
		lb.Reset(lset)
		lb.Set("job", "vigil")
		lb.Set("instance", i.instance)
		if _, err := app.Append(0, lb.Labels(), 0, ts, v, nil, nil, storage.AOptions{}); err != nil {
			return errors.Join(fmt.Errorf("append %s: %w", lset, err), app.Rollback())
		}
	}
	if _, err := app.Append(0, labels.FromStrings(model.MetricNameLabel, "up", "job", "vigil", "instance", i.instance), 0, ts, 1, nil, nil, storage.AOptions{}); err != nil {
		return errors.Join(fmt.Errorf("append up: %w", err), app.Rollback())
	}
	return app.Commit()
}
