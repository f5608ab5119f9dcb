package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/vigil-obs/vigil/internal/slo"
)

// TestRulesGeneratePresets writes the presets in both formats: one file per
// SLO, composite and the watchdog, each path printed, each the rendering of
// internal/slo.
func TestRulesGeneratePresets(t *testing.T) {
	files, err := slo.Files(slo.Presets())
	require.NoError(t, err)
	for _, format := range []slo.Format{slo.FormatPrometheus, slo.FormatPrometheusRule} {
		t.Run(string(format), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rules")
			r := runVigil(t, "", "rules", "generate", "--format", string(format), "--out", dir)
			require.NoError(t, r.err, r.stderr)
			require.Empty(t, r.stderr)
			var want []string
			for _, f := range files {
				path := filepath.Join(dir, f.FileName(format))
				want = append(want, path)
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				rendered, err := slo.Render(f, format)
				require.NoError(t, err)
				require.Equal(t, string(rendered), string(b))
			}
			require.Equal(t, strings.Join(want, "\n")+"\n", r.stdout)
			require.Contains(t, r.stdout, "vigil-slo-llm-time-to-first-token")
			require.Contains(t, r.stdout, "vigil-watchdog")
		})
	}
}

func TestRulesGenerateDefaultFormat(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "rules", "generate", "--out", dir)
	require.NoError(t, r.err, r.stderr)
	require.FileExists(t, filepath.Join(dir, "vigil-watchdog.yml"))
}

// TestRulesGenerateSpec writes the rules of examples/slo.yaml as
// PrometheusRule objects that decode strictly.
func TestRulesGenerateSpec(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "rules", "generate", "--slo", filepath.Join("..", "..", "examples", "slo.yaml"),
		"--format", "prometheusrule", "--out", dir)
	require.NoError(t, r.err, r.stderr)
	paths := strings.Fields(r.stdout)
	require.Len(t, paths, 7)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var pr monitoringv1.PrometheusRule
		require.NoError(t, yaml.UnmarshalStrict(b, &pr), p)
		require.NotEmpty(t, pr.Spec.Groups)
	}
	require.FileExists(t, filepath.Join(dir, "vigil-slo-chat-ttft.yaml"))
	require.FileExists(t, filepath.Join(dir, "vigil-composite-chat-saturation.yaml"))
}

// TestRulesGenerateBadInput: exit 2, one line naming the problem (for a
// spec: the file, the line and the field), and no file written.
func TestRulesGenerateBadInput(t *testing.T) {
	dir := t.TempDir()
	spec := func(text string) string { return writeFile(t, dir, "slo.yaml", text) }
	out := filepath.Join(dir, "out")
	f := func(contains string, args ...string) {
		t.Helper()
		r := runVigil(t, "", append([]string{"rules", "generate"}, args...)...)
		requireUsage(t, r, contains)
		require.NoDirExists(t, out)
	}
	f("--out DIR is required")
	f(`--format "yaml" is not prometheus or prometheusrule`, "--format", "yaml", "--out", out)
	f("give one of --input, --prometheus or --server", "--out", out, "--prometheus", "http://a", "--server", "http://b")
	f("--at goes with", "--out", out, "--at", "2026-11-12T00:00:00Z")
	f("no such file", "--out", out, "--slo", filepath.Join(dir, "missing.yaml"))
	f("unknown flag: --spec", "--spec", "x", "--out", out)
	bad := spec(`slos:
  - name: availability
    objective: 99.5
    by: [namespace]
    sli:
      ratio:
        errors: sum by (namespace) (rate(errors_total[{{.window}}]))
        total: sum by (namespace) (rate(requests_total[{{.window}}]))
  - name: ttft
    by: [namespace, model]
    objective: 101
    symptom: slow
    sli:
      latency:
        metric: vllm:time_to_first_token_seconds
        threshold: 1
`)
	f(bad+":11: slos[1].objective: 101 is not a percentage in (0, 100); "+bad+`:12: slos[1].symptom: "slow" is not a symptom kind`,
		"--slo", bad, "--out", out)
	f(bad+":3: slos[0].sli.ratio.treshold: unknown field", "--out", out, "--slo", spec(`slos:
  - name: x
    sli: {ratio: {treshold: 1}}
`))
	// vLLM's TTFT buckets have no 2: caught offline.
	f(bad+":7: slos[0].sli.latency.threshold: 2 s is not a bucket boundary of vllm:time_to_first_token_seconds: its nearest le bounds are 1 and 2.5",
		"--out", out, "--slo", spec(`slos:
  - name: ttft
    objective: 99
    sli:
      latency:
        metric: vllm:time_to_first_token_seconds
        threshold: 2
`))
}

// TestRulesGenerateCheckStore checks the presets against a vLLM scrape:
// the SLOs with no metric in it get a warning on stderr, the vLLM ones do
// not, and the rules are written all the same.
func TestRulesGenerateCheckStore(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "rules", "generate", "--out", dir, "--at", "2026-11-12T02:00:00Z",
		"--input", filepath.Join("..", "..", "testdata", "exposition", "vllm.prom"))
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stderr, "vigil: warning: rules generate: slos[5].sli.gauge (model-accuracy): no series of model_accuracy in the store: its rules would never fire\n")
	require.Contains(t, r.stderr, "(nvlink-bandwidth): no series of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
	require.NotContains(t, r.stderr, "(llm-time-to-first-token)")
	require.NotContains(t, r.stderr, "(llm-inter-token-latency)", "the fixture has the old time_per_output_token_seconds")
	require.NotContains(t, r.stderr, "(inference-queue-depth)")
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		require.True(t, strings.HasPrefix(line, "vigil: warning: rules generate: slos["), line)
	}
	require.FileExists(t, filepath.Join(dir, "vigil-slo-model-accuracy.yml"))
}
