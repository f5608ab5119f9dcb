package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// TestDemo runs the default story: exit 0, the page on stdout names
// gpu-node-06 and nvlink_degraded, progress and the injected fault on
// stderr. It costs about 15 s (55 simulated minutes of a 10-node cluster,
// diagnosed every 30 s), so it runs once.
func TestDemo(t *testing.T) {
	r := runVigil(t, "", "demo")
	require.NoError(t, r.err, r.stderr)
	require.Equal(t, 0, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "Vigil diagnosis at 2026-11-12 02:55:00 UTC — NOT HEALTHY\n"), r.stdout)
	require.Contains(t, r.stdout, "nvlink_degraded")
	require.Contains(t, r.stdout, "gpu-node-06")
	require.Regexp(t, `^[^\n]*\nSeen: 80 GPUs \(dcgm-exporter\), 10 nodes \(node-exporter\), 10 nodes and \d+ pods \([^)]*kube-state-metrics\)`, r.stdout,
		"the page's second line says what was seen")
	require.Regexp(t, `(?m)^  1\. 0\.\d\d  nvlink_degraded +node=gpu-node-06`, r.stdout, "rank 1 is the fault")
	require.NotContains(t, r.stdout, "\x1b[", "no colour off a terminal")
	require.NotContains(t, r.stdout, "vigil demo:", "progress goes to stderr")

	require.True(t, strings.HasPrefix(r.stderr, "vigil demo: nvlink_degraded — 10 nodes × 8 A100 GPUs"), r.stderr)
	// Progress: each change of the headline as the stream goes. (The
	// "N% rounds streamed" lines print every 240 rounds, which a 55-minute
	// run at 15 s, 221 rounds, never reaches.)
	require.Regexp(t, `(?m)^  02:10:00  healthy$`, r.stderr, "the first diagnosis, after 10 minutes of warm-up")
	require.Regexp(t, `(?m)^  02:4\d:\d\d  [^\n]*gpu-node-06 NVLink degradation[^\n]*probable cause of training stall \(0\.\d\d\)$`, r.stderr)
	// A headline an incident's line just carried is not printed again on
	// the next line.
	lines := strings.Split(r.stderr, "\n")
	for i := 1; i < len(lines); i++ {
		at, head, ok := strings.Cut(strings.TrimSpace(lines[i]), "  ")
		if ok && strings.HasPrefix(lines[i-1], "  "+at+"  ") {
			require.NotContains(t, lines[i-1], strings.TrimPrefix(strings.TrimSpace(head), "finding: "), "the headline twice:\n%s\n%s", lines[i-1], lines[i])
		}
	}
	require.Contains(t, r.stderr, "injected at 02:47:00: NVLink on gpu-node-06 GPU 3")
	require.Regexp(t, `(?m)^  Vigil named it \S+ after the onset$`, r.stderr)
	// One fault, one page: the job's stall and the NVLink preset's alert
	// on the node share the rank-1 cause.
	require.Equal(t, 1, strings.Count(r.stderr, "  PAGE  "), r.stderr)
	require.Regexp(t, `(?m)^  02:4\d:\d\d  PAGE     training_stall namespace=ml-train workload=llm-pretrain — gpu-node-06 NVLink`, r.stderr)
	require.NotContains(t, r.stderr, "goroutine ")
}

// TestDemoHealthyJSON runs the healthy scenario with --json: one object
// on stdout, healthy, with nothing at 0.5 or above. About 15 s.
func TestDemoHealthyJSON(t *testing.T) {
	r := runVigil(t, "", "demo", "healthy", "--json")
	require.NoError(t, r.err, r.stderr)
	rep := decodeOne[diagnose.Report](t, r.stdout)
	require.True(t, rep.Healthy, "causes %v findings %v symptoms %v", rep.Causes, rep.Findings, rep.Symptoms)
	require.Empty(t, rep.Symptoms)
	for _, c := range append(rep.Causes, rep.Findings...) {
		require.Less(t, c.Confidence, 0.5, "%s %v", c.Kind, c.Entity)
	}
	require.Contains(t, r.stderr, "injected: nothing (a healthy run); Vigil says healthy=true")
}

// TestDemoUsage: an unknown scenario or a second argument is exit 2 with
// one line, before anything is simulated.
func TestDemoUsage(t *testing.T) {
	requireUsage(t, runVigil(t, "", "demo", "nope"), `demo: unknown scenario "nope"`)
	requireUsage(t, runVigil(t, "", "demo", "nvlink_degraded/nope"), `has no variant "nope"`)
	requireUsage(t, runVigil(t, "", "demo", "healthy", "extra"), "accepts at most 1 arg")
	requireUsage(t, runVigil(t, "", "demo", "--seed", "x"), "--seed")
}
