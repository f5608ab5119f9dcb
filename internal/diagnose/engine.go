package diagnose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/kinds"
	"github.com/vigil-obs/vigil/internal/topology"
)

// Source is what the engine reads: a queryable store and its PromQL engine
// (the embedded store, a remote Prometheus-compatible API, or a temporary
// store loaded from files).
type Source = topology.Source

// ErrNoData is returned when the source holds no sample at or before the
// evaluation time within the window: `vigil diagnose` exits 2 on it.
var ErrNoData = errors.New("no data at or before the evaluation time")

// Options configure the engine.
type Options struct {
	// Window is how far back from the evaluation time to look (default 1h).
	Window time.Duration
	// Step is the resolution the engine reads series at (default 30s,
	// dcgm-exporter's default interval). A series sampled two steps apart
	// or more is read once a sample, not once a step (the generic layer's
	// history, persistence and increases count its samples).
	Step time.Duration
	// EntityLabel switches on the generic layer: the entities named by this
	// label are ranked as metric_anomaly causes.
	EntityLabel string
	// TenantLabel is the pod label that names a tenant (see topology).
	TenantLabel string
	// Catalog supplies the vocabularies (nil: catalog.Default()).
	Catalog *catalog.Catalog
	// CheckpointMax is how long a job-wide pause of a training job may last
	// and still be a checkpoint when the job took no earlier pause in the
	// window to learn its checkpoints from (default DefaultCheckpointMax).
	CheckpointMax time.Duration
	// Logger gets the engine's debug logs (nil: discarded).
	Logger *slog.Logger
}

// DefaultWindow is the default of Options.Window.
const DefaultWindow = time.Hour

// DefaultStep is the default of Options.Step.
const DefaultStep = 30 * time.Second

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Step <= 0 {
		o.Step = DefaultStep
	}
	if o.Catalog == nil {
		o.Catalog = catalog.Default()
	}
	if o.CheckpointMax <= 0 {
		o.CheckpointMax = DefaultCheckpointMax
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.Step > o.Window {
		return fmt.Errorf("step %s is longer than the window %s", o.Step, o.Window)
	}
	if o.Window/o.Step > 11000 {
		return fmt.Errorf("window %s holds more than 11000 steps of %s", o.Window, o.Step)
	}
	return nil
}

// Engine diagnoses. It holds no state between calls: the same data and
// evaluation time give the same Report.
type Engine struct {
	opts Options
	// reads are the registry's signal reads (prefetched), declared the
	// signals of them (nothing else may be read).
	reads    []kinds.Read
	declared map[string]bool
}

// errUndeclared is a read of a signal no kind declares: a programming
// error that tests catch.
var errUndeclared = errors.New("undeclared signal")

// New returns an engine.
func New(opts Options) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{opts: opts.withDefaults(), reads: kinds.Reads(), declared: map[string]bool{}}
	for _, r := range e.reads {
		e.declared[r.Signal] = true
	}
	return e, nil
}

// Diagnose reads src over the window ending at at and returns the
// diagnosis. It fails with ErrNoData when src holds nothing at or before
// at within the window, and with the query's error when a query fails;
// missing vocabularies give warnings, not errors.
func (e *Engine) Diagnose(ctx context.Context, src Source, at time.Time) (*Report, error) {
	at = at.UTC().Truncate(time.Millisecond)
	began := time.Now()
	v, err := e.open(ctx, src, at)
	if err != nil {
		return nil, err
	}
	rep := &Report{At: at, Symptoms: []Symptom{}, Causes: []Cause{}, Findings: []Cause{}, Warnings: []string{}}
	// Span metrics and the service graph are a vocabulary too, unless an
	// entity label asks for the generic layer: then the graph is what it
	// walks.
	requestPath := v.have.Has(graphRequests) || v.have.Has(spanCalls)
	known := len(v.knownVocabularies()) > 0 || v.have.Has(metricAccuracy) || v.have.Has(metricDrift) ||
		v.have.Has(metricLogEvents) || v.have.Has(metricLogXID) || requestPath && e.opts.EntityLabel == ""
	blind := !known && e.opts.EntityLabel == ""
	if blind {
		v.warnf("no known vocabulary in the data (dcgm-exporter, kube-state-metrics, node-exporter, vLLM, ...): nothing to diagnose; to rank the entities of any metrics, name their label with --entity-label (e.g. --entity-label service)")
	}
	var cands []*candidate
	var an *analysis
	if known {
		if err := v.prefetch(ctx, v.specs()); err != nil {
			return nil, err
		}
		an = &analysis{v: v}
		if err := an.run(ctx); err != nil {
			return nil, err
		}
		rep.Symptoms = an.symptoms()
		cands = an.cands
	}
	if e.opts.EntityLabel != "" {
		gc, err := v.generic(ctx, e.opts.EntityLabel)
		if err != nil {
			return nil, err
		}
		cands = append(cands, gc...)
	}
	rank(rep, cands)
	rep.Warnings = append(rep.Warnings, v.warn...)
	if rep.Coverage, err = v.coverage(ctx, an, blind); err != nil {
		return nil, err
	}
	rep.Healthy = !slices.ContainsFunc(rep.Symptoms, Symptom.Current)
	for _, c := range append(slices.Clone(rep.Causes), rep.Findings...) {
		if c.Confidence >= 0.5 {
			rep.Healthy = false
		}
	}
	if blind {
		rep.Healthy = false // a verdict of healthy needs the layers to be present
	}
	e.opts.Logger.Debug("diagnosed", "at", at, "metrics", len(v.have), "reads", len(v.cache),
		"symptoms", len(rep.Symptoms), "causes", len(rep.Causes), "findings", len(rep.Findings),
		"took", time.Since(began).Round(time.Millisecond))
	return rep, nil
}

// open reads what every diagnosis needs first: the metric names of the
// window and the topology at at.
func (e *Engine) open(ctx context.Context, src Source, at time.Time) (*view, error) {
	n := int(e.opts.Window/e.opts.Step) + 1
	v := &view{e: e, src: src, at: at, step: e.opts.Step, n: n, cache: map[string]*table{}, addrs: map[string]string{}}
	v.start = at.Add(-time.Duration(n-1) * e.opts.Step)
	names, err := metricNames(ctx, src, v.start.Add(-lookbackFor(e.opts.Step)), at)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no sample between %s and %s", ErrNoData,
			v.start.Format(time.RFC3339), at.Format(time.RFC3339))
	}
	v.have = catalog.NewMetricSet(names...)
	topo, err := topology.Build(ctx, src, e.opts.Catalog, at, topology.Options{
		Window: 5 * time.Minute, History: max(e.opts.Window, 5*time.Minute), TenantLabel: e.opts.TenantLabel})
	switch {
	case errors.Is(err, topology.ErrNoData):
		topo = &topology.Topology{At: at}
	case err != nil:
		return nil, fmt.Errorf("read topology: %w", err)
	}
	v.topo = topo
	if len(v.knownVocabularies()) > 0 {
		for _, w := range topo.Warnings {
			v.warnf("%s", w)
		}
	}
	for _, node := range topo.Nodes {
		if node.Name == "" {
			continue
		}
		for _, id := range node.Identities {
			v.addrs[id.Value] = node.Name
			if h, _, err := net.SplitHostPort(id.Value); err == nil {
				v.addrs[h] = node.Name
			}
		}
	}
	return v, nil
}

// metricNames lists the metric names with a sample in [from, to].
func metricNames(ctx context.Context, src Source, from, to time.Time) ([]string, error) {
	q, err := src.Querier(from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	names, _, err := q.LabelValues(ctx, model.MetricNameLabel, nil)
	if err != nil {
		return nil, fmt.Errorf("list metric names: %w", err)
	}
	return names, nil
}

// knownVocabularies lists the vocabularies of the catalog the data speaks.
func (v *view) knownVocabularies() []catalog.Vocabulary {
	seen := map[catalog.Vocabulary]bool{}
	var out []catalog.Vocabulary
	for name := range v.have {
		if _, ok := v.e.opts.Catalog.Lookup(name); !ok {
			continue
		}
		voc, ok := v.e.opts.Catalog.Vocabulary(name)
		if ok && !seen[voc] {
			seen[voc] = true
			out = append(out, voc)
		}
	}
	slices.Sort(out)
	return out
}
