package slo

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKnownBucketsCoverFixture: every finite le bound of the real vLLM
// scrape in testdata/exposition is in KnownBuckets (older vLLM versions
// have fewer bounds, never other ones).
func TestKnownBucketsCoverFixture(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "exposition", "vllm.prom"))
	require.NoError(t, err)
	defer f.Close()
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)_bucket\{.*le="([^"]+)"`)
	known := KnownBuckets()
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		le, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		if math.IsInf(le, 1) {
			continue
		}
		bounds, ok := known[m[1]]
		require.True(t, ok, "no known buckets for %s", m[1])
		require.Contains(t, bounds, le, "%s le=%s", m[1], m[2])
		seen++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, seen, 20)
}

func TestValidateBuckets(t *testing.T) {
	ttft := func(threshold float64, srcs ...Source) *Spec {
		if len(srcs) == 0 {
			srcs = []Source{{Metric: "vllm:time_to_first_token_seconds"}}
		}
		return &Spec{SLOs: []SLO{
			{Name: "other", Objective: ptr(99.0), SLI: SLI{Gauge: &GaugeSLI{Metric: "x", Below: ptr(1.0)}}},
			{Name: "ttft", Objective: ptr(99.0), SLI: SLI{Latency: &LatencySLI{Sources: srcs, Threshold: threshold}}},
		}}
	}
	f := func(spec *Spec, les map[string][]float64, want ...string) {
		t.Helper()
		var got []string
		for _, err := range ValidateBuckets(spec, les) {
			got = append(got, err.Error())
		}
		require.Equal(t, want, got)
	}
	f(ttft(1), KnownBuckets())
	f(ttft(2.5), KnownBuckets())
	f(ttft(2), KnownBuckets(),
		"slos[1].sli.latency.threshold: 2 s is not a bucket boundary of vllm:time_to_first_token_seconds: its nearest le bounds are 1 and 2.5")
	f(ttft(5000), KnownBuckets(),
		"slos[1].sli.latency.threshold: 5000 s is not a bucket boundary of vllm:time_to_first_token_seconds: its nearest le bounds are 2560")
	f(ttft(0.0001), KnownBuckets(),
		"slos[1].sli.latency.threshold: 0.0001 s is not a bucket boundary of vllm:time_to_first_token_seconds: its nearest le bounds are 0.001")
	// Unknown histograms pass offline; the store's bounds catch them.
	f(ttft(2, Source{Metric: "my_ttft_seconds"}), KnownBuckets())
	f(ttft(2, Source{Metric: "my_ttft_seconds"}), map[string][]float64{"my_ttft_seconds": {0.5, 1, 5}},
		"slos[1].sli.latency.threshold: 2 s is not a bucket boundary of my_ttft_seconds: its nearest le bounds are 1 and 5")
	// A millisecond histogram: 0.1 s is its le="100".
	ms := Source{Metric: "ray_serve_http_request_latency_ms", Scale: 0.001}
	f(ttft(0.1, ms), map[string][]float64{ms.Metric: {50, 100, 200}})
	f(ttft(0.15, ms), map[string][]float64{ms.Metric: {50, 100, 200}},
		"slos[1].sli.latency.threshold: 0.15 s (150 in the histogram's unit) is not a bucket boundary of ray_serve_http_request_latency_ms: its nearest le bounds are 100 and 200")
}

// TestValidateBucketsLine: a parsed spec's bucket error names its line.
func TestValidateBucketsLine(t *testing.T) {
	spec, err := Parse("slo.yaml", []byte(`slos:
  - name: ttft
    objective: 99
    sli:
      latency:
        metric: vllm:time_to_first_token_seconds
        threshold: 2.0
`))
	require.NoError(t, err)
	errs := ValidateBuckets(spec, KnownBuckets())
	require.Len(t, errs, 1)
	require.EqualError(t, errs[0], "slo.yaml:7: slos[0].sli.latency.threshold: 2 s is not a bucket boundary of vllm:time_to_first_token_seconds: its nearest le bounds are 1 and 2.5")
	require.ErrorIs(t, errs[0], ErrInvalid)
}
