package limits

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the expected errors in testdata/bad/*.err")

// testDefaults are the defaults testdata/good.yml is read over.
func testDefaults() Limits {
	return Limits{IngestionRate: 1000, IngestionBurstSize: 5000, MaxActiveSeries: 100}
}

func TestParseGood(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "good.yml"))
	require.NoError(t, err)
	got, err := Parse("good.yml", b, testDefaults())
	require.NoError(t, err)
	d := testDefaults()
	small := d
	small.MaxActiveSeries, small.MaxSeriesPerMetric, small.SpansRate = 10, 5, 0.5
	e := small
	e.MaxActiveSeries = 20
	n := d
	n.MaxQuerySamples, n.MaxQueryConcurrency, n.MaxPushGroups, n.SpansBurstSize = 5_000_000, 4, 3, 7
	require.Equal(t, map[string]Limits{
		"team-a": {IngestionRate: 50000, IngestionBurstSize: 500000, MaxActiveSeries: 100, MaxRequestBytes: 1_000_000},
		"team-b": small,
		"team-c": d,
		"team-d": small,
		"team-e": e,
		"123":    n,
	}, got)
}

func TestParseEmpty(t *testing.T) {
	for _, in := range []string{"", "# nothing yet\n", "~", "overrides:\n", "overrides: {}\n", "{}\n", "---\n", "overrides: {}\n---\n"} {
		got, err := Parse("limits.yml", []byte(in), testDefaults())
		require.NoError(t, err, "%q", in)
		require.Empty(t, got, "%q", in)
	}
}

// TestParseBad checks each file in testdata/bad against the error in its
// .err sibling (go test -update rewrites them). Every error is one line and
// names the file and a line.
func TestParseBad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	located := regexp.MustCompile(`^` + regexp.QuoteMeta("testdata/bad/") + `[a-z_]+\.yml:[1-9][0-9]*: `)
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yml"), func(t *testing.T) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			_, err = Parse(path, b, testDefaults())
			require.Error(t, err)
			msg := err.Error()
			require.NotContains(t, msg, "\n")
			require.Regexp(t, located, msg)
			golden := strings.TrimSuffix(path, ".yml") + ".err"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(msg+"\n"), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, strings.TrimSpace(string(want)), msg)
		})
	}
}

// FuzzRuntimeFile feeds the parser arbitrary files: it never panics, what
// it accepts is valid, and what it refuses gets one line naming the file.
//
//	go test ./internal/tenant/limits -run '^$' -fuzz '^FuzzRuntimeFile$' -fuzztime 60s
func FuzzRuntimeFile(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*", "*.yml"))
	require.NoError(f, err)
	seeds = append(seeds, filepath.Join("testdata", "good.yml"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("overrides:\n  a: &x {ingestion_rate: 1}\n  b: {<<: [*x, {max_push_groups: 2}]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Parse("limits.yml", b, testDefaults())
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
			require.True(t, strings.HasPrefix(err.Error(), "limits.yml"), err.Error())
			return
		}
		for tenant, l := range got {
			require.NotEmpty(t, tenant)
			require.NoError(t, l.Validate(), "tenant %q", tenant)
		}
	})
}
