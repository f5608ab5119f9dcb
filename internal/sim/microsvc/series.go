package microsvc

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

// family is one metric family: its # TYPE and # HELP lines and its series
// in the order they were made.
type family struct {
	name, typ, help string
	series          []*series
}

// series is one time series: its labels, its text form, the value of
// every round for the OpenMetrics file (every series has a sample in
// every round), and its reference in the appender of a Run.
type series struct {
	fam  *family
	lset labels.Labels
	text string
	vals []float64
	ref  storage.SeriesRef
}

// sink collects one round's samples. In the first round put makes the
// series; later rounds put the same series in the same order, so the
// labels are only read once.
type sink struct {
	fams   []*family
	series []*series
	vals   []float64
	n      int
}

// family makes a family; families are written in the order they are made.
func (s *sink) family(name, typ, help string) *family {
	f := &family{name: name, typ: typ, help: help}
	s.fams = append(s.fams, f)
	return f
}

// begin starts a round.
func (s *sink) begin() { s.n = 0 }

// put records the next sample of the round: of family f's series name
// (the family name plus _total, _bucket, ... where the type has one) with
// the label pairs kv in the exporter's order.
func (s *sink) put(f *family, name string, kv []string, v float64) {
	if s.n == len(s.series) {
		s.series = append(s.series, newSeries(f, name, kv))
		s.vals = append(s.vals, 0)
	}
	s.vals[s.n] = v
	s.n++
}

func newSeries(f *family, name string, kv []string) *series {
	var b strings.Builder
	b.WriteString(name)
	lb := labels.NewScratchBuilder(len(kv)/2 + 1)
	lb.Add(model.MetricNameLabel, name)
	for i := 0; i+1 < len(kv); i += 2 {
		if i == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(kv[i+1]))
		b.WriteByte('"')
		lb.Add(kv[i], kv[i+1])
	}
	if len(kv) > 0 {
		b.WriteByte('}')
	}
	lb.Sort()
	s := &series{fam: f, lset: lb.Labels(), text: b.String()}
	f.series = append(f.series, s)
	return s
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// with returns kv with more pairs appended, in a new slice.
func with(kv []string, more ...string) []string {
	out := make([]string, 0, len(kv)+len(more))
	return append(append(out, kv...), more...)
}
