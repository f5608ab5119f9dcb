package manifests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/deploy/helm"
)

// FuzzValues renders the chart with a values file and a --set expression
// from the fuzzer: whatever they hold, the render either succeeds or fails
// with ErrValues (bad input, exit 2), never with a panic or an error that
// blames the chart.
//
//	go test ./internal/manifests -run '^$' -fuzz '^FuzzValues$' -fuzztime 60s
func FuzzValues(f *testing.F) {
	f.Add("replicas: 2\n", "dcgmExporter.enabled=true")
	f.Add("vigil:\n  source:\n    url: http://p:9090\n", "vigil.source.selector={a=\"b\"}")
	f.Add("scrape:\n  extraScrapeConfigs:\n    - job_name: x\n      kubernetes_sd_configs: [{role: node}]\n", "scrape.interval=30s")
	f.Add("image: [\n", "a.b")
	f.Add("", "vigil.extraConfig.storage.retention=1h")
	f.Add("", "service.listenHost=::")
	fsys, err := helm.Chart()
	require.NoError(f, err)
	ch, err := LoadChart(fsys)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, values, set string) {
		file := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(file, []byte(values), 0o644))
		opts := Options{ValuesFiles: []string{file}, Set: []string{set}}
		vals, err := ReadValues(opts)
		if err == nil {
			_, err = Render(t.Context(), ch, vals, opts)
		}
		if err != nil {
			require.ErrorIs(t, err, ErrValues)
		}
	})
}
