package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Errors a caller tells apart.
var (
	// ErrUnknownSignal is a signal name the catalog does not have.
	ErrUnknownSignal = errors.New("unknown signal")
	// ErrNoSource means none of the signal's metrics is in the store.
	ErrNoSource = errors.New("no source of the signal in the store")
)

// MetricSet is the set of metric names a store holds (the values of its
// __name__ label).
type MetricSet map[string]struct{}

// NewMetricSet returns the set of names.
func NewMetricSet(names ...string) MetricSet {
	s := make(MetricSet, len(names))
	for _, n := range names {
		s[n] = struct{}{}
	}
	return s
}

// Has reports whether name is in the set.
func (s MetricSet) Has(name string) bool {
	_, ok := s[name]
	return ok
}

// QueryOptions shape generated PromQL.
type QueryOptions struct {
	// Window is the range of rate() (default 5m).
	Window time.Duration
	// Quantile is read from histograms and summaries (default 0.95).
	Quantile float64
	// By are the canonical entity keys to keep (default: those of the
	// signal's level, see LevelKeys); the source's meaningful labels are
	// always kept.
	By []string
}

func (o QueryOptions) withDefaults() QueryOptions {
	if o.Window <= 0 {
		o.Window = 5 * time.Minute
	}
	if o.Quantile <= 0 || o.Quantile > 1 {
		o.Quantile = 0.95
	}
	return o
}

// Query is PromQL reading one signal from one source.
type Query struct {
	Signal *Signal
	Source Source
	// Expr is the PromQL expression, in the signal's canonical unit.
	Expr string
	// By are the label names the result is grouped by, as stored.
	By []string
}

// LevelKeys returns the canonical keys that identify a series of a level.
func LevelKeys(l Level) []string {
	switch l {
	case LevelNode:
		return []string{KeyNode}
	case LevelGPU:
		return []string{KeyNode, KeyGPU, KeyUUID, KeyGPUInstance}
	case LevelGPUInstance:
		return []string{KeyNode, KeyGPU, KeyUUID, KeyGPUInstance}
	case LevelPod:
		return []string{KeyNamespace, KeyPod}
	case LevelContainer:
		return []string{KeyNamespace, KeyPod, KeyContainer}
	case LevelModel:
		return []string{KeyModel, KeyNamespace, KeyPod}
	case LevelService:
		return []string{KeyService, KeyNamespace, KeyModel}
	case LevelWorkload, LevelJob:
		return []string{KeyNamespace, KeyWorkload}
	case LevelTenant:
		return []string{KeyTenant}
	}
	return nil
}

// PromQL returns the query for a signal from the first of its sources, in
// preference order, that the store holds.
func (c *Catalog) PromQL(signal string, have MetricSet, opts QueryOptions) (Query, error) {
	qs, err := c.Queries(signal, have, opts)
	if err != nil {
		return Query{}, err
	}
	return qs[0], nil
}

// Queries returns a query for each source of a signal the store holds, in
// preference order (a cluster may run vLLM and SGLang side by side).
func (c *Catalog) Queries(signal string, have MetricSet, opts QueryOptions) ([]Query, error) {
	sig, ok := c.byName[signal]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownSignal, signal)
	}
	var out []Query
	for _, src := range sig.Sources {
		if !present(src, *sig, have) {
			continue
		}
		out = append(out, c.query(sig, src, opts.withDefaults()))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s (looked for %s)", ErrNoSource, signal, strings.Join(sourceNames(sig), ", "))
	}
	return out, nil
}

// SourceQuery returns the query for one given source of a signal.
func (c *Catalog) SourceQuery(sig *Signal, src Source, opts QueryOptions) Query {
	return c.query(sig, src, opts.withDefaults())
}

func present(src Source, sig Signal, have MetricSet) bool {
	switch src.TrueType(sig) {
	case Histogram:
		return have.Has(src.Metric+"_bucket") || have.Has(src.Metric)
	case Summary:
		return have.Has(src.Metric) || have.Has(src.Metric+"_count")
	}
	return have.Has(src.Metric)
}

func sourceNames(sig *Signal) []string {
	out := make([]string, 0, len(sig.Sources))
	for _, s := range sig.Sources {
		out = append(out, s.Metric)
	}
	return out
}

func (c *Catalog) query(sig *Signal, src Source, o QueryOptions) Query {
	keys := o.By
	if keys == nil {
		keys = LevelKeys(sig.Level)
	}
	var by []string
	for _, k := range keys {
		for _, l := range c.GroupLabels(src.Vocabulary, k) {
			if !slices.Contains(by, l) {
				by = append(by, l)
			}
		}
	}
	for _, l := range src.Labels {
		if !slices.Contains(by, l) {
			by = append(by, l)
		}
	}
	window := model.Duration(o.Window).String()
	agg := sig.Agg
	if agg == "" {
		agg = Sum
	}
	var expr string
	switch src.TrueType(*sig) {
	case Counter:
		expr = fmt.Sprintf("sum by (%s) (rate(%s[%s]))", strings.Join(by, ", "), selector(src.Metric), window)
	case Histogram:
		expr = fmt.Sprintf("histogram_quantile(%s, sum by (%s) (rate(%s[%s])))", formatFloat(o.Quantile),
			strings.Join(append([]string{"le"}, by...), ", "), selector(src.Metric+"_bucket"), window)
	case Summary:
		expr = fmt.Sprintf("%s by (%s) (%s)", agg, strings.Join(by, ", "),
			selectorWith(src.Metric, `quantile="`+formatFloat(o.Quantile)+`"`))
	case Info:
		expr = selector(src.Metric)
	default: // Gauge, StateSet: as is, one series per entity.
		expr = fmt.Sprintf("%s by (%s) (%s)", agg, strings.Join(by, ", "), selector(src.Metric))
	}
	if f := src.Factor(); f != 1 {
		expr = fmt.Sprintf("(%s) * %s", expr, formatFloat(f))
	}
	return Query{Signal: sig, Source: src, Expr: expr, By: by}
}

// selector writes a metric name as a PromQL selector, quoting names that are
// not legacy metric names (UTF-8 names such as OpenTelemetry's dotted ones).
func selector(name string) string { return selectorWith(name, "") }

func selectorWith(name, matchers string) string {
	if model.LegacyValidation.IsValidMetricName(name) {
		if matchers == "" {
			return name
		}
		return name + "{" + matchers + "}"
	}
	q := strconv.Quote(name)
	if matchers == "" {
		return "{" + q + "}"
	}
	return "{" + q + ", " + matchers + "}"
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
