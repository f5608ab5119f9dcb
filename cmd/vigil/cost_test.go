package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hand-computed case of internal/cost (its cost_test.go gives the
// figures) and its range.
var (
	costDump  = filepath.Join("..", "..", "internal", "cost", "testdata", "hand.om")
	costRange = []string{"--from", "1800000000", "--to", "1800003600"}
)

func costArgs(extra ...string) []string {
	return append(append([]string{"cost", "--input", costDump}, costRange...), extra...)
}

// TestCostJSON checks that --json prints exactly the DESIGN.md object, its
// totals to the cent, rows sorted by idle cost, and warnings on stderr too.
func TestCostJSON(t *testing.T) {
	r := runVigil(t, "", costArgs("--prices", "testdata/cost/prices.yaml", "--json")...)
	require.NoError(t, r.err, r.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, 1, strings.Count(strings.TrimSpace(r.stdout), "\n")+1, "one line, one object")
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	require.ElementsMatch(t, []string{"currency", "from", "to", "gpu_hours", "cost", "by", "warnings"}, keys(got))
	require.Equal(t, "USD", got["currency"])
	require.Equal(t, "2027-01-15T08:00:00Z", got["from"])
	require.Equal(t, "2027-01-15T09:00:00Z", got["to"])
	require.ElementsMatch(t, []string{"available", "allocated", "used"}, keys(got["gpu_hours"].(map[string]any)))
	c := got["cost"].(map[string]any)
	require.ElementsMatch(t, []string{"total", "allocated", "idle", "unallocated"}, keys(c))
	require.InDelta(t, 13.10, c["total"], 0.005)
	require.InDelta(t, 4.528571, c["allocated"], 0.005)
	require.InDelta(t, 1.243571, c["idle"], 0.005)
	require.InDelta(t, 8.571429, c["unallocated"], 0.005)
	by := got["by"].([]any)
	require.Len(t, by, 4)
	prev := 1e9
	for _, row := range by {
		m := row.(map[string]any)
		require.ElementsMatch(t, []string{"entity", "gpus", "gpu_hours_allocated", "gpu_hours_used", "efficiency", "cost", "idle_cost", "tokens", "cost_per_1m_tokens"}, keys(m))
		require.LessOrEqual(t, m["idle_cost"].(float64), prev, "sorted by idle cost")
		prev = m["idle_cost"].(float64)
	}
	require.Equal(t, map[string]any{"namespace": "inference"}, by[0].(map[string]any)["entity"])
	require.Contains(t, r.stderr, "vigil: warning: GPU models the prices do not name were priced at the default")
	require.Contains(t, r.stderr, "vigil: warning: dcgm-exporter names no pod on 1 nodes")
}

// TestCostText checks the table: sorted by idle cost, with totals.
func TestCostText(t *testing.T) {
	r := runVigil(t, "", costArgs("--prices", "testdata/cost/prices.yaml", "--by", "node")...)
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "cost: 13.10 total, 4.53 allocated, 1.24 idle (allocated but inactive), 8.57 unallocated")
	lines := strings.Split(r.stdout, "\n")
	var order []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "gpu-") {
			order = append(order, f[0])
		}
	}
	require.Equal(t, []string{"gpu-b", "gpu-c", "gpu-a", "gpu-d"}, order)
	require.Regexp(t, `TOTAL\s+2\.46\s+1\.70\s+69\.0%\s+13\.10\s+1\.24`, r.stdout)
}

// TestCostBadInput checks each bad input: exit 2 and one clear line, or a
// warning saying what a figure then means.
func TestCostBadInput(t *testing.T) {
	dir := t.TempDir()
	noGPUs := filepath.Join(dir, "nogpu.om")
	require.NoError(t, os.WriteFile(noGPUs, []byte("# TYPE up gauge\nup{job=\"x\"} 1 1800000060\n# EOF\n"), 0o600))
	f := func(name string, args []string, contains string) {
		t.Run(name, func(t *testing.T) {
			requireUsage(t, runVigil(t, "", args...), contains)
		})
	}
	f("negative price", costArgs("--prices", "testdata/cost/negative.yaml"),
		`gpu_hourly["NVIDIA A100-SXM4-80GB"]: must not be negative, got -2.5`)
	f("no model priced and no default", costArgs("--prices", "testdata/cost/unknown-no-default.yaml"),
		`no GPU prices: no price for GPU model "NVIDIA A100-SXM4-40GB" and the prices have no default (gpu-c)`)
	f("no prices at all", costArgs(), "no GPU prices: give --prices FILE, or --currency")
	f("no OpenCost series", costArgs("--currency", "USD"), "no prices file and no OpenCost node_gpu_hourly_cost series in the range")
	f("no GPUs", []string{"cost", "--input", noGPUs, "--prices", "testdata/cost/prices.yaml"}, "no GPU reported in the range")
	f("range with no GPUs", append([]string{"cost", "--input", costDump, "--prices", "testdata/cost/prices.yaml"}, "--from", "1700000000", "--to", "1700003600"),
		"no data at or before")
	f("range after the data", append([]string{"cost", "--input", costDump, "--prices", "testdata/cost/prices.yaml"}, "--from", "1800003600", "--to", "1800007200"),
		"no GPU reported in the range: no DCGM_FI_PROF_GR_ENGINE_ACTIVE or DCGM_FI_DEV_GPU_UTIL between 2027-01-15T09:00:00Z and 2027-01-15T10:00:00Z")
	f("from without to", []string{"cost", "--input", costDump, "--from", "1800000000"}, "if any flags in the group")
	f("bad by", costArgs("--prices", "testdata/cost/prices.yaml", "--by", "gpu"), `by must be one of node, namespace, tenant, workload, model, got "gpu"`)
	f("two sources", []string{"cost", "--input", costDump, "--prometheus", "http://127.0.0.1:1"}, "give exactly one of")

	t.Run("prices naming no model in the data", func(t *testing.T) {
		r := runVigil(t, "", costArgs("--prices", "testdata/cost/unknown-default.yaml", "--json")...)
		require.NoError(t, r.err, r.stderr)
		require.Contains(t, r.stderr, `vigil: warning: the prices name no GPU model the data has (they name "NVIDIA B200"; the data has "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")`)
		require.Contains(t, r.stderr, `priced at the default, 1 EUR an hour`)
	})
}
