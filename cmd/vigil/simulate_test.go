package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
	"github.com/vigil-obs/vigil/internal/topology"
)

// TestSimulateList prints one scenario name per line.
func TestSimulateList(t *testing.T) {
	r := runVigil(t, "", "simulate", "--list")
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stderr)
	require.Equal(t, strings.Join(append(sim.ScenarioNames(), microsvc.Scenarios()...), "\n")+"\n", r.stdout)
	require.Contains(t, r.stdout, "\nnvlink_degraded/subtle\n")
	require.Contains(t, r.stdout, "\nmetric_anomaly/memory\n")
}

// TestSimulateMicroservices: a metric_anomaly scenario writes the
// microservice application's metrics and its truth, an entity of the
// service label.
func TestSimulateMicroservices(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "simulate", "--scenario", "metric_anomaly/latency", "--duration", "20m", "--out", dir, "--json")
	require.NoError(t, r.err, r.stderr)
	var rep struct {
		Faults []sim.Fault `json:"faults"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Faults, 1)
	require.Equal(t, "metric_anomaly", rep.Faults[0].Kind)
	require.NotEmpty(t, rep.Faults[0].Entity["service"])
	om, err := os.ReadFile(filepath.Join(dir, "metrics.om"))
	require.NoError(t, err)
	require.Contains(t, string(om), "container_cpu_usage_seconds_total{")
	require.True(t, strings.HasSuffix(string(om), "# EOF\n"))
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "metric_anomaly", "--gpu", "1", "--out", dir), "does not apply")
}

// TestSimulateUsage: bad input is exit 2 with one line.
func TestSimulateUsage(t *testing.T) {
	dir := t.TempDir()
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "bogus", "--out", dir), `unknown scenario "bogus"`)
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "bogus", "--out", dir), "vigil simulate --list")
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "healthy"), "--out DIR is required")
	requireUsage(t, runVigil(t, "", "simulate", "--out", dir), "--scenario NAME is required")
	requireUsage(t, runVigil(t, "", "simulate", "--list", "--scenario", "healthy"), "exclude each other")
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "healthy", "--out", dir, "--start", "yesterday"), "--start")
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "healthy", "--out", dir, "--gpu-model", "V100"), `unknown GPU model "V100"`)
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "healthy", "--out", dir, "--duration", "-1h"), "duration")
	requireUsage(t, runVigil(t, "", "simulate", "--scenario", "healthy", "--out", dir, "--nodes", "1"), "do not fit")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing is written on bad input")
}

// TestSimulateWrites writes metrics.om, truth.json and decoys.json, the
// same bytes for the same flags, and the metrics read back as a cluster.
func TestSimulateWrites(t *testing.T) {
	dir := t.TempDir()
	args := []string{"simulate", "--scenario", "nvlink_degraded", "--seed", "4", "--duration", "4m", "--start", "2026-11-12T02:00:00Z", "--out", dir}
	r := runVigil(t, "", args...)
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stderr)
	require.Contains(t, r.stdout, "simulated nvlink_degraded (seed 4) from 2026-11-12T02:00:00Z to 2026-11-12T02:04:00Z: 1 fault(s)")
	om, err := os.ReadFile(filepath.Join(dir, "metrics.om"))
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(om), "\n# EOF\n"))

	var truth []map[string]any
	raw, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &truth))
	require.Len(t, truth, 1)
	require.Equal(t, "nvlink_degraded", truth[0]["kind"])
	require.Contains(t, truth[0]["entity"], "node")
	require.Regexp(t, `^2026-11-12T02:0[0-4]:\d\dZ$`, truth[0]["onset"])
	require.InDelta(t, 0.99, truth[0]["severity"], 1e-9)

	// Again, with --json: the same bytes, one object.
	r = runVigil(t, "", append(args, "--json")...)
	require.NoError(t, r.err, r.stderr)
	again, err := os.ReadFile(filepath.Join(dir, "metrics.om"))
	require.NoError(t, err)
	require.Equal(t, om, again)
	rep := decodeOne[simulateReport](t, r.stdout)
	require.Equal(t, "nvlink_degraded", rep.Scenario)
	require.Len(t, rep.Files, 6)
	for _, name := range []string{"traces.otlp.json", "logs.otlp.json", "cluster-logs.otlp.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(raw), `{"resource`), "%s: %.80s", name, raw)
	}
	require.Len(t, rep.Decoys, 6)

	// A healthy run lists no fault: an empty list, not null.
	hdir := t.TempDir()
	r = runVigil(t, "", "simulate", "--scenario", "healthy", "--duration", "2m", "--out", hdir)
	require.NoError(t, r.err, r.stderr)
	raw, err = os.ReadFile(filepath.Join(hdir, "truth.json"))
	require.NoError(t, err)
	require.Equal(t, "[]\n", string(raw))

	// Vigil reads the simulated cluster back.
	r = runVigil(t, "", "topology", "--input", filepath.Join(dir, "metrics.om"), "--json")
	require.NoError(t, r.err, r.stderr)
	topo := decodeOne[topology.Topology](t, r.stdout)
	require.Len(t, topo.Nodes, 10)
}

// TestSimulateSmallCluster: a cluster of two nodes still holds a training
// job, replicas and the notebook.
func TestSimulateSmallCluster(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "simulate", "--scenario", "straggler", "--nodes", "2", "--duration", "2m", "--out", dir, "--json")
	require.NoError(t, r.err, r.stderr)
	rep := decodeOne[simulateReport](t, r.stdout)
	require.Equal(t, "gpu-node-01", rep.Faults[0].Entity["node"])
}

// TestSimulatePin: --onset sets every fault's onset, --node and --gpu pin
// the first fault; bad values are exit 2 with one line.
func TestSimulatePin(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "simulate", "--scenario", "nvlink_degraded+exporter_down", "--duration", "4m", "--onset", "90s",
		"--node", "gpu-node-03", "--gpu", "5", "--out", dir, "--json")
	require.NoError(t, r.err, r.stderr)
	rep := decodeOne[simulateReport](t, r.stdout)
	require.Len(t, rep.Faults, 2)
	for _, f := range rep.Faults {
		require.Equal(t, rep.Start.Add(90*time.Second), f.Onset, f.Kind)
	}
	require.Equal(t, map[string]string{"node": "gpu-node-03", "gpu": "5"}, rep.Faults[0].Entity)
	require.NotEqual(t, "gpu-node-03", rep.Faults[1].Entity["node"], "the second fault is drawn elsewhere")

	// A pod fault pinned to a node strikes a replica there.
	r = runVigil(t, "", "simulate", "--scenario", "pod_oom_killed", "--duration", "2m", "--node", "gpu-node-09", "--out", dir, "--json")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, decodeOne[simulateReport](t, r.stdout).Faults[0].Entity["pod"], "vllm-")

	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "nvlink_degraded", "--onset", "-1m"}, "--onset -1m0s is outside the run"},
		{[]string{"--scenario", "nvlink_degraded", "--onset", "2h"}, "--onset 2h0m0s is outside the run"},
		{[]string{"--scenario", "nvlink_degraded", "--onset", "soon"}, "onset"},
		{[]string{"--scenario", "healthy", "--onset", "10m"}, "--onset needs a scenario with a fault"},
		{[]string{"--scenario", "healthy", "--node", "gpu-node-01"}, "--node needs a scenario with a fault"},
		{[]string{"--scenario", "nvlink_degraded", "--node", "gpu-node-99"}, `node "gpu-node-99" is not one this fault can hit`},
		{[]string{"--scenario", "nvlink_degraded", "--node", "gpu-node-10"}, `node "gpu-node-10" is not one this fault can hit`},
		{[]string{"--scenario", "nvlink_degraded", "--gpu", "x"}, `--gpu "x" is not a GPU index`},
		{[]string{"--scenario", "nvlink_degraded", "--gpu", "-1"}, `--gpu "-1" is not a GPU index`},
		{[]string{"--scenario", "nvlink_degraded", "--node", "gpu-node-02", "--gpu", "9"}, `GPU "9" of gpu-node-02 is not one this fault can hit`},
		{[]string{"--scenario", "tenant_failure", "--node", "gpu-node-02"}, "--node: tenant_failure does not strike a node"},
		{[]string{"--scenario", "healthy", "--fault-scale", "0"}, "--fault-scale and --noise-scale must be above 0"},
		{[]string{"--scenario", "healthy", "--noise-scale", "9"}, "noise scale 9 is outside"},
	} {
		requireUsage(t, runVigil(t, "", append([]string{"simulate", "--out", empty}, c.args...)...), c.want)
	}
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing is written on bad input")
}
