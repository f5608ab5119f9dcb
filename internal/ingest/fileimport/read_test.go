package fileimport_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/store"
)

// fixtures is where the real scrapes live (see testdata/exposition/SOURCES.md).
const fixtures = "../../../testdata/exposition"

// at is the time given to samples without a timestamp.
var at = time.Date(2026, 11, 12, 2, 50, 30, 0, time.UTC)

func opts() fileimport.Options { return fileimport.DefaultOptions(at) }

func TestReadFormats(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		format     fileimport.Format
		want       fileimport.Format
		series     int
		samples    int
		duplicates int
		minT, maxT int64
	}{
		{
			name: "openmetrics seconds",
			in: "# TYPE jobs counter\n# HELP jobs Jobs run.\njobs_total{q=\"a\"} 1 1700000000\n" +
				"jobs_total{q=\"a\"} 2 1700000015.5\njobs_total{q=\"b\"} 7 1700000030.25\n# EOF\n",
			want: fileimport.FormatOpenMetrics, series: 2, samples: 3,
			minT: 1700000000000, maxT: 1700000030250,
		},
		{
			name: "prometheus milliseconds",
			in:   "# HELP up Up.\n# TYPE up gauge\nup{job=\"a\"} 1 1700000000000\nup{job=\"a\"} 0 1700000015000\n",
			want: fileimport.FormatPrometheus, series: 1, samples: 2,
			minT: 1700000000000, maxT: 1700000015000,
		},
		{
			name: "no timestamps are taken at the default time",
			in:   "up{job=\"a\"} 1\nup{job=\"b\"} 0\n",
			want: fileimport.FormatPrometheus, series: 2, samples: 2,
			minT: at.UnixMilli(), maxT: at.UnixMilli(),
		},
		{
			name: "openmetrics without timestamps",
			in:   "up{job=\"a\"} 1\n# EOF\n",
			want: fileimport.FormatOpenMetrics, series: 1, samples: 1,
			minT: at.UnixMilli(), maxT: at.UnixMilli(),
		},
		{
			name: "mixed timestamps and none",
			in:   "a 1 1700000000000\nb 2\n",
			want: fileimport.FormatPrometheus, series: 2, samples: 2,
			minT: 1700000000000, maxT: at.UnixMilli(),
		},
		{
			name: "identical duplicates are counted and kept once",
			in:   "a 1 1700000000000\na 1 1700000000000\nb NaN 1700000000000\nb NaN 1700000000000\na 2 1700000001000\n",
			want: fileimport.FormatPrometheus, series: 2, samples: 3, duplicates: 2,
			minT: 1700000000000, maxT: 1700000001000,
		},
		{
			name: "a label with an empty value is no label",
			in:   "a 1 1700000000000\na{x=\"\"} 2 1700000001000\n",
			want: fileimport.FormatPrometheus, series: 1, samples: 2,
			minT: 1700000000000, maxT: 1700000001000,
		},
		{
			name:   "forced prometheus reads # EOF as a comment",
			in:     "a 1 1700000000000\n# EOF\n",
			format: fileimport.FormatPrometheus,
			want:   fileimport.FormatPrometheus, series: 1, samples: 1,
			minT: 1700000000000, maxT: 1700000000000,
		},
		{
			name:   "forced openmetrics",
			in:     "a 1 1700000000\n# EOF\n",
			format: fileimport.FormatOpenMetrics,
			want:   fileimport.FormatOpenMetrics, series: 1, samples: 1,
			minT: 1700000000000, maxT: 1700000000000,
		},
		{
			name: "empty file",
			in:   "",
			want: fileimport.FormatPrometheus,
		},
		{
			name: "blank lines and comments only",
			in:   "\n# a comment\n   \n\t\n",
			want: fileimport.FormatPrometheus,
		},
		{
			name: "no final newline",
			in:   "a 1 1700000000000",
			want: fileimport.FormatPrometheus, series: 1, samples: 1,
			minT: 1700000000000, maxT: 1700000000000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Format = tt.format
			f, err := fileimport.Read("in.txt", strings.NewReader(tt.in), o)
			require.NoError(t, err)
			require.Equal(t, "in.txt", f.Name)
			require.Equal(t, tt.want, f.Format)
			require.Equal(t, tt.series, f.Series, "series")
			require.Equal(t, tt.samples, f.Samples, "samples")
			require.Equal(t, tt.duplicates, f.Duplicates, "duplicates")
			require.Equal(t, tt.minT, f.MinT, "MinT")
			require.Equal(t, tt.maxT, f.MaxT, "MaxT")
		})
	}
}

func TestFormatString(t *testing.T) {
	require.Equal(t, "OpenMetrics", fileimport.FormatOpenMetrics.String())
	require.Equal(t, "Prometheus text", fileimport.FormatPrometheus.String())
	require.Equal(t, "auto", fileimport.FormatAuto.String())
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestReadGzip(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join(fixtures, "vllm.prom"))
	require.NoError(t, err)
	want, err := fileimport.Read("vllm.prom", bytes.NewReader(plain), opts())
	require.NoError(t, err)
	compressed := gz(t, plain)

	t.Run("detected by magic bytes whatever the name", func(t *testing.T) {
		f, err := fileimport.Read("vllm.txt", bytes.NewReader(compressed), opts())
		require.NoError(t, err)
		require.Equal(t, fileimport.FormatPrometheus, f.Format)
		require.Equal(t, want.Series, f.Series)
		require.Equal(t, want.Samples, f.Samples)
	})
	t.Run("openmetrics inside gzip", func(t *testing.T) {
		f, err := fileimport.Read("om.gz", bytes.NewReader(gz(t, []byte("a 1 1700000000\n# EOF\n"))), opts())
		require.NoError(t, err)
		require.Equal(t, fileimport.FormatOpenMetrics, f.Format)
		require.Equal(t, int64(1700000000000), f.MinT)
	})
	t.Run("truncated", func(t *testing.T) {
		_, err := fileimport.Read("vllm.prom.gz", bytes.NewReader(compressed[:len(compressed)/2]), opts())
		require.ErrorContains(t, err, "read vllm.prom.gz: gzip stream is truncated or corrupt")
	})
	t.Run("only the magic bytes", func(t *testing.T) {
		_, err := fileimport.Read("x.gz", bytes.NewReader(compressed[:2]), opts())
		require.ErrorContains(t, err, "read x.gz: gzip")
	})
	t.Run("corrupt checksum", func(t *testing.T) {
		bad := bytes.Clone(compressed)
		bad[len(bad)-6] ^= 0xff // in the CRC-32 of the trailer
		_, err := fileimport.Read("x.gz", bytes.NewReader(bad), opts())
		require.ErrorContains(t, err, "gzip stream is truncated or corrupt")
	})
	t.Run("larger than MaxBytes once decompressed", func(t *testing.T) {
		o := opts()
		o.MaxBytes = int64(len(plain)) - 1
		_, err := fileimport.Read("vllm.prom.gz", bytes.NewReader(compressed), o)
		require.ErrorContains(t, err, "read vllm.prom.gz: larger than")
	})
}

// TestReadFixtures loads every real scrape, writes it and counts it back.
func TestReadFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.prom"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			fh, err := os.Open(path)
			require.NoError(t, err)
			defer fh.Close()
			f, err := fileimport.Read(path, fh, opts())
			require.NoError(t, err)
			require.Equal(t, fileimport.FormatPrometheus, f.Format)
			require.Positive(t, f.Series)
			require.Equal(t, f.Series, f.Samples, "one scrape: one sample per series")
			require.Equal(t, at.UnixMilli(), f.MinT)
			require.Equal(t, at.UnixMilli(), f.MaxT)

			s, err := fileimport.OpenTemp(t.Context(), []*fileimport.File{f}, func() time.Time { return at }, nil)
			require.NoError(t, err)
			defer s.Close()
			v, _, err := store.Query(t.Context(), s, `count({__name__=~".+"})`, at)
			require.NoError(t, err)
			require.Equal(t, float64(f.Series), scalarOf(t, v))
		})
	}
}

// TestReadSpecialValues checks that NaN and the infinities, legal in both
// formats, are stored exactly, and that strconv's spellings the parsers
// accept ("Nan", "Infinity") load too.
func TestReadSpecialValues(t *testing.T) {
	const base = 1700000000
	tests := []struct {
		name string
		in   string
	}{
		{"prometheus", "v{k=\"nan\"} NaN 1700000000000\nv{k=\"pinf\"} +Inf 1700000000000\nv{k=\"ninf\"} -Inf 1700000000000\n" +
			"v{k=\"nan2\"} Nan 1700000000000\nv{k=\"pinf2\"} Infinity 1700000000000\nv{k=\"ninf2\"} -infinity 1700000000000\n"},
		{"openmetrics", "v{k=\"nan\"} NaN 1700000000\nv{k=\"pinf\"} +Inf 1700000000\nv{k=\"ninf\"} -Inf 1700000000\n" +
			"v{k=\"nan2\"} Nan 1700000000\nv{k=\"pinf2\"} Infinity 1700000000\nv{k=\"ninf2\"} -infinity 1700000000\n# EOF\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := fileimport.Read("special", strings.NewReader(tt.in), opts())
			require.NoError(t, err)
			require.Equal(t, 6, f.Samples)
			s, err := fileimport.OpenTemp(t.Context(), []*fileimport.File{f}, nil, nil)
			require.NoError(t, err)
			defer s.Close()
			got := vectorOf(t, s, "v", time.Unix(base, 0), "k")
			require.Len(t, got, 6)
			for _, k := range []string{"nan", "nan2"} {
				require.True(t, math.IsNaN(got[k]), "%s: %v", k, got[k])
			}
			for _, k := range []string{"pinf", "pinf2"} {
				require.True(t, math.IsInf(got[k], 1), "%s: %v", k, got[k])
			}
			for _, k := range []string{"ninf", "ninf2"} {
				require.True(t, math.IsInf(got[k], -1), "%s: %v", k, got[k])
			}
		})
	}
}

// TestReadErrors feeds bad files: each must be a *LineError naming the file
// and the line, with a message that says what is wrong.
func TestReadErrors(t *testing.T) {
	long := strings.Repeat("x", 40)
	tests := []struct {
		name   string
		in     string
		format fileimport.Format
		mod    func(*fileimport.Options)
		line   int
		msg    string
	}{
		// Truncation and timestamp units.
		{name: "truncated openmetrics, forced", format: fileimport.FormatOpenMetrics,
			in:   "# TYPE a gauge\na 1 1700000000\na 2 1700000015\n",
			line: 3, msg: "data does not end with # EOF: the file is truncated"},
		{name: "truncated openmetrics, cut inside a line, forced", format: fileimport.FormatOpenMetrics,
			in:   "a 1 1700000000\na{x=\"y",
			line: 2, msg: "expected"},
		{name: "truncated openmetrics with seconds, detected", in: "# TYPE a gauge\na 1 1700000000\na 2 1700000015\n",
			line: 2, msg: `it looks like seconds; OpenMetrics files, whose timestamps are seconds, end with "# EOF"`},
		{name: "truncated openmetrics with fractional seconds, detected", in: "a 1 1700000000.5\n",
			line: 1, msg: `does not end with "# EOF": if it is OpenMetrics, it is truncated`},
		{name: "openmetrics in milliseconds", in: "a 1 1700000000\na 2 1700000015000\n# EOF\n",
			line: 2, msg: "OpenMetrics timestamps are seconds and this looks like milliseconds"},
		{name: "prometheus text in seconds", in: "# HELP a A.\n# TYPE a gauge\na 1 1700000000\n",
			line: 3, msg: "timestamp 1700000000 is 1970-01-20T16:13:20Z read as milliseconds (Prometheus text): it looks like seconds"},
		{name: "forced prometheus on openmetrics", format: fileimport.FormatPrometheus, in: "a 1 1700000000\n# EOF\n",
			line: 1, msg: "it looks like seconds"},
		{name: "timestamp too old", in: "a 1 1700000000000\na 1 100\n",
			line: 2, msg: "timestamp 1970-01-01T00:00:00.1Z is outside the plausible range 2000-01-01 to 2200-01-01"},
		{name: "timestamp too new", in: "a 1 99999999999999999\n",
			line: 1, msg: "is outside the plausible range"},
		{name: "timestamp that overflows when read as seconds", in: "a 1 9223372036854775807\n",
			line: 1, msg: "is outside the plausible range"},
		{name: "openmetrics timestamp too large for milliseconds", in: "a 1 1e30\n# EOF\n",
			line: 1, msg: "outside the plausible range"},
		{name: "openmetrics negative timestamp", in: "a 1 -5\n# EOF\n",
			line: 1, msg: "outside the plausible range"},
		{name: "no timestamp and an implausible default time", in: "a 1 1700000000000\nb 1\n",
			mod:  func(o *fileimport.Options) { o.DefaultTime = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC) },
			line: 2, msg: "sample has no timestamp and the time given to such samples, 1990-01-01T00:00:00Z, is outside the plausible range"},

		// Values.
		{name: "garbage value", in: "a 1\nb abc\n", line: 2, msg: `parsing "abc": invalid syntax`},
		{name: "underscore in value", in: "a 1_000\n", line: 1, msg: "unsupported character in float"},
		{name: "hex float with exponent", in: "a 0x1p3\n", line: 1, msg: "unsupported character in float"},
		{name: "inf with a trailing minus", in: "a inf-\n", line: 1, msg: `parsing "inf-": invalid syntax`},
		{name: "two dots", in: "a 1.2.3\n", line: 1, msg: "invalid syntax"},
		{name: "openmetrics garbage value", in: "a 1 1700000000\nb NaNa 1700000000\n# EOF\n", line: 2, msg: `parsing "NaNa": invalid syntax`},
		{name: "missing value", in: "a 1\nb\n", line: 2, msg: "expected value after metric"},

		// Label syntax.
		{name: "unclosed brace", in: "a 1\nb{c=\"d\" 1\n", line: 2, msg: "expected"},
		{name: "unquoted label value", in: "a{b=c} 1\n", line: 1, msg: "expected label value"},
		{name: "label without name", in: "a{=\"c\"} 1\n", line: 1, msg: "expected label name"},
		{name: "label name starting with a digit", in: "a{1b=\"c\"} 1\n", line: 1, msg: "expected label name"},
		{name: "empty quoted label name", in: "a 1\na{\"\"=\"x\"} 1\n", line: 2, msg: `invalid label name ""`},
		{name: "invalid UTF-8 in a label value", in: "a{b=\"ok\"} 1\na{b=\"\xff\xfe\"} 1\n", line: 2, msg: "invalid UTF-8 label value"},
		{name: "invalid UTF-8 in a label value, openmetrics", in: "a{b=\"\xff\"} 1\n# EOF\n", line: 1, msg: "invalid UTF-8 label value"},
		{name: "invalid UTF-8 in a quoted label name", in: "a{\"\xff\"=\"x\"} 1\n", line: 1, msg: "invalid label name"},
		{name: "duplicate label names", in: "a 1\na{b=\"1\",c=\"2\",b=\"3\"} 1\n", line: 2, msg: `label "b" appears twice`},
		{name: "no metric name", in: "{b=\"c\"} 1\n", line: 1, msg: "metric name not set"},
		{name: "too many labels", in: "a{b=\"1\",c=\"2\"} 1\na{b=\"1\",c=\"2\",d=\"3\"} 1\n",
			mod:  func(o *fileimport.Options) { o.MaxLabels = 3 },
			line: 2, msg: "series has 4 labels, more than the limit of 3"},
		{name: "label name too long", in: "a{" + long + "=\"v\"} 1\n",
			mod:  func(o *fileimport.Options) { o.MaxLabelNameLength = 39 },
			line: 1, msg: "is 40 bytes long, more than the limit of 39"},
		{name: "metric name too long", in: "a 1\n" + long + " 1\n",
			mod:  func(o *fileimport.Options) { o.MaxLabelNameLength = 8; o.MaxLabelValueLength = 39 },
			line: 2, msg: "value of label __name__ is 40 bytes long, more than the limit of 39"},
		{name: "label value too long", in: "a{b=\"" + long + "\"} 1\n",
			mod:  func(o *fileimport.Options) { o.MaxLabelValueLength = 39 },
			line: 1, msg: "value of label b is 40 bytes long, more than the limit of 39"},

		// Order and duplicates.
		{name: "duplicate with a different value", in: "a 1 1700000000000\nb 1 1700000000000\na 2 1700000001000\nb 1 1700000001000\na 3 1700000001000\n",
			line: 5, msg: `duplicate sample for {__name__="a"} at 2023-11-14T22:13:21Z with a different value (3 here, 2 at line 3)`},
		{name: "NaN then a number at the same time", in: "a NaN 1700000000000\na 1 1700000000000\n",
			line: 2, msg: "with a different value (1 here, NaN at line 1)"},
		{name: "out of order", in: "a{x=\"1\"} 1 1700000060000\na{x=\"2\"} 1 1700000000000\na{x=\"1\"} 2 1700000030000\n",
			line: 3, msg: `out-of-order sample for {__name__="a", x="1"}: timestamp 2023-11-14T22:13:50Z is older than 2023-11-14T22:14:20Z at line 1`},
		{name: "out of order through an empty label", in: "a 1 1700000060000\na{x=\"\"} 2 1700000000000\n",
			line: 2, msg: "out-of-order sample"},
		{name: "out of order, openmetrics", in: "a 1 1700000060\na 2 1700000000\n# EOF\n",
			line: 2, msg: "at line 1"},

		// Line numbers.
		{name: "error on the first line", in: "{ 1\na 1\nb 2\n", line: 1, msg: "expected"},
		{name: "error on the last line without a newline", in: "a 1\nb 2\nc{", line: 3, msg: "expected"},
		{name: "error on the last line with a newline", in: "a 1\nb 2\nc{\n", line: 3, msg: "expected"},
		{name: "blank lines and comments before", in: "# HELP a A.\n\n# just a comment\n\n  \t\n#\na 1\n\n\na{ 1\n", line: 10, msg: "expected label name"},
		{name: "help with escapes", in: "# HELP a back\\\\slash and \\n newline.\n# TYPE a gauge\na{b=} 1\n", line: 3, msg: "expected label value"},
		{name: "help with escapes, openmetrics", in: "# HELP a back\\\\slash \\\" and \\n.\n# TYPE a gauge\na{b=} 1\n# EOF\n", line: 3, msg: "expected label value"},
		{name: "quoted metric name in help", in: "# HELP \"my.metric\" M.\n{\"my.metric\"} 1\n{\"my.metric\" 1\n", line: 3, msg: "expected"},
		{name: "after a label value spanning lines", in: "a{x=\"1\ny\"} 1\nc{ 3\n", line: 3, msg: "expected label name"},
		{name: "blank line in openmetrics", in: "a 1 1700000000\n\nb 2 1700000000\n# EOF\n", line: 2, msg: "blank lines are not allowed in OpenMetrics"},
		{name: "plain comment in openmetrics", in: "a 1 1700000000\n# hello\n# EOF\n", line: 2, msg: "expected"},
		{name: "data after # EOF", in: "a 1 1700000000\n# EOF\nb 2 1700000000\n# EOF\n", line: 3, msg: "unexpected data after # EOF"},
		{name: "CRLF line endings", in: "# HELP a A.\r\n# TYPE a gauge\r\na 1 1700000000000\r\n",
			line: 2, msg: "Windows line endings are not valid"},
		{name: "CRLF on a sample line", in: "a 1 1700000000000\r\n", line: 1, msg: "the line ends in a carriage return"},
		{name: "CRLF blank line", in: "a 1 1700000000000\n\r\nb 1 1700000000000\n", line: 2, msg: "carriage return"},
		{name: "CRLF openmetrics", in: "a 1 1700000000\r\n# EOF\r\n", line: 1, msg: "carriage return"},
		{name: "carriage return inside a line", in: "a 1\nb\r 2\n", line: 2, msg: "the line holds a carriage return"},
		{name: "non-breaking space line", in: "a 1\n\u00a0\nb 2\n", line: 2, msg: "expected a valid start token"},
		{name: "NUL byte at the start of a line", in: "a 1 1700000000000\n\n\x00b 2 1700000000000\n", line: 3, msg: "NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Format = tt.format
			if tt.mod != nil {
				tt.mod(&o)
			}
			_, err := fileimport.Read("bad.prom", strings.NewReader(tt.in), o)
			var le *fileimport.LineError
			require.ErrorAs(t, err, &le)
			require.Equal(t, "bad.prom", le.File)
			require.Equal(t, tt.line, le.Line, "line of %v", err)
			require.ErrorContains(t, le.Err, tt.msg)
			require.True(t, strings.HasPrefix(err.Error(), "bad.prom:"), err.Error())
		})
	}
}

func TestLineErrorUnwrap(t *testing.T) {
	inner := os.ErrInvalid
	err := &fileimport.LineError{File: "f", Line: 3, Err: inner}
	require.ErrorIs(t, err, os.ErrInvalid)
	require.Equal(t, "f:3: invalid argument", err.Error())
}

// readerFunc adapts a function to io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

func TestReadReaderError(t *testing.T) {
	_, err := fileimport.Read("pipe", readerFunc(func([]byte) (int, error) { return 0, os.ErrClosed }), opts())
	require.ErrorIs(t, err, os.ErrClosed)
	require.ErrorContains(t, err, "read pipe:")
}

// TestReadOneByteReader reads through a reader that returns one byte at a
// time, so that the gzip magic straddles two reads.
func TestReadOneByteReader(t *testing.T) {
	data := gz(t, []byte("a 1 1700000000000\n"))
	f, err := fileimport.Read("slow", readerFunc(func(b []byte) (int, error) {
		if len(data) == 0 {
			return 0, io.EOF
		}
		b[0] = data[0]
		data = data[1:]
		return 1, nil
	}), opts())
	require.NoError(t, err)
	require.Equal(t, 1, f.Samples)
}

// TestInterval: the median gap between a series' samples, to the second,
// over every file; jitter and a missed scrape do not move it.
func TestInterval(t *testing.T) {
	read := func(text string) *fileimport.File {
		f, err := fileimport.Read("x.prom", strings.NewReader(text), fileimport.DefaultOptions(time.Unix(2_000_000_000, 0)))
		require.NoError(t, err)
		return f
	}
	var b strings.Builder
	for i, t := range []int64{0, 59_980, 120_010, 240_000, 300_020, 359_990} { // 2 minutes missed
		fmt.Fprintf(&b, "a{i=\"1\"} %d %d\nb 1 %d\n", i, 1_700_000_000_000+t, 1_700_000_000_000+t)
	}
	f := read(b.String())
	require.Equal(t, time.Minute, fileimport.Sum([]*fileimport.File{f}).Interval)
	five := read("c 1 1700000000000\nc 2 1700000300000\nc 3 1700000600000\n")
	require.Equal(t, 5*time.Minute, fileimport.Sum([]*fileimport.File{five}).Interval)
	require.Equal(t, time.Minute, fileimport.Sum([]*fileimport.File{f, five}).Interval, "the median over both files' gaps")
	require.Zero(t, fileimport.Sum([]*fileimport.File{read("d 1 1700000000000\n")}).Interval, "no series with two samples")
}
