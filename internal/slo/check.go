package slo

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Lookup reports what a store holds of one metric name: whether it has
// series, and the distinct finite values of their le label (a histogram's
// _bucket series).
type Lookup func(ctx context.Context, metric string) (exists bool, les []float64, err error)

// StoreLookup looks metrics up in a store (Vigil's embedded store, a remote
// Prometheus-compatible API) between from and to, through label values
// alone: no samples are read.
func StoreLookup(q storage.Queryable, from, to time.Time) Lookup {
	return func(ctx context.Context, metric string) (bool, []float64, error) {
		qr, err := q.Querier(from.UnixMilli(), to.UnixMilli())
		if err != nil {
			return false, nil, fmt.Errorf("look up %s: %w", metric, err)
		}
		defer qr.Close()
		m := labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, metric)
		names, _, err := qr.LabelValues(ctx, model.MetricNameLabel, nil, m)
		if err != nil {
			return false, nil, fmt.Errorf("look up %s: %w", metric, err)
		}
		if len(names) == 0 {
			return false, nil, nil
		}
		vals, _, err := qr.LabelValues(ctx, model.BucketLabel, nil, m)
		if err != nil {
			return true, nil, fmt.Errorf("look up the le bounds of %s: %w", metric, err)
		}
		var les []float64
		for _, v := range vals {
			if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) {
				les = append(les, f)
			}
		}
		slices.Sort(les)
		return true, les, nil
	}
}

// Warning is a problem CheckMetrics finds: the spec is valid, but an SLO
// would never fire or would read the wrong bucket.
type Warning struct {
	// SLO is the SLO's name.
	SLO string
	// File and Line locate Field in the spec's YAML, when it has one.
	File  string
	Line  int
	Field string
	Msg   string
}

// String formats the warning as file:line: field (slo): message.
func (w Warning) String() string {
	fe := FieldError{File: w.File, Line: w.Line, Field: w.Field, Msg: w.Msg}
	if w.SLO != "" {
		fe.Field += " (" + w.SLO + ")"
	}
	return fe.Error()
}

// CheckMetrics checks a spec against a store: it warns about each SLO none
// of whose metrics has series (its rules would evaluate to nothing and never
// fire), and each latency threshold that is not an le bound of a histogram
// the store holds. Sources are alternatives, so one present is enough; a
// PromQL SLI (ratio, gauge expr) needs one of the metrics it selects.
func CheckMetrics(ctx context.Context, spec *Spec, lookup Lookup) ([]Warning, error) {
	p := newParser()
	var out []Warning
	for i := range spec.SLOs {
		s := &spec.SLOs[i]
		path := fmt.Sprintf("slos[%d].sli.%s", i, s.Kind())
		warn := func(field, format string, args ...any) {
			out = append(out, Warning{SLO: s.Name, File: spec.file, Line: lineOf(spec.lines, field), Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		var names []string
		les := map[string][]float64{}
		switch {
		case s.SLI.Ratio != nil:
			errs, _ := windowed(s.SLI.Ratio.Errors, "5m")
			total, _ := windowed(s.SLI.Ratio.Total, "5m")
			names = mergeNames(metricNames(p, errs), metricNames(p, total))
		case s.SLI.Gauge != nil && s.SLI.Gauge.Expr != "":
			names = metricNames(p, s.SLI.Gauge.Expr)
		default:
			for _, src := range s.sources() {
				name := src.Metric
				if s.SLI.Latency != nil {
					name += "_bucket"
				}
				names = append(names, name)
			}
		}
		found := false
		for _, name := range names {
			ok, le, err := lookup(ctx, name)
			if err != nil {
				return out, fmt.Errorf("check SLO %s: %w", s.Name, err)
			}
			found = found || ok
			if ok && s.SLI.Latency != nil {
				les[strings.TrimSuffix(name, "_bucket")] = le
			}
		}
		if !found {
			warn(path, "no series of %s in the store: its rules would never fire", orList(names))
			continue
		}
		if s.SLI.Latency != nil {
			for _, src := range s.sources() {
				if le := les[src.Metric]; len(le) > 0 {
					if msg := offBucket(s.SLI.Latency.Threshold, src, le); msg != "" {
						warn(path+".threshold", "%s", msg)
					}
				}
			}
		}
	}
	return out, nil
}

func mergeNames(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// orList writes a, b or c.
func orList(names []string) string {
	switch len(names) {
	case 0:
		return "its metrics"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
