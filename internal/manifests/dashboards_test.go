package manifests

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// copyChart copies the embedded chart into a directory of its own.
func copyChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, chartFS(t)))
	return dir
}

// dashboardConfigMaps renders a chart directory with dashboards on and
// returns the ConfigMaps the Grafana sidecar would load.
func dashboardConfigMaps(t *testing.T, dir string) []*corev1.ConfigMap {
	t.Helper()
	s := newScheme(t)
	ms, err := RenderChart(t.Context(), os.DirFS(dir), Options{Namespace: "monitoring", Set: []string{"dashboards.enabled=true"}})
	require.NoError(t, err)
	var out []*corev1.ConfigMap
	for _, m := range ms {
		if cm, ok := decodeStrict(t, s, m).(*corev1.ConfigMap); ok && cm.Labels["grafana_dashboard"] == "1" {
			out = append(out, cm)
		}
	}
	return out
}

func TestDashboardsNone(t *testing.T) {
	dir := copyChart(t)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "dashboards")))
	require.Empty(t, dashboardConfigMaps(t, dir))
}

func TestDashboardsConfigMaps(t *testing.T) {
	dir := copyChart(t)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "dashboards")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "dashboards"), 0o755))
	// Grafana's legend templates use {{ }}: the chart must not read them
	// as its own.
	sample := `{"title": "GPUs", "uid": "vigil-gpus", "panels": [{"targets": [{"expr": "DCGM_FI_DEV_GPU_UTIL", "legendFormat": "{{Hostname}} {{gpu}}"}]}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboards", "Vigil_GPUs.json"), []byte(sample), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboards", "README.md"), []byte("not a dashboard"), 0o644))
	cms := dashboardConfigMaps(t, dir)
	require.Len(t, cms, 1)
	require.Equal(t, "vigil-dashboard-vigil-gpus", cms[0].Name)
	require.Equal(t, map[string]string{"Vigil_GPUs.json": sample}, cms[0].Data)

	// Off by default.
	ms, err := RenderChart(t.Context(), os.DirFS(dir), Options{})
	require.NoError(t, err)
	for _, m := range ms {
		require.NotContains(t, m.Name, "dashboard")
	}
}

// TestDashboardsEmbedded renders whatever dashboards the binary embeds
// (vigil dashboards --out deploy/helm/vigil/dashboards): one ConfigMap each.
func TestDashboardsEmbedded(t *testing.T) {
	files, err := fs.Glob(chartFS(t), "dashboards/*.json")
	require.NoError(t, err)
	s := newScheme(t)
	ms, err := RenderChart(t.Context(), chartFS(t), Options{Set: []string{"dashboards.enabled=true"}})
	require.NoError(t, err)
	var n int
	for _, m := range ms {
		if cm, ok := decodeStrict(t, s, m).(*corev1.ConfigMap); ok && cm.Labels["grafana_dashboard"] == "1" {
			n++
		}
	}
	require.Equal(t, len(files), n)
}

// chartFile reads one file of the embedded chart.
func chartFile(t *testing.T, name string) ([]byte, error) {
	t.Helper()
	return fs.ReadFile(chartFS(t), name)
}
