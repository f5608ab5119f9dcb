package limits

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Appendable returns next with tenant's limits enforced on every appender
// whose context carries a tenant (tenantOf; with none, tenancy is off and
// next's appender is returned as is):
//
//   - Append checks the series against max_active_series and
//     max_series_per_metric (by its labels' hash and metric name). A new
//     series over a limit is not appended: Append returns the *LimitError
//     for it, and the caller goes on with the other series and reports a
//     partial write, as for an out-of-order sample.
//   - Commit takes the samples appended (floats and histograms; exemplars
//     and metadata are not counted) from the ingestion_rate bucket. When
//     they do not fit, the inner appender is rolled back and Commit
//     returns the *LimitError: nothing of the request is stored.
//
// New series of an appender rolled back, or whose commit failed, stop
// counting as active. An appender of next that appends exemplars
// separately (storage.ExemplarAppenderV2) stays one.
func Appendable(next storage.AppendableV2, e *Enforcer, tenantOf func(context.Context) (string, bool)) storage.AppendableV2 {
	return &limitedAppendable{next: next, e: e, tenantOf: tenantOf}
}

type limitedAppendable struct {
	next     storage.AppendableV2
	e        *Enforcer
	tenantOf func(context.Context) (string, bool)
}

func (a *limitedAppendable) AppenderV2(ctx context.Context) storage.AppenderV2 {
	inner := a.next.AppenderV2(ctx)
	tenant, ok := a.tenantOf(ctx)
	if !ok {
		return inner
	}
	now := a.e.now()
	app := &limitedAppender{
		next: inner,
		e:    a.e,
		st:   a.e.state(tenant, now),
		lim:  a.e.src.For(tenant),
		at:   a.e.secs(now),
	}
	if ex, ok := inner.(storage.ExemplarAppenderV2); ok {
		return &limitedExemplarAppender{limitedAppender: app, ex: ex}
	}
	return app
}

// limitedAppender is one request's appender: its tenant's state and
// limits are looked up once, when it is made.
type limitedAppender struct {
	next storage.AppenderV2
	e    *Enforcer
	st   *tenantState
	lim  Limits
	at   uint32

	samples int
	// reserved are the samples Reserve took from the bucket already.
	reserved int
	// created are the series this appender made active.
	created []uint64
}

var _ storage.AppenderV2 = (*limitedAppender)(nil)

func (a *limitedAppender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	hash := ls.Hash()
	created, err := a.e.seen(a.st, a.lim, ls.Get(model.MetricNameLabel), hash, a.at)
	if err != nil {
		return 0, err
	}
	if created {
		a.created = append(a.created, hash)
	}
	ref, err = a.next.Append(ref, ls, st, t, v, h, fh, opts)
	if err == nil || errors.Is(err, (*storage.AppendPartialError)(nil)) {
		a.samples++
	}
	return ref, err
}

// Reserve takes n samples from the tenant's ingestion_rate bucket before
// any is appended, so that a request over the rate is refused before it
// costs anything to decode and append; Commit then takes only what was
// appended beyond n. A refusal is the *LimitError; the caller appends
// nothing and rolls back.
func (a *limitedAppender) Reserve(n int) error {
	if err := a.e.allowSamples(a.st, a.lim, n, a.e.now()); err != nil {
		return err
	}
	a.reserved += n
	return nil
}

func (a *limitedAppender) Commit() error {
	if err := a.e.allowSamples(a.st, a.lim, a.samples-a.reserved, a.e.now()); err != nil {
		rerr := a.next.Rollback()
		a.forget()
		if rerr != nil {
			return errors.Join(err, fmt.Errorf("roll back: %w", rerr))
		}
		return err
	}
	if err := a.next.Commit(); err != nil {
		a.forget()
		return err
	}
	return nil
}

func (a *limitedAppender) Rollback() error {
	a.forget()
	return a.next.Rollback()
}

// forget stops counting the series this appender made active.
func (a *limitedAppender) forget() {
	for _, h := range a.created {
		a.e.forget(a.st, h)
	}
	a.created = nil
}

// limitedExemplarAppender keeps the inner appender's AppendExemplars.
// Exemplars follow their series' sample, which was checked by Append.
type limitedExemplarAppender struct {
	*limitedAppender
	ex storage.ExemplarAppenderV2
}

var _ storage.ExemplarAppenderV2 = (*limitedExemplarAppender)(nil)

func (a *limitedExemplarAppender) AppendExemplars(ref storage.SeriesRef, ls labels.Labels, exemplars []exemplar.Exemplar) (storage.SeriesRef, error) {
	return a.ex.AppendExemplars(ref, ls, exemplars)
}
