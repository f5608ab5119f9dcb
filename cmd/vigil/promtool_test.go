package main

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// TestPromtoolQueries runs Debian's promtool (Prometheus 2.42) against a
// running Vigil holding the imported fixtures: each query command exits 0
// and prints the expected series.
func TestPromtoolQueries(t *testing.T) {
	promtool := peertest.LookPath(t, "promtool")
	dir := t.TempDir()
	// Recent enough to be inside the default retention.
	at := time.Now().Add(-5 * time.Minute).Truncate(time.Second).UTC()
	atUnix := strconv.FormatInt(at.Unix(), 10)
	r := runVigil(t, "", "import", "--data-dir", dir, "--at", at.Format(time.RFC3339),
		filepath.Join("..", "..", "testdata", "exposition", "vllm.prom"),
		filepath.Join("..", "..", "testdata", "exposition", "dcgm-exporter-t4.prom"),
		filepath.Join("..", "..", "testdata", "exposition", "kube-state-metrics.prom"))
	require.NoError(t, r.err, r.stderr)
	p := peertest.StartVigil(t, "--data-dir", dir)

	t.Run("instant", func(t *testing.T) {
		out := peertest.Run(t, promtool, "query", "instant", "--time", atUnix, p.URL, `vllm:num_requests_running`)
		require.Equal(t, `vllm:num_requests_running{model_name="facebook/opt-125m"} => 0 @[`+atUnix+"]\n", out)
	})
	t.Run("range", func(t *testing.T) {
		start := strconv.FormatInt(at.Add(-time.Minute).Unix(), 10)
		out := peertest.Run(t, promtool, "query", "range", "--start", start, "--end", atUnix, "--step", "30s", p.URL, `sum(kube_pod_status_phase)`)
		// Only the last step sees the samples imported at `at`; the earlier
		// steps are before them.
		require.Equal(t, "{} =>\n1 @["+atUnix+"]\n", out)
	})
	t.Run("series", func(t *testing.T) {
		start := strconv.FormatInt(at.Add(-time.Minute).Unix(), 10)
		end := strconv.FormatInt(at.Add(time.Minute).Unix(), 10)
		out := peertest.Run(t, promtool, "query", "series", "--match", `kube_pod_status_phase`, "--start", start, "--end", end, p.URL)
		require.Contains(t, out, `{__name__="kube_pod_status_phase", namespace="ns2", phase="Pending", pod="pod2", uid="uid2"}`)
	})
	t.Run("labels", func(t *testing.T) {
		out := peertest.Run(t, promtool, "query", "labels", p.URL, "model_name")
		require.Equal(t, "facebook/opt-125m\n", out)
	})
}
