package fileimport_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
)

// fuzzSeeds are small good and bad inputs next to the real fixtures.
var fuzzSeeds = []string{
	"a 1 1700000000\n# EOF\n",
	"# TYPE jobs counter\n# HELP jobs Jobs.\njobs_total{q=\"a\"} 1 1700000000.5\njobs_created{q=\"a\"} 1699999999\n# EOF\n",
	"# TYPE h histogram\nh_bucket{le=\"0.1\"} 1 1700000000\nh_bucket{le=\"+Inf\"} 2 1700000000\nh_count 2 1700000000\nh_sum 0.3 1700000000 # {trace_id=\"x\"} 0.05 1700000000\n# EOF\n",
	"# HELP up Up.\n# TYPE up gauge\nup{job=\"a\"} 1 1700000000000\nup{job=\"a\"} 0 1700000015000\n",
	"up{job=\"a\"} 1\nup{job=\"b\"} 0\n",
	"a 1 1700000000000\na 1 1700000000000\nb NaN 1700000000000\nb NaN 1700000000000\na 2 1700000001000\n",
	"a 1 1700000000000\na{x=\"\"} 2 1700000001000\n",
	"v{k=\"nan\"} NaN 1700000000000\nv{k=\"pinf\"} +Inf 1700000000000\nv{k=\"ninf\"} -Inf 1700000000000\n",
	"{\"my.metric\",\"my.label\"=\"x\"} 1 1700000000000\n",
	"a 1 1000000000000\nb 1 7000000000000\n",
	"# TYPE a gauge\na 1 1700000000\na 2 1700000015\n",
	"a 1 1700000000\na 2 1700000015000\n# EOF\n",
	"a 1 1700000000\n",
	"a 1 9223372036854775807\n",
	"a 1 1e30\n# EOF\n",
	"a abc\n",
	"a{b=\"1\",b=\"2\"} 1\n",
	"a{\"\"=\"x\"} 1\n",
	"a{b=\"\xff\"} 1\n",
	"a 1 1700000000000\na 2 1700000000000\n",
	"a 1 1700000060000\na 2 1700000000000\n",
	"a{x=\"1\ny\"} 1\nc{ 3\n",
	"a 1\n\nb 2 1700000000\n# EOF\n",
	"a 1 1700000000\n# EOF\nb 2\n",
	"# HELP a A.\r\n# TYPE a gauge\r\na 1 1700000000000\r\n",
	"a 1 1700000000000\n\n\x00b 2 1700000000000\n",
}

// FuzzRead checks that Read never panics, that its errors name a line of
// the input, and that what it accepts is written as blocks and read back
// whole. Writing blocks takes tens of milliseconds, so keep the minimizing
// of new inputs short:
//
//	go test ./internal/ingest/fileimport -run '^$' -fuzz FuzzRead -fuzztime 60s -fuzzminimizetime 10x
func FuzzRead(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.prom"))
	require.NoError(f, err)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b, uint8(fileimport.FormatAuto))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(fileimport.FormatAuto))
	}
	f.Add([]byte("a 1 1700000000\n# EOF\n"), uint8(fileimport.FormatPrometheus))
	f.Add([]byte("a 1 1700000000\n"), uint8(fileimport.FormatOpenMetrics))
	f.Add(gz(f, []byte(fuzzSeeds[1])), uint8(fileimport.FormatAuto))

	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		o := opts()
		o.Format = fileimport.Format(format % 3)
		o.MaxBytes = 1 << 20
		file, err := fileimport.Read("fuzz", bytes.NewReader(data), o)
		if err != nil {
			var le *fileimport.LineError
			if errors.As(err, &le) {
				require.Equal(t, "fuzz", le.File)
				require.GreaterOrEqual(t, le.Line, 1, "%v", err)
				if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
					require.LessOrEqual(t, le.Line, bytes.Count(data, []byte("\n"))+1, "%v", err)
				}
			}
			return
		}
		require.GreaterOrEqual(t, file.Samples, file.Series)
		if file.Samples == 0 {
			return
		}
		require.LessOrEqual(t, file.MinT, file.MaxT)

		dir := t.TempDir()
		stats, err := fileimport.WriteBlocks(t.Context(), dir, []*fileimport.File{file}, 0, nil)
		require.NoError(t, err)
		series, samples := countBlocks(t, dir)
		require.Equal(t, file.Samples, samples, "samples")
		require.Equal(t, stats.Blocks, len(blockDirs(t, dir)))
		// A series spanning several blocks is in each of them.
		require.GreaterOrEqual(t, len(series), 1)
		require.Len(t, series, file.Series, "series")
	})
}

// countBlocks reads every block in dir and returns the distinct series and
// the number of samples.
func countBlocks(t *testing.T, dir string) (map[string]struct{}, int) {
	t.Helper()
	series := map[string]struct{}{}
	samples := 0
	for _, name := range blockDirs(t, dir) {
		b, err := tsdb.OpenBlock(nil, filepath.Join(dir, name), nil, nil)
		require.NoError(t, err)
		q, err := tsdb.NewBlockQuerier(b, b.MinTime(), b.MaxTime())
		require.NoError(t, err)
		set := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
		for set.Next() {
			series[set.At().Labels().String()] = struct{}{}
			it := set.At().Iterator(nil)
			for it.Next() != 0 {
				samples++
			}
			require.NoError(t, it.Err())
		}
		require.NoError(t, set.Err())
		require.NoError(t, q.Close())
		require.NoError(t, b.Close())
	}
	return series, samples
}
