package sim

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/openmetrics"
)

// writeOpenMetrics writes every recorded sample as OpenMetrics text: one
// block per family (# HELP, # TYPE, then each series' samples in time
// order, timestamps in seconds), ending in # EOF. Families and series come
// in the order the run made them, so the bytes depend only on the run.
func writeOpenMetrics(w io.Writer, reg *registry) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	for _, f := range reg.fams {
		if !hasSamples(f) {
			continue
		}
		buf = append(buf[:0], "# HELP "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, escapeHelp(f.help)...)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, f.typ...)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		for _, s := range f.series {
			for _, p := range s.samples {
				buf = append(buf[:0], s.text...)
				buf = append(buf, ' ')
				buf = appendValue(buf, p.v)
				buf = append(buf, ' ')
				buf = appendSeconds(buf, p.t)
				buf = append(buf, '\n')
				if _, err := bw.Write(buf); err != nil {
					return err
				}
			}
		}
	}
	if _, err := bw.WriteString("# EOF\n"); err != nil {
		return err
	}
	return bw.Flush()
}

func hasSamples(f *family) bool {
	for _, s := range f.series {
		if len(s.samples) > 0 {
			return true
		}
	}
	return false
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// dcgmInt64NotSupported is DCGM_INT64_NOT_SUPPORTED as a float64 sample.
var dcgmInt64NotSupported = float64(catalog.DCGMInt64Blank + 2)

// appendValue formats a sample value the way exporters print it: whole
// numbers without a fraction, others in the shortest form.
func appendValue(b []byte, v float64) []byte {
	if v == dcgmInt64NotSupported {
		// dcgm-exporter prints DCGM's int64 blanks as integers; every one
		// is 2^63 once parsed.
		return strconv.AppendInt(b, catalog.DCGMInt64Blank+2, 10)
	}
	return openmetrics.AppendValue(b, v)
}

// appendSeconds formats a millisecond timestamp in seconds.
func appendSeconds(b []byte, ms int64) []byte { return openmetrics.AppendSeconds(b, ms) }
