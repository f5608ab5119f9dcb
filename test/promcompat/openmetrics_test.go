package promcompat

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// omFile is an OpenMetrics file being built in memory. Samples are added in
// any order of series but in time order within a series; write groups them
// by metric family, as OpenMetrics requires.
type omFile struct {
	families []*omFamily
	byName   map[string]*omFamily
}

// omFamily is one metric family: a TYPE line and its series.
type omFamily struct {
	name   string
	typ    string
	series []*omSeries
	byKey  map[string]*omSeries
}

// omSeries is one series with its samples in time order.
type omSeries struct {
	// text is the series as written: name{label="value",...}.
	text    string
	samples []omSample
}

// omSample is one sample; t is in milliseconds.
type omSample struct {
	t int64
	v float64
}

func newOMFile() *omFile {
	return &omFile{byName: map[string]*omFamily{}}
}

// family returns the family called name, creating it with type typ ("" for
// unknown). An existing family keeps the type it was created with.
func (f *omFile) family(name, typ string) *omFamily {
	if fam, ok := f.byName[name]; ok {
		if fam.typ == "" {
			fam.typ = typ
		}
		return fam
	}
	fam := &omFamily{name: name, typ: typ, byKey: map[string]*omSeries{}}
	f.families = append(f.families, fam)
	f.byName[name] = fam
	return fam
}

// add appends a sample at t (milliseconds) to the series whose text is
// series (name{label="value",...}, as seriesText writes it).
func (fam *omFamily) add(series string, t int64, v float64) {
	s, ok := fam.byKey[series]
	if !ok {
		s = &omSeries{text: series}
		fam.byKey[series] = s
		fam.series = append(fam.series, s)
	}
	s.samples = append(s.samples, omSample{t: t, v: v})
}

// samples counts the samples of the file.
func (f *omFile) samples() int {
	n := 0
	for _, fam := range f.families {
		for _, s := range fam.series {
			n += len(s.samples)
		}
	}
	return n
}

// write writes the file, checking that every series is in time order.
func (f *omFile) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, fam := range f.families {
		if fam.typ != "" {
			fmt.Fprintf(bw, "# TYPE %s %s\n", fam.name, fam.typ)
		}
		for _, s := range fam.series {
			prefix := s.text
			for i, smp := range s.samples {
				if i > 0 && smp.t <= s.samples[i-1].t {
					return fmt.Errorf("series %s: sample at %d is not after %d", prefix, smp.t, s.samples[i-1].t)
				}
				bw.WriteString(prefix)
				bw.WriteByte(' ')
				bw.WriteString(formatValue(smp.v))
				bw.WriteByte(' ')
				bw.WriteString(formatSeconds(smp.t))
				bw.WriteByte('\n')
			}
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

// seriesText formats name{labels} in OpenMetrics syntax; labels are name,
// value pairs in exposition order.
func seriesText(name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabelValue(labels[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabelValue(v string) string { return labelValueEscaper.Replace(v) }

// formatValue formats a sample value as OpenMetrics expects.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// formatSeconds formats a millisecond timestamp as OpenMetrics seconds with
// exactly three decimals.
func formatSeconds(ms int64) string {
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}
