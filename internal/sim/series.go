package sim

import (
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// OpenMetrics types of families.
const (
	typeGauge     = "gauge"
	typeCounter   = "counter"
	typeHistogram = "histogram"
)

// family is one metric family as its exporter exposes it: the # TYPE and
// # HELP lines, and its series in the order they were created.
type family struct {
	name, typ, help string
	series          []*series
}

// series is one time series: its labels, its text form, and the samples
// recorded for the OpenMetrics file.
type series struct {
	fam     *family
	lset    labels.Labels
	text    string // name{labels} as written
	samples []sample
	ref     storage.SeriesRef
}

type sample struct {
	t int64 // milliseconds
	v float64
}

// registry holds the families of one run, in the order they were made, so
// that output is deterministic.
type registry struct {
	fams   []*family
	byName map[string]*family
}

func newRegistry() *registry { return &registry{byName: map[string]*family{}} }

// family returns the family name, making it on first use.
func (r *registry) family(name, typ, help string) *family {
	if f, ok := r.byName[name]; ok {
		return f
	}
	f := &family{name: name, typ: typ, help: help}
	r.fams = append(r.fams, f)
	r.byName[name] = f
	return f
}

// series makes a series of family f named name (the family name plus a
// suffix such as _total or _bucket) with the label pairs kv in the
// exporter's order; empty values are left out, as exporters do.
func (f *family) newSeries(name string, kv ...string) *series {
	var b strings.Builder
	b.WriteString(name)
	lb := labels.NewScratchBuilder(len(kv)/2 + 1)
	lb.Add(model.MetricNameLabel, name)
	first := true
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if first {
			b.WriteByte('{')
			first = false
		} else {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(kv[i+1]))
		b.WriteByte('"')
		lb.Add(kv[i], kv[i+1])
	}
	if !first {
		b.WriteByte('}')
	}
	lb.Sort()
	s := &series{fam: f, lset: lb.Labels(), text: b.String()}
	f.series = append(f.series, s)
	return s
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(v string) string {
	if !strings.ContainsAny(v, "\\\"\n") {
		return v
	}
	return labelEscaper.Replace(v)
}

// with returns kv with more pairs appended, in a new slice.
func with(kv []string, more ...string) []string {
	out := make([]string, 0, len(kv)+len(more))
	return append(append(out, kv...), more...)
}
