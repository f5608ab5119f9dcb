package topology

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/store"
)

// Source is what Build reads: a queryable store and the PromQL engine that
// evaluates over it. Build only reads through instant queries at the
// instant asked for, so no sample after it is seen.
type Source interface {
	storage.Queryable
	Engine() promql.QueryEngine
}

var (
	_ Source = (*store.Embedded)(nil)
	_ Source = (*store.Remote)(nil)
)

// builder holds the state of one Build.
type builder struct {
	src  Source
	cat  *catalog.Catalog
	at   time.Time
	opts Options
	warn *warnings

	kube  *kubeIndex
	hosts *nodeExporters
	dcgm  *dcgmIndex
	model *modelIndex
}

// Build reads the entity graph at at from src. cat supplies the label
// aliases of each exporter; nil means catalog.Default(). It fails only when
// a query fails or, with ErrNoData, when src holds no sample at or before at
// within opts.History; missing or ambiguous data gives warnings instead.
func Build(ctx context.Context, src Source, cat *catalog.Catalog, at time.Time, opts Options) (*Topology, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("topology options: %w", err)
	}
	if cat == nil {
		cat = catalog.Default()
	}
	b := &builder{src: src, cat: cat, at: at, opts: opts, warn: &warnings{}}
	// The sources are read concurrently: on a remote store each query is a
	// round trip, and on the embedded one the engine runs them in parallel.
	steps := []struct {
		what string
		run  func(context.Context) error
	}{
		{"read kube-state-metrics", b.readKube},
		{"read node-exporter", b.readNodeExporters},
		{"read dcgm-exporter", func(ctx context.Context) error {
			if err := b.readDCGM(ctx); err != nil {
				return err
			}
			return b.readHealth(ctx)
		}},
		{"read served models", b.readModels},
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		wg.Go(func() {
			if err := s.run(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", s.what, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if b.empty() {
		if err := b.checkData(ctx); err != nil {
			return nil, err
		}
	}
	return b.assemble(), nil
}

// empty reports whether no source named any entity.
func (b *builder) empty() bool {
	return len(b.kube.nodes) == 0 && len(b.kube.pods) == 0 && len(b.hosts.rows) == 0 &&
		len(b.dcgm.gpus) == 0 && len(b.model.rows) == 0
}

// checkData tells an empty store (ErrNoData) from one whose series name no
// entity Build knows (a warning).
func (b *builder) checkData(ctx context.Context) error {
	q, err := b.src.Querier(b.at.Add(-b.opts.History).UnixMilli(), b.at.UnixMilli())
	if err != nil {
		return fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	names, _, err := q.LabelValues(ctx, model.MetricNameLabel, nil)
	if err != nil {
		return fmt.Errorf("list metric names: %w", err)
	}
	if len(names) == 0 {
		return fmt.Errorf("%w at or before %s (looked back %s)", ErrNoData, b.at.UTC().Format(time.RFC3339), model.Duration(b.opts.History))
	}
	b.warn.add("no series of dcgm-exporter, kube-state-metrics, node-exporter or an inference server in the "+
		model.Duration(b.opts.Window).String()+" before the instant: the store holds other metrics only, so the topology is empty", "")
	return nil
}

// window is the PromQL range of "current" samples.
func (b *builder) window() string { return model.Duration(b.opts.Window).String() }

// each runs an instant query at b.at, its selectors looking back over the
// window, and calls fn for every sample of its vector result, before the
// query's memory is released. PromQL warnings (not infos) become topology
// warnings.
func (b *builder) each(ctx context.Context, qs string, fn func(lset labels.Labels, v float64)) error {
	return b.eachBack(ctx, qs, b.opts.Window, fn)
}

// eachBack is each with the selectors looking back over lookback. A plain
// selector with a lookback reads the latest sample before b.at as
// last_over_time does, without building a range of samples per series.
func (b *builder) eachBack(ctx context.Context, qs string, lookback time.Duration, fn func(lset labels.Labels, v float64)) error {
	warns, err := EachSample(ctx, b.src, qs, b.at, lookback, fn)
	for _, w := range warns {
		b.warn.add("the store warned: "+w.Error(), "")
	}
	return err
}

// EachSample evaluates qs at at, its selectors looking back over lookback,
// calls fn with each sample of the vector, and returns the store's
// warnings (PromQL's informational notes left out).
func EachSample(ctx context.Context, src Source, qs string, at time.Time, lookback time.Duration, fn func(lset labels.Labels, v float64)) ([]error, error) {
	opts := promql.NewPrometheusQueryOpts(false, lookback, nil)
	q, err := src.Engine().NewInstantQuery(ctx, src, opts, qs, at)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", qs, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("query %s: %w", qs, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", qs, err)
	}
	for _, s := range vec {
		fn(s.Metric, s.F)
	}
	var warns []error
	for _, w := range res.Warnings {
		if !errors.Is(w, annotations.PromQLInfo) {
			warns = append(warns, w)
		}
	}
	return warns, nil
}
