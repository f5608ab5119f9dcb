package robust

import (
	"math"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/openmetrics"
)

// Metric types as exporters declare them in # TYPE lines.
const (
	typeGauge     = "gauge"
	typeCounter   = "counter"
	typeHistogram = "histogram"
)

// staleNaN is Prometheus's staleness marker.
var staleNaN = math.Float64frombits(value.StaleNaN)

// family is one metric family: its # TYPE and # HELP and its series.
type family struct {
	name, typ, help string
	series          []*series
}

// series is one series, as the store and the text file know it.
type series struct {
	fam     *family
	lset    labels.Labels
	text    string // name{labels} for the text file
	ref     storage.SeriesRef
	samples []sample // kept only when writing the text file
}

type sample struct {
	t int64
	v float64
}

// registry holds every family and series a run made, in the order made.
type registry struct {
	fams   []*family
	byName map[string]*family
	byKey  map[string]*series
	record bool
	key    []byte
}

func newRegistry(record bool) *registry {
	return &registry{byName: map[string]*family{}, byKey: map[string]*series{}, record: record}
}

// family returns the family of a name, making it on first use.
func (r *registry) family(name, typ, help string) *family {
	if f, ok := r.byName[name]; ok {
		return f
	}
	f := &family{name: name, typ: typ, help: help}
	r.fams = append(r.fams, f)
	r.byName[name] = f
	return f
}

// get returns the series of a sample name and label pairs (any order),
// making it on first use.
func (r *registry) get(f *family, name string, kv []string) *series {
	r.key = append(r.key[:0], name...)
	for _, s := range kv {
		r.key = append(r.key, 0xff)
		r.key = append(r.key, s...)
	}
	if s, ok := r.byKey[string(r.key)]; ok {
		return s
	}
	lset := labels.FromStrings(append([]string{model.MetricNameLabel, name}, kv...)...)
	s := &series{fam: f, lset: lset, text: seriesText(lset)}
	f.series = append(f.series, s)
	r.byKey[string(r.key)] = s
	return s
}

// seriesText is name{a="x",b="y"} with the labels in order.
func seriesText(lset labels.Labels) string {
	var sb strings.Builder
	sb.WriteString(lset.Get(model.MetricNameLabel))
	first := true
	lset.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		if first {
			sb.WriteByte('{')
			first = false
		} else {
			sb.WriteByte(',')
		}
		sb.WriteString(l.Name)
		sb.WriteString(`="`)
		sb.WriteString(openmetrics.EscapeLabelValue(l.Value))
		sb.WriteByte('"')
	})
	if !first {
		sb.WriteByte('}')
	}
	return sb.String()
}

// point is one sample of a round.
type point struct {
	s *series
	t int64
	v float64
}

// merge applies Prometheus's target labels to a scraped sample's labels:
// with honor_labels the scraped value wins a clash, else it is kept as
// exported_NAME and the target's wins. Target labels the sample lacks
// are added either way.
func merge(scraped, target []string, honor bool) []string {
	out := make([]string, 0, len(scraped)+len(target))
	has := func(kv []string, name string) int {
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == name {
				return i
			}
		}
		return -1
	}
	out = append(out, scraped...)
	for i := 0; i < len(target); i += 2 {
		name, val := target[i], target[i+1]
		j := has(out, name)
		switch {
		case j < 0:
			out = append(out, name, val)
		case honor:
		default:
			out[j] = "exported_" + name
			out = append(out, name, val)
		}
	}
	return out
}

// sortedFamilies returns the families with samples in the order made.
func (r *registry) sortedFamilies() []*family {
	out := slices.Clone(r.fams)
	return slices.DeleteFunc(out, func(f *family) bool {
		for _, s := range f.series {
			if len(s.samples) > 0 {
				return false
			}
		}
		return true
	})
}
