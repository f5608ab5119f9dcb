package slo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// Debian's promtool is Prometheus 2.42: what it accepts, 2.42 loads.

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: install Debian's prometheus package (make test does)")
	}
	return p
}

// runPromtool runs promtool in dir and returns its output and whether it
// exited 0.
func runPromtool(t *testing.T, bin, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "run promtool: %s", out)
	}
	return string(out), err == nil
}

// writeRules writes a spec's rule files into dir and returns their names.
func writeRules(t *testing.T, spec *Spec, dir string, format Format) []string {
	t.Helper()
	files, err := Files(spec)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		b, err := Render(f, format)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.FileName(format)), b, 0o644))
		names = append(names, f.FileName(format))
	}
	return names
}

// TestPromtoolCheckRules: promtool check rules accepts every generated file
// of the presets and the example spec, and the groups of every generated
// PrometheusRule object.
func TestPromtoolCheckRules(t *testing.T) {
	bin := promtool(t)
	for name, spec := range map[string]*Spec{"presets": Presets(), "example": exampleSpec(t)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			names := writeRules(t, spec, dir, FormatPrometheus)
			out, ok := runPromtool(t, bin, dir, append([]string{"check", "rules"}, names...)...)
			require.True(t, ok, out)
			require.Equal(t, len(names), strings.Count(out, "SUCCESS"), out)

			// PrometheusRule objects: their spec is a rule file.
			krm := t.TempDir()
			var groups []string
			for _, n := range writeRules(t, spec, krm, FormatPrometheusRule) {
				b, err := os.ReadFile(filepath.Join(krm, n))
				require.NoError(t, err)
				var pr monitoringv1.PrometheusRule
				require.NoError(t, sigsyaml.UnmarshalStrict(b, &pr))
				spec, err := sigsyaml.Marshal(pr.Spec)
				require.NoError(t, err)
				file := strings.TrimSuffix(n, ".yaml") + ".groups.yml"
				require.NoError(t, os.WriteFile(filepath.Join(krm, file), spec, 0o644))
				groups = append(groups, file)
			}
			out, ok = runPromtool(t, bin, krm, append([]string{"check", "rules"}, groups...)...)
			require.True(t, ok, out)
			require.Equal(t, len(groups), strings.Count(out, "SUCCESS"), out)
		})
	}
}

// unitTestFile is what the coverage check reads of a promtool test file.
type unitTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestPromtoolUnitTests runs the promtool unit tests of testdata/promtool
// against the generated presets: each preset alert fires on a synthetic
// breach (with its labels and rendered annotations) and stays silent on a
// healthy series. It also checks that every preset alert has both cases.
func TestPromtoolUnitTests(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	writeRules(t, Presets(), dir, FormatPrometheus)
	tests, err := filepath.Glob(filepath.Join("testdata", "promtool", "*.test.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, tests)
	fires, silent := map[string]bool{}, map[string]bool{}
	var names []string
	for _, path := range tests {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var tf unitTestFile
		require.NoError(t, yaml.Unmarshal(b, &tf))
		for _, tc := range tf.Tests {
			for _, at := range tc.AlertRuleTest {
				if len(at.ExpAlerts) > 0 {
					fires[at.Alertname] = true
				} else {
					silent[at.Alertname] = true
				}
			}
		}
		name := filepath.Base(path)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		names = append(names, name)
	}
	out, ok := runPromtool(t, bin, dir, append([]string{"test", "rules"}, names...)...)
	require.True(t, ok, out)
	require.Equal(t, len(names), strings.Count(out, "SUCCESS"), out)

	groups, err := Groups(Presets())
	require.NoError(t, err)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			require.True(t, fires[r.Alert], "no promtool test shows %s firing", r.Alert)
			if r.Alert != WatchdogAlert {
				require.True(t, silent[r.Alert], "no promtool test shows %s silent", r.Alert)
			}
		}
	}
}

// TestPromtoolUnitTestsCanFail is the control: a wrong expectation (the
// watchdog silent) fails promtool, so the passing runs above mean something.
func TestPromtoolUnitTestsCanFail(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	writeRules(t, Presets(), dir, FormatPrometheus)
	test := `rule_files: [vigil-watchdog.yml]
tests:
  - interval: 1m
    alert_rule_test:
      - eval_time: 5m
        alertname: VigilWatchdog
        exp_alerts: []
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wrong.test.yml"), []byte(test), 0o644))
	out, ok := runPromtool(t, bin, dir, "test", "rules", "wrong.test.yml")
	require.False(t, ok, out)
	require.Contains(t, out, "FAILED")
}

// TestPromtoolTestsReferenceGeneratedFiles: the unit tests read the files
// rules generate writes, by their names.
func TestPromtoolTestsReferenceGeneratedFiles(t *testing.T) {
	files, err := Files(Presets())
	require.NoError(t, err)
	var generated []string
	for _, f := range files {
		generated = append(generated, f.FileName(FormatPrometheus))
	}
	tests, err := filepath.Glob(filepath.Join("testdata", "promtool", "*.test.yml"))
	require.NoError(t, err)
	for _, path := range tests {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var tf unitTestFile
		require.NoError(t, yaml.NewDecoder(bytes.NewReader(b)).Decode(&tf))
		require.NotEmpty(t, tf.RuleFiles, path)
		for _, rf := range tf.RuleFiles {
			require.True(t, slices.Contains(generated, rf), "%s reads %s, which rules generate does not write", path, rf)
		}
	}
}
