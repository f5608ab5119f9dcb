// Package openmetrics formats the pieces of OpenMetrics text sample lines
// that Vigil writes (the simulators' dumps, translated OTLP input): values,
// timestamps in seconds and escaped label values, as `promtool tsdb
// create-blocks-from openmetrics` and `vigil import` read them. It does not
// parse (Prometheus's textparse does) and knows nothing of metric families.
package openmetrics

import (
	"math"
	"strconv"
	"strings"
)

// AppendValue appends a sample value: NaN and ±Inf spelled as OpenMetrics
// does, integers without a fraction, other values in the shortest form that
// reads back exactly.
func AppendValue(b []byte, v float64) []byte {
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

// AppendSeconds appends a millisecond timestamp in seconds (OpenMetrics'
// unit), with three decimals when it has milliseconds.
func AppendSeconds(b []byte, ms int64) []byte {
	b = strconv.AppendInt(b, ms/1000, 10)
	if r := ms % 1000; r != 0 {
		if r < 0 {
			r = -r
		}
		b = append(b, '.')
		b = append(b, byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
	}
	return b
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// EscapeLabelValue escapes a label value for between its double quotes.
func EscapeLabelValue(v string) string { return labelEscaper.Replace(v) }
