package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/dashboards"
)

// TestDashboardsCommand writes one file per dashboard, each what
// internal/dashboards builds, and prints their paths.
func TestDashboardsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grafana")
	r := runVigil(t, "", "dashboards", "--out", dir)
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stderr)
	files, err := dashboards.Build()
	require.NoError(t, err)
	require.Len(t, files, 5)
	var want []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		want = append(want, p)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, string(f.JSON), string(b))
	}
	require.Equal(t, strings.Join(want, "\n")+"\n", r.stdout)
	require.Contains(t, r.stdout, "vigil-gpus.json")
}

func TestDashboardsBadInput(t *testing.T) {
	requireUsage(t, runVigil(t, "", "dashboards"), "dashboards: --out DIR is required")
	requireUsage(t, runVigil(t, "", "dashboards", "--out", t.TempDir(), "extra"), `unknown command "extra" for "vigil dashboards"`)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	r := runVigil(t, "", "dashboards", "--out", file)
	require.Equal(t, 1, r.code)
	requireOneLine(t, r, "dashboards: create directory")
}
