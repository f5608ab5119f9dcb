package manifests

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/vigil-obs/vigil/internal/slo"
)

// rulesDir is where the chart keeps the PrometheusRule groups, relative to
// this package.
const rulesDir = "../../deploy/helm/vigil/files/prometheusrules"

// rulesHeader heads each generated file.
const rulesHeader = "# Generated from the built-in AI SLO presets (internal/slo) by\n# `go test ./internal/manifests -update`; the test fails while it is stale.\n"

// TestPrometheusRulesFiles checks that the chart's PrometheusRule groups are
// the SLO presets' as `vigil rules generate --format prometheusrule` makes
// them; -update rewrites them.
func TestPrometheusRulesFiles(t *testing.T) {
	files, err := slo.Files(slo.Presets())
	require.NoError(t, err)
	want := map[string][]byte{}
	for _, f := range files {
		spec, err := yaml.Marshal(slo.PrometheusRule(f).Spec)
		require.NoError(t, err)
		want[f.Name+".yaml"] = append([]byte(rulesHeader), spec...)
	}
	if *update {
		require.NoError(t, os.RemoveAll(rulesDir))
		require.NoError(t, os.MkdirAll(rulesDir, 0o755))
		for name, b := range want {
			require.NoError(t, os.WriteFile(filepath.Join(rulesDir, name), b, 0o644))
		}
	}
	got := map[string][]byte{}
	entries, err := os.ReadDir(rulesDir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(rulesDir, e.Name()))
		require.NoError(t, err)
		got[e.Name()] = b
	}
	require.Equal(t, keys(want), keys(got), "go test ./internal/manifests -update rewrites them")
	for name := range want {
		require.True(t, bytes.Equal(want[name], got[name]), "%s is stale: go test ./internal/manifests -update", name)
	}
	// The binary embeds the same files.
	embedded, err := fs.Glob(chartFS(t), "files/prometheusrules/*.yaml")
	require.NoError(t, err)
	require.Len(t, embedded, len(want))
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sortStrings(out)
}

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
}
