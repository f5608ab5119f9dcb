package main

import (
	"flag"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/topology"
)

// The synthetic mixed dump of internal/topology and its instant.
var (
	mixedDump = filepath.Join("..", "..", "internal", "topology", "testdata", "mixed.om")
	mixedAt   = "2026-11-12T02:50:00Z"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// TestTopologyInput checks the text tree and the JSON object from --input:
// the text is the package's golden tree with what the diagnosis names on
// GPUs over their hints (testdata/topology-mixed.txt.golden; go test
// -update rewrites it), --at defaults to the newest sample, warnings go to
// stderr only.
func TestTopologyInput(t *testing.T) {
	r := runVigil(t, "", "topology", "--input", mixedDump)
	require.NoError(t, r.err, r.stderr)
	golden := filepath.Join("testdata", "topology-mixed.txt.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(r.stdout), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), r.stdout)
	pkg, err := os.ReadFile(filepath.Join("..", "..", "internal", "topology", "testdata", "mixed.txt.golden"))
	require.NoError(t, err)
	require.Equal(t, strings.Count(string(pkg), "\n"), strings.Count(r.stdout, "\n"), "the package's tree, hints aside")
	require.Contains(t, r.stdout, "exporter_down  — dcgm-exporter on gpu-node-03 stopped reporting GPU 2 (diagnosis, confidence",
		"where the tree said lost, the diagnosis's finding")
	require.Regexp(t, `^(vigil: warning: [^\n]+\n)+$`, r.stderr)
	require.Contains(t, r.stderr, "dcgm-exporter names no pod on nodes where pods request GPUs")

	r = runVigil(t, "", "topology", "--input", mixedDump, "--at", mixedAt, "--json")
	require.NoError(t, r.err, r.stderr)
	topo := decodeOne[topology.Topology](t, r.stdout)
	require.Equal(t, mixedAt, topo.At.Format(time.RFC3339))
	require.Len(t, topo.Nodes, 4)
	n := topo.Nodes[1]
	require.Equal(t, "gpu-node-01", n.Name)
	require.Equal(t, "llm-pretrain-worker-0", n.GPUs[0].Pods[0].Pod, "a script follows node → GPU → pod")
	require.Equal(t, "llm-pretrain", n.Pods[0].Workload, "and node → pod → workload")
	require.Len(t, topo.Warnings, 1)
	require.Equal(t, "vigil: warning: "+topo.Warnings[0]+"\n", r.stderr)
}

// TestTopologyStdinAndFixtures reads standard input and the real samples:
// exit 0, warnings on stderr.
func TestTopologyStdinAndFixtures(t *testing.T) {
	content, err := os.ReadFile(mixedDump)
	require.NoError(t, err)
	r := runVigil(t, string(content), "topology", "--input", "-", "--json")
	require.NoError(t, r.err, r.stderr)
	require.Len(t, decodeOne[topology.Topology](t, r.stdout).Nodes, 4)

	args := []string{"topology", "--at", fixtureAt}
	for _, f := range fixtures(t) {
		args = append(args, "--input", f)
	}
	r = runVigil(t, "", append(args, "--json")...)
	require.NoError(t, r.err, r.stderr)
	topo := decodeOne[topology.Topology](t, r.stdout)
	require.Len(t, topo.Nodes, 6)
	require.Contains(t, r.stderr, "vigil: warning: dcgm-exporter reports a container ID as Hostname")
}

// TestTopologyUsage checks exit 2 with a one-line reason on bad input.
func TestTopologyUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no source", nil, "give exactly one of --input FILE, --prometheus URL or --server URL"},
		{"two sources", []string{"--input", mixedDump, "--prometheus", "http://127.0.0.1:9090"}, "give exactly one of"},
		{"bad --at", []string{"--input", mixedDump, "--at", "yesterday"}, `--at: time "yesterday" is neither RFC 3339 nor Unix seconds`},
		{"no data before --at", []string{"--input", mixedDump, "--at", "2026-11-12T02:00:00Z"}, "no data at or before 2026-11-12T02:00:00Z: the oldest sample of --input is at 2026-11-12T02:40:00Z"},
		{"missing file", []string{"--input", "no-such-file.om"}, "no-such-file.om"},
		{"malformed file", []string{"--input", "-"}, "topology: <stdin>:1:"},
		{"bad URL", []string{"--prometheus", "ftp://x"}, `--prometheus: url "ftp://x": scheme must be http or https`},
		{"bad window", []string{"--input", mixedDump, "--window", "0s"}, "window must be positive"},
		{"argument", []string{"extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runVigil(t, "not { valid\n", append([]string{"topology"}, tt.args...)...)
			requireUsage(t, r, tt.want)
		})
	}
}

// TestTopologyServer reads the same dump through the Prometheus API of a
// Vigil (--server) and through --prometheus: the same topology as --input.
func TestTopologyServer(t *testing.T) {
	want := runVigil(t, "", "topology", "--input", mixedDump, "--json")
	require.NoError(t, want.err, want.stderr)

	fh, err := os.Open(mixedDump)
	require.NoError(t, err)
	f, err := fileimport.Read(mixedDump, fh, fileimport.DefaultOptions(time.Now()))
	require.NoError(t, fh.Close())
	require.NoError(t, err)
	s, err := fileimport.OpenTemp(t.Context(), []*fileimport.File{f}, time.Now, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	h, err := api.New(api.Options{Store: s, LookbackDelta: 5 * time.Minute, QueryTimeout: time.Minute})
	require.NoError(t, err)
	h.SetReady(true)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	for _, flag := range []string{"--server", "--prometheus"} {
		got := runVigil(t, "", "topology", flag, srv.URL+"/", "--at", mixedAt, "--json")
		require.NoError(t, got.err, got.stderr)
		require.JSONEq(t, want.stdout, got.stdout, flag)
		require.Equal(t, want.stderr, got.stderr, flag)
	}

	got := runVigil(t, "", "topology", "--server", srv.URL, "--at", "2026-11-12T01:00:00Z")
	requireUsage(t, got, "no data at or before 2026-11-12T01:00:00Z")
}

// TestTopologyPrometheus reads the dump from Debian's Prometheus 2.42, its
// blocks written by promtool: the same topology as --input.
func TestTopologyPrometheus(t *testing.T) {
	promtool := peertest.LookPath(t, "promtool")
	dir := t.TempDir()
	peertest.Run(t, promtool, "tsdb", "create-blocks-from", "openmetrics", mixedDump, dir)
	p := peertest.StartPrometheus(t, dir, "")

	want := runVigil(t, "", "topology", "--input", mixedDump, "--json")
	require.NoError(t, want.err, want.stderr)
	got := runVigil(t, "", "topology", "--prometheus", p.URL, "--at", mixedAt, "--json")
	require.NoError(t, got.err, got.stderr)
	require.JSONEq(t, want.stdout, got.stdout)

	text := runVigil(t, "", "topology", "--prometheus", p.URL, "--at", mixedAt)
	require.NoError(t, text.err, text.stderr)
	require.True(t, strings.HasPrefix(text.stdout, "at "+mixedAt+": 4 nodes, 12 GPUs"), text.stdout)
}

// TestTopologyAgreesWithDiagnose: what vigil diagnose names on a GPU or a
// node with confidence 0.5 or more is that GPU's or node's hint in vigil
// topology, in the text and the JSON: a PCIe replay storm is
// pcie_degraded in both, not ok in the tree.
func TestTopologyAgreesWithDiagnose(t *testing.T) {
	d := writeDump(t, t.TempDir(), "pcie_degraded", smallCluster(3))
	require.Len(t, d.truth, 1)
	at := d.end().Format(time.RFC3339)
	r := runVigil(t, "", "diagnose", "--input", d.path, "--at", at, "--json")
	require.NoError(t, r.err, r.stderr)
	rep := decodeOne[diagnose.Report](t, r.stdout)
	r = runVigil(t, "", "topology", "--input", d.path, "--at", at, "--json")
	require.NoError(t, r.err, r.stderr)
	topo := decodeOne[topology.Topology](t, r.stdout)
	text := runVigil(t, "", "topology", "--input", d.path, "--at", at)
	require.NoError(t, text.err, text.stderr)

	hint := func(node, gpu string) topology.Health {
		for _, n := range topo.Nodes {
			if n.Name != node {
				continue
			}
			if gpu == "" {
				return n.Health
			}
			for _, g := range n.GPUs {
				if g.Index == gpu {
					return g.Health
				}
			}
		}
		return ""
	}
	hints := rep.Hints()
	require.NotEmpty(t, hints, "the diagnosis names something on a GPU or a node")
	seen := map[[2]string]bool{}
	for _, h := range hints {
		if k := [2]string{h.Node, h.GPU}; !seen[k] {
			seen[k] = true // the strongest call on it; weaker ones follow
			require.Equal(t, h.Health, hint(h.Node, h.GPU), "%s GPU %q", h.Node, h.GPU)
		}
	}
	f := d.truth[0]
	node, gpu := f.Entity["node"], f.Entity["gpu"]
	require.Equal(t, topology.Health(diagnose.KindPCIeDegraded), hint(node, gpu), "the faulty GPU %s/%s", node, gpu)
	require.True(t, slices.ContainsFunc(rep.Findings, func(c diagnose.Cause) bool {
		return c.Kind == diagnose.KindPCIeDegraded && c.Entity["node"] == node && c.Entity["gpu"] == gpu && c.Confidence >= 0.5
	}) || slices.ContainsFunc(rep.Causes, func(c diagnose.Cause) bool {
		return c.Kind == diagnose.KindPCIeDegraded && c.Entity["node"] == node && c.Entity["gpu"] == gpu && c.Confidence >= 0.5
	}), "diagnose names it")
	require.Regexp(t, `(?m)^  gpu `+gpu+` .*  pcie_degraded  `, text.stdout)
}
