package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestManifestsDefault(t *testing.T) {
	r := runVigil(t, "", "manifests", "--namespace", "monitoring")
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "---\n# Source: vigil/templates/"), r.stdout[:min(len(r.stdout), 200)])
	require.Contains(t, r.stdout, "kind: StatefulSet")
	require.Contains(t, r.stdout, "namespace: monitoring")
}

func TestManifestsValuesAndSet(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte("dcgmExporter:\n  enabled: true\n"), 0o644))
	r := runVigil(t, "", "manifests", "--values", values, "--set", "vigil.alerting.alertmanagers[0]=http://am:9093")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "kind: DaemonSet")
	require.Contains(t, r.stdout, "http://am:9093")
}

func TestManifestsBadInput(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.yaml")
	require.NoError(t, os.WriteFile(invalid, []byte("replicas: two\n"), 0o644))
	broken := filepath.Join(dir, "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("image: [\n"), 0o644))
	f := func(want string, args ...string) {
		t.Helper()
		r := runVigil(t, "", append([]string{"manifests"}, args...)...)
		require.Equal(t, 2, r.code, r.stderr)
		require.Empty(t, r.stdout)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		require.True(t, strings.HasPrefix(r.stderr, "vigil: "), r.stderr)
		require.Contains(t, r.stderr, want)
	}
	f("additional properties 'nosuch' not allowed", "--set", "nosuch=1")
	f("at '/replicas': got string, want integer", "--values", invalid)
	f("values file "+broken, "--values", broken)
	f("no such file or directory", "--values", filepath.Join(dir, "missing.yaml"))
	f("unknown flag: --valus", "--valus", invalid)
	f("unknown command", "manifests", "extra")
}
