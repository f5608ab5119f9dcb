package deploy

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vigil-obs/vigil/deploy/helm"
	"github.com/vigil-obs/vigil/internal/manifests"
)

// readObject decodes one YAML document strictly (no duplicate keys) into an
// unstructured object and checks its apiVersion and kind. Argo CD's and
// Flux's Go types are not dependencies: the fields are checked by hand.
func readObject(t *testing.T, file, apiVersion, kind string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.UnmarshalStrict(b, &m), file)
	u := &unstructured.Unstructured{Object: m}
	require.Equal(t, apiVersion, u.GetAPIVersion(), file)
	require.Equal(t, kind, u.GetKind(), file)
	require.NotEmpty(t, u.GetName(), file)
	require.NotEmpty(t, u.GetNamespace(), file)
	return u
}

// onlyKeys fails on a key at path that the API type does not have (those
// listed are the type's, of its CRD's schema).
func onlyKeys(t *testing.T, u *unstructured.Unstructured, path string, allowed ...string) {
	t.Helper()
	var fields []string
	if path != "" {
		fields = strings.Split(path, ".")
	}
	m, found, err := unstructured.NestedMap(u.Object, fields...)
	require.NoError(t, err, path)
	require.True(t, found, "%s: no %s", u.GetKind(), path)
	for k := range m {
		require.Contains(t, allowed, k, "%s: %s.%s is not a field of the type", u.GetKind(), path, k)
	}
}

// str returns a required string field.
func str(t *testing.T, u *unstructured.Unstructured, path string) string {
	t.Helper()
	s, found, err := unstructured.NestedString(u.Object, strings.Split(path, ".")...)
	require.NoError(t, err, path)
	require.True(t, found && s != "", "%s: %s is required", u.GetKind(), path)
	return s
}

// renderValues renders the embedded chart with values (an example's
// inline values), as the GitOps tool would.
func renderValues(t *testing.T, u *unstructured.Unstructured, path string) []manifests.Manifest {
	t.Helper()
	vals, found, err := unstructured.NestedMap(u.Object, strings.Split(path, ".")...)
	require.NoError(t, err)
	require.True(t, found, path)
	b, err := yaml.Marshal(vals)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(file, b, 0o644))
	fsys, err := helm.Chart()
	require.NoError(t, err)
	ms, err := manifests.RenderChart(t.Context(), fsys, manifests.Options{ValuesFiles: []string{file}, Namespace: u.GetNamespace()})
	require.NoError(t, err, "%s's values do not render", u.GetKind())
	return ms
}

// chartDir checks that a repository path is the chart.
func chartDir(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path, "Chart.yaml"))
	require.NoError(t, err, "%s is not a chart directory", path)
	require.Contains(t, string(b), "name: vigil")
}

func TestArgoCDApplication(t *testing.T) {
	u := readObject(t, "argocd/application.yaml", "argoproj.io/v1alpha1", "Application")
	onlyKeys(t, u, "", "apiVersion", "kind", "metadata", "spec")
	onlyKeys(t, u, "spec", "project", "source", "destination", "syncPolicy")
	onlyKeys(t, u, "spec.source", "repoURL", "targetRevision", "path", "helm")
	onlyKeys(t, u, "spec.source.helm", "releaseName", "valuesObject")
	onlyKeys(t, u, "spec.destination", "server", "namespace")
	onlyKeys(t, u, "spec.syncPolicy", "automated", "syncOptions")
	onlyKeys(t, u, "spec.syncPolicy.automated", "prune", "selfHeal")
	str(t, u, "spec.project")
	require.True(t, strings.HasPrefix(str(t, u, "spec.source.repoURL"), "https://"))
	str(t, u, "spec.source.targetRevision")
	chartDir(t, str(t, u, "spec.source.path"))
	str(t, u, "spec.destination.server")
	ns := str(t, u, "spec.destination.namespace")

	// The objects go to the destination namespace.
	u.SetNamespace(ns)
	ms := renderValues(t, u, "spec.source.helm.valuesObject")
	require.NotEmpty(t, ms)
}

func TestFluxHelmRelease(t *testing.T) {
	src := readObject(t, "flux/gitrepository.yaml", "source.toolkit.fluxcd.io/v1", "GitRepository")
	onlyKeys(t, src, "spec", "interval", "url", "ref", "ignore")
	onlyKeys(t, src, "spec.ref", "branch", "tag", "semver", "commit", "name")
	str(t, src, "spec.interval")
	require.True(t, strings.HasPrefix(str(t, src, "spec.url"), "https://"))
	require.Contains(t, str(t, src, "spec.ignore"), "!/deploy/helm/vigil/", "the ignore rules keep the chart")

	hr := readObject(t, "flux/helmrelease.yaml", "helm.toolkit.fluxcd.io/v2", "HelmRelease")
	onlyKeys(t, hr, "spec", "interval", "releaseName", "chart", "install", "upgrade", "values")
	onlyKeys(t, hr, "spec.chart", "spec")
	onlyKeys(t, hr, "spec.chart.spec", "chart", "version", "reconcileStrategy", "sourceRef", "interval", "valuesFiles")
	onlyKeys(t, hr, "spec.chart.spec.sourceRef", "kind", "name", "namespace", "apiVersion")
	onlyKeys(t, hr, "spec.install", "createNamespace", "remediation")
	onlyKeys(t, hr, "spec.upgrade", "remediation")
	str(t, hr, "spec.interval")
	chartDir(t, str(t, hr, "spec.chart.spec.chart"))
	require.Contains(t, []string{"ChartVersion", "Revision"}, str(t, hr, "spec.chart.spec.reconcileStrategy"))
	// The release's source is the GitRepository above.
	require.Equal(t, src.GetKind(), str(t, hr, "spec.chart.spec.sourceRef.kind"))
	require.Equal(t, src.GetName(), str(t, hr, "spec.chart.spec.sourceRef.name"))
	require.Equal(t, src.GetNamespace(), str(t, hr, "spec.chart.spec.sourceRef.namespace"))

	ms := renderValues(t, hr, "spec.values")
	require.NotEmpty(t, ms)
}

func TestOTelCollectorConfig(t *testing.T) {
	b, err := os.ReadFile("otel-collector/config.yaml")
	require.NoError(t, err)
	var cfg struct {
		Receivers  map[string]any `json:"receivers"`
		Processors map[string]any `json:"processors"`
		Exporters  map[string]struct {
			Endpoint string `json:"endpoint"`
		} `json:"exporters"`
		Service struct {
			Pipelines map[string]struct {
				Receivers  []string `json:"receivers"`
				Processors []string `json:"processors"`
				Exporters  []string `json:"exporters"`
			} `json:"pipelines"`
		} `json:"service"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	// Traces and logs go to Vigil's OTLP/gRPC port, on the chart's Service
	// in namespace monitoring.
	vigil, ok := cfg.Exporters["otlp/vigil"]
	require.True(t, ok)
	host, port, err := net.SplitHostPort(vigil.Endpoint)
	require.NoError(t, err)
	require.Equal(t, "4317", port)
	svc := chartService(t, "monitoring")
	require.Equal(t, svc+".monitoring.svc", host)
	for _, name := range []string{"traces", "logs"} {
		p, ok := cfg.Service.Pipelines[name]
		require.True(t, ok, name)
		require.Contains(t, p.Exporters, "otlp/vigil", name)
		for _, r := range p.Receivers {
			require.Contains(t, cfg.Receivers, r, "%s: receiver %s is not defined", name, r)
		}
		for _, pr := range p.Processors {
			require.Contains(t, cfg.Processors, pr, "%s: processor %s is not defined", name, pr)
		}
		for _, e := range p.Exporters {
			require.Contains(t, cfg.Exporters, e, "%s: exporter %s is not defined", name, e)
		}
		// The memory limiter comes first, as the Collector's docs ask.
		require.Equal(t, "memory_limiter", p.Processors[0], name)
	}
}

// chartService returns the name of the chart's Service that has the OTLP
// gRPC port 4317 (not the headless one).
func chartService(t *testing.T, namespace string) string {
	t.Helper()
	fsys, err := helm.Chart()
	require.NoError(t, err)
	ms, err := manifests.RenderChart(t.Context(), fsys, manifests.Options{Namespace: namespace})
	require.NoError(t, err)
	var names []string
	for _, m := range ms {
		if m.Kind == "Service" && !strings.HasSuffix(m.Name, "-headless") && strings.Contains(m.Content, "port: 4317") {
			names = append(names, m.Name)
		}
	}
	require.Len(t, names, 1)
	return names[0]
}
