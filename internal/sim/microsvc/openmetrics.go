package microsvc

import (
	"github.com/vigil-obs/vigil/internal/openmetrics"

	"bufio"
	"io"
	"strings"
)

// writeOpenMetrics writes every family as OpenMetrics text: # HELP and
// # TYPE, then each series' samples in time order (timestamps in seconds,
// the k-th value at start + k·step), ending in # EOF. Families and series
// come in the order the run made them, so the bytes depend only on the
// run.
func writeOpenMetrics(w io.Writer, fams []*family, startMS, stepMS int64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	for _, f := range fams {
		if len(f.series) == 0 {
			continue
		}
		buf = append(buf[:0], "# HELP "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, helpEscaper.Replace(f.help)...)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, f.typ...)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		for _, s := range f.series {
			for k, v := range s.vals {
				buf = append(buf[:0], s.text...)
				buf = append(buf, ' ')
				buf = appendValue(buf, v)
				buf = append(buf, ' ')
				buf = appendSeconds(buf, startMS+int64(k)*stepMS)
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

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// appendValue and appendSeconds format a sample's value and timestamp.
func appendValue(b []byte, v float64) []byte { return openmetrics.AppendValue(b, v) }

func appendSeconds(b []byte, ms int64) []byte { return openmetrics.AppendSeconds(b, ms) }
