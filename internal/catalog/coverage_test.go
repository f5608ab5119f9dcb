package catalog

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dcgmCSVLine matches a field line of a dcgm-exporter CSV, commented out or
// not: the commented ones are the fields users switch on.
var dcgmCSVLine = regexp.MustCompile(`^#?\s*(DCGM_[A-Z0-9_]+)\s*,`)

// upstreamMetrics reads the metric names of an upstream list.
func upstreamMetrics(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "upstream", file))
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasSuffix(file, ".csv") {
			if m := dcgmCSVLine.FindStringSubmatch(line); m != nil {
				out = append(out, m[1])
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Fields(line)[0])
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, file)
	return out
}

// TestUpstreamCoverage fails when a metric of dcgm-exporter's two default
// CSVs or of vLLM v1's PrometheusStatLogger has neither a catalog entry nor
// an explicit "ignored, because ..." line.
func TestUpstreamCoverage(t *testing.T) {
	c := Default()
	for _, file := range []string{
		"dcgm-exporter-default-counters.csv",
		"dcgm-exporter-dcp-metrics-included.csv",
		"vllm-v1-metrics.txt",
	} {
		t.Run(file, func(t *testing.T) {
			covered, ignored := 0, 0
			for _, m := range upstreamMetrics(t, file) {
				if _, ok := c.Lookup(m); ok {
					covered++
					continue
				}
				ig, ok := c.IgnoredMetric(m)
				require.True(t, ok, "%s: %s has no catalog entry and no ignored reason", file, m)
				require.NotEmpty(t, ig.Reason, m)
				ignored++
			}
			t.Logf("%s: %d covered, %d ignored", file, covered, ignored)
		})
	}
}

// TestUpstreamTypes checks the catalog against the # TYPE each upstream list
// claims: where they differ, the source must say so in Declared (or be a
// gauge the list calls a counter because it never decreases).
func TestUpstreamTypes(t *testing.T) {
	c := Default()
	f := func(metric string, listed Type) {
		t.Helper()
		m, ok := c.Lookup(metric)
		if !ok {
			return
		}
		if m.Source.TrueType(*m.Signal) != listed && m.Source.Declared != listed {
			t.Errorf("%s: the upstream list says %s, the catalog %s without Declared", metric, listed, m.Source.TrueType(*m.Signal))
		}
	}
	for _, file := range []string{"dcgm-exporter-default-counters.csv", "dcgm-exporter-dcp-metrics-included.csv"} {
		data, err := os.ReadFile(filepath.Join("testdata", "upstream", file))
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "#") || !dcgmCSVLine.MatchString(line) {
				continue
			}
			parts := strings.Split(line, ",")
			typ := Type(strings.TrimSpace(parts[1]))
			if typ == "label" {
				continue
			}
			f(strings.TrimSpace(parts[0]), typ)
		}
	}
	data, err := os.ReadFile(filepath.Join("testdata", "upstream", "vllm-v1-metrics.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		typ := Type(fs[1])
		f(fs[0], typ)
	}
}
