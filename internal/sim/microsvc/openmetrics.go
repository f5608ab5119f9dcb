package microsvc

import (
	"bufio"
	"io"
	"math"
	"strconv"
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

// appendValue formats a sample value the way exporters print it: whole
// numbers without a fraction, others in the shortest form.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.AppendInt(b, int64(v), 10)
	case math.Abs(v) >= 1e-4 && math.Abs(v) < 1e15:
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendSeconds formats a millisecond timestamp in seconds.
func appendSeconds(b []byte, ms int64) []byte {
	b = strconv.AppendInt(b, ms/1000, 10)
	if r := ms % 1000; r != 0 {
		b = append(b, '.')
		b = append(b, byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
	}
	return b
}
