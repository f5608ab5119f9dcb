package manifests

import (
	"bytes"
	"flag"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/vigil-obs/vigil/deploy/helm"
	"github.com/vigil-obs/vigil/internal/config"
)

var update = flag.Bool("update", false, "rewrite the golden files and the chart's generated files")

// chartFS is the chart as the binary embeds it.
func chartFS(t *testing.T) fs.FS {
	t.Helper()
	fsys, err := helm.Chart()
	require.NoError(t, err)
	return fsys
}

// scenarios are the chart's ci/*-values.yaml files, by file name.
func scenarios(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(chartFS(t), "ci/*-values.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	return names
}

// renderScenario renders the chart with one ci/ values file (none for "").
func renderScenario(t *testing.T, fsys fs.FS, scenario string, set ...string) []Manifest {
	t.Helper()
	opts := Options{Namespace: "monitoring", Set: set}
	if scenario != "" {
		b, err := fs.ReadFile(chartFS(t), scenario)
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), path.Base(scenario))
		require.NoError(t, os.WriteFile(file, b, 0o644))
		opts.ValuesFiles = []string{file}
	}
	ms, err := RenderChart(t.Context(), fsys, opts)
	require.NoError(t, err)
	return ms
}

// newScheme knows every type the chart renders: Kubernetes' own and
// prometheus-operator's.
func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, monitoringv1.AddToScheme(s))
	return s
}

// decodeStrict decodes a manifest into its Go type, refusing unknown and
// duplicate fields.
func decodeStrict(t *testing.T, s *runtime.Scheme, m Manifest) runtime.Object {
	t.Helper()
	var tm metav1.TypeMeta
	require.NoError(t, yaml.Unmarshal([]byte(m.Content), &tm), m.Source)
	obj, err := s.New(tm.GroupVersionKind())
	require.NoError(t, err, "%s: %s %s", m.Source, tm.APIVersion, tm.Kind)
	require.NoError(t, yaml.UnmarshalStrict([]byte(m.Content), obj), "%s: %s %s", m.Source, m.Kind, m.Name)
	return obj
}

func TestScenariosDecodeStrictly(t *testing.T) {
	s := newScheme(t)
	for _, sc := range append([]string{""}, scenarios(t)...) {
		t.Run(path.Base(sc), func(t *testing.T) {
			ms := renderScenario(t, chartFS(t), sc)
			kinds := map[string]int{}
			for _, m := range ms {
				obj := decodeStrict(t, s, m)
				kinds[m.Kind]++
				meta, ok := obj.(metav1.Object)
				require.True(t, ok, m.Kind)
				require.Equal(t, m.Name, meta.GetName())
				require.NotEmpty(t, meta.GetLabels()["app.kubernetes.io/part-of"], "%s %s has no part-of label", m.Kind, m.Name)
				if m.Kind != "ClusterRole" && m.Kind != "ClusterRoleBinding" {
					require.Equal(t, "monitoring", meta.GetNamespace(), "%s %s", m.Kind, m.Name)
				}
			}
			require.Equal(t, 1, kinds["StatefulSet"])
			require.Equal(t, 2, kinds["Service"])
		})
	}
}

func TestScenariosConfigLoads(t *testing.T) {
	for _, sc := range append([]string{""}, scenarios(t)...) {
		t.Run(path.Base(sc), func(t *testing.T) {
			b, err := VigilConfig(renderScenario(t, chartFS(t), sc))
			require.NoError(t, err)
			// vigil serve's own loader.
			cfg, err := config.Parse("vigil.yaml", b)
			require.NoError(t, err)
			// Prometheus's own loader, over the Prometheus sections alone.
			prom := prometheusSections(t, b)
			if sc == "ci/external-prometheus-values.yaml" {
				require.Nil(t, cfg.Scrape.ScrapeConfigs, "attached mode scrapes nothing")
				require.Equal(t, "http://kube-prometheus-stack-prometheus.monitoring:9090", cfg.Source.URL)
				require.Len(t, prom.RemoteWriteConfigs, 1)
				require.Len(t, cfg.Scrape.RemoteWriteConfigs, 1, "vigil serve reads the remote_write section")
				return
			}
			var jobs []string
			for _, c := range prom.ScrapeConfigs {
				jobs = append(jobs, c.JobName)
			}
			require.Subset(t, jobs, []string{"dcgm-exporter", "inference", "kube-state-metrics", "node-exporter"})
			if sc != "" {
				require.NotEmpty(t, cfg.Alerting.Alertmanagers, "every ci/ scenario names an Alertmanager")
			}
		})
	}
}

// prometheusSections loads vigil.yaml's global, scrape_configs and
// remote_write with Prometheus's config.Load.
func prometheusSections(t *testing.T, vigilYAML []byte) *promconfig.Config {
	t.Helper()
	var all map[string]any
	require.NoError(t, yaml.Unmarshal(vigilYAML, &all))
	keep := map[string]any{}
	for _, k := range []string{"global", "scrape_configs", "remote_write"} {
		if v, ok := all[k]; ok {
			keep[k] = v
		}
	}
	b, err := yaml.Marshal(keep)
	require.NoError(t, err)
	cfg, err := promconfig.Load(string(b), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return cfg
}

// discoveryRules is what Prometheus's Kubernetes discovery reads for cfg's
// scrape configs (discovery/kubernetes: each role's informers, and
// attach_metadata's), as RBAC rules: get, list and watch per API group.
func discoveryRules(cfg *promconfig.Config) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	add := func(group string, res ...string) {
		for _, r := range res {
			if !slices.Contains(byGroup[group], r) {
				byGroup[group] = append(byGroup[group], r)
			}
		}
	}
	for _, sc := range cfg.ScrapeConfigs {
		for _, d := range sc.ServiceDiscoveryConfigs {
			k, ok := d.(*kubernetes.SDConfig)
			if !ok {
				continue
			}
			switch k.Role {
			case kubernetes.RolePod:
				add("", "pods")
			case kubernetes.RoleNode:
				add("", "nodes")
			case kubernetes.RoleService:
				add("", "services")
			case kubernetes.RoleEndpoint:
				add("", "endpoints", "services", "pods")
			case kubernetes.RoleEndpointSlice:
				add("discovery.k8s.io", "endpointslices")
				add("", "services", "pods")
			case kubernetes.RoleIngress:
				add("networking.k8s.io", "ingresses")
			}
			if k.AttachMetadata.Node {
				add("", "nodes")
			}
			if k.AttachMetadata.Namespace {
				add("", "namespaces")
			}
			if k.AttachMetadata.Deployment {
				add("apps", "replicasets")
			}
			if k.AttachMetadata.Job || k.AttachMetadata.CronJob {
				add("batch", "jobs")
			}
		}
	}
	var out []rbacv1.PolicyRule
	for group, res := range byGroup {
		slices.Sort(res)
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: res, Verbs: []string{"get", "list", "watch"}})
	}
	slices.SortFunc(out, func(a, b rbacv1.PolicyRule) int { return strings.Compare(a.APIGroups[0], b.APIGroups[0]) })
	return out
}

// clusterRole returns the rendered ClusterRole's rules and whether there is
// one, checking that its binding names it and the ServiceAccount.
func clusterRole(t *testing.T, ms []Manifest) ([]rbacv1.PolicyRule, bool) {
	t.Helper()
	s := newScheme(t)
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for _, m := range ms {
		switch obj := decodeStrict(t, s, m).(type) {
		case *rbacv1.ClusterRole:
			role = obj
		case *rbacv1.ClusterRoleBinding:
			binding = obj
		case *appsv1.StatefulSet:
			// The pods mount the token only when they discover.
			require.NotNil(t, obj.Spec.Template.Spec.AutomountServiceAccountToken)
			defer func(auto bool) { require.Equal(t, role != nil, auto, "automountServiceAccountToken") }(*obj.Spec.Template.Spec.AutomountServiceAccountToken)
		}
	}
	if role == nil {
		require.Nil(t, binding, "a ClusterRoleBinding without its ClusterRole")
		return nil, false
	}
	require.NotNil(t, binding)
	require.Equal(t, role.Name, binding.RoleRef.Name)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "vigil", Namespace: "monitoring"}}, binding.Subjects)
	return role.Rules, true
}

func TestRBACIsExactlyWhatDiscoveryReads(t *testing.T) {
	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}
	want := map[string][]rbacv1.PolicyRule{
		"":                                   {pods},
		"ci/embedded-default-values.yaml":    {pods},
		"ci/with-dcgm-exporter-values.yaml":  {pods},
		"ci/external-prometheus-values.yaml": nil,
		"ci/secured-values.yaml":             {pods},
		"ci/tenancy-values.yaml":             {pods},
		"ci/ha-values.yaml": {
			{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	for _, sc := range append([]string{""}, scenarios(t)...) {
		t.Run(path.Base(sc), func(t *testing.T) {
			w, ok := want[sc]
			require.True(t, ok, "a new scenario: add its rules here")
			ms := renderScenario(t, chartFS(t), sc)
			rules, _ := clusterRole(t, ms)
			require.Equal(t, w, rules)
			b, err := VigilConfig(ms)
			require.NoError(t, err)
			require.Equal(t, discoveryRules(prometheusSections(t, b)), rules)
		})
	}
}

func TestRBACFollowsExtraScrapeConfigs(t *testing.T) {
	f := func(sd string, want ...rbacv1.PolicyRule) {
		t.Helper()
		off := []string{"scrape.dcgmExporter.enabled=false", "scrape.inference.enabled=false", "scrape.kubeStateMetrics.enabled=false", "scrape.nodeExporter.enabled=false"}
		values := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(values, []byte("scrape:\n  extraScrapeConfigs:\n    - job_name: extra\n      kubernetes_sd_configs:\n        - "+sd+"\n"), 0o644))
		ms, err := RenderChart(t.Context(), chartFS(t), Options{Namespace: "monitoring", ValuesFiles: []string{values}, Set: off})
		require.NoError(t, err, sd)
		rules, _ := clusterRole(t, ms)
		require.Equal(t, want, rules, sd)
		b, err := VigilConfig(ms)
		require.NoError(t, err)
		require.Equal(t, discoveryRules(prometheusSections(t, b)), rules, sd)
	}
	verbs := []string{"get", "list", "watch"}
	core := func(res ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: res, Verbs: verbs}
	}
	f("{role: pod}", core("pods"))
	f("{role: node}", core("nodes"))
	f("{role: service}", core("services"))
	f("{role: endpoints}", core("endpoints", "pods", "services"))
	f("{role: endpointslice}", core("pods", "services"), rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: verbs})
	f("{role: ingress}", rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: verbs})
	f("{role: pod, attach_metadata: {node: true, namespace: true}}", core("namespaces", "nodes", "pods"))
	f("{role: pod, attach_metadata: {deployment: true, cronjob: true}}",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: verbs},
		rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: verbs})
}

func TestDefaultRenderGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, renderScenario(t, chartFS(t), "")))
	golden := filepath.Join("testdata", "default.yaml")
	if *update {
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), b.String(), "go test ./internal/manifests -update rewrites it")
}

func TestInstallOrder(t *testing.T) {
	ms := renderScenario(t, chartFS(t), "ci/with-dcgm-exporter-values.yaml")
	var kinds []string
	for _, m := range ms {
		if len(kinds) == 0 || kinds[len(kinds)-1] != m.Kind {
			kinds = append(kinds, m.Kind)
		}
	}
	// Helm's install order; prometheus-operator's kinds last.
	require.Equal(t, []string{"ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Service", "DaemonSet", "StatefulSet", "ServiceMonitor"}, kinds)
	// The same input renders the same bytes.
	var a, b bytes.Buffer
	require.NoError(t, Write(&a, ms))
	require.NoError(t, Write(&b, renderScenario(t, chartFS(t), "ci/with-dcgm-exporter-values.yaml")))
	require.Equal(t, a.String(), b.String())
}

func TestStatefulSet(t *testing.T) {
	s := newScheme(t)
	for _, m := range renderScenario(t, chartFS(t), "ci/ha-values.yaml") {
		sts, ok := decodeStrict(t, s, m).(*appsv1.StatefulSet)
		if !ok {
			continue
		}
		require.Equal(t, int32(2), *sts.Spec.Replicas)
		require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
		require.Equal(t, "data", sts.Spec.VolumeClaimTemplates[0].Name)
		pod := sts.Spec.Template.Spec
		require.True(t, *pod.SecurityContext.RunAsNonRoot)
		require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
		require.Len(t, pod.Containers, 1)
		c := pod.Containers[0]
		require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
		require.Equal(t, "/-/healthy", c.LivenessProbe.HTTPGet.Path)
		require.Equal(t, "/-/ready", c.ReadinessProbe.HTTPGet.Path)
		require.Contains(t, c.Args, "--listen=0.0.0.0:9700")
		require.Contains(t, c.Args, "--otlp-grpc-listen=0.0.0.0:4317")
		require.Contains(t, c.Args, "--otlp-http-listen=0.0.0.0:4318")
		require.Contains(t, c.Args, "--data-dir=/var/lib/vigil")
		require.NotNil(t, c.Resources.Limits.Memory())
		return
	}
	t.Fatal("no StatefulSet")
}

func TestListenHostIPv6(t *testing.T) {
	ms := renderScenario(t, chartFS(t), "", "service.listenHost=::")
	var b bytes.Buffer
	require.NoError(t, Write(&b, ms))
	require.Contains(t, b.String(), "--listen=[::]:9700")
}

func TestReleaseLabel(t *testing.T) {
	s := newScheme(t)
	ms := renderScenario(t, chartFS(t), "ci/external-prometheus-values.yaml")
	var rules, monitors int
	var services []*corev1.Service
	var selector map[string]string
	for _, m := range ms {
		switch obj := decodeStrict(t, s, m).(type) {
		case *corev1.Service:
			services = append(services, obj)
		case *monitoringv1.PrometheusRule:
			rules++
			require.Equal(t, "kube-prometheus-stack", obj.Labels["release"], obj.Name)
			require.NotEmpty(t, obj.Spec.Groups, obj.Name)
		case *monitoringv1.ServiceMonitor:
			monitors++
			require.Equal(t, "kube-prometheus-stack", obj.Labels["release"])
			require.Equal(t, "http", obj.Spec.Endpoints[0].Port)
			selector = obj.Spec.Selector.MatchLabels
		}
	}
	require.Equal(t, 1, monitors)
	// The ServiceMonitor selects one of the two Services: each pod is
	// scraped once.
	var selected []string
	for _, svc := range services {
		match := true
		for k, v := range selector {
			match = match && svc.Labels[k] == v
		}
		if match {
			selected = append(selected, svc.Name)
		}
	}
	require.Equal(t, []string{"vigil"}, selected)
	files, err := fs.Glob(chartFS(t), "files/prometheusrules/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	require.Equal(t, len(files), rules)
}

func TestBadValues(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	f := func(opts Options, want string) {
		t.Helper()
		_, err := RenderChart(t.Context(), chartFS(t), opts)
		require.ErrorIs(t, err, ErrValues)
		require.NotContains(t, err.Error(), "\n")
		require.Contains(t, err.Error(), want)
	}
	f(Options{Set: []string{"nosuch=1"}}, "at '': additional properties 'nosuch' not allowed")
	f(Options{Set: []string{"image.tga=v1"}}, "at '/image': additional properties 'tga' not allowed")
	f(Options{Set: []string{"scrape.dcgmExporter.enable=true"}}, "additional properties 'enable' not allowed")
	f(Options{Set: []string{"replicas=two"}}, "at '/replicas': got string, want integer")
	f(Options{Set: []string{"a.b"}}, "--set a.b: key \"b\" has no value")
	f(Options{ValuesFiles: []string{write("list.yaml", "- a\n- b\n")}}, "values file")
	f(Options{ValuesFiles: []string{write("bad.yaml", "image: [\n")}}, "values file")
	f(Options{ValuesFiles: []string{write("unknown.yaml", "serviceMonitor:\n  relase: kps\n")}}, "additional properties 'relase' not allowed")
	f(Options{ValuesFiles: []string{filepath.Join(dir, "missing.yaml")}}, "no such file or directory")
	// A value the schema passes through but vigil serve would refuse.
	f(Options{Set: []string{"vigil.extraConfig.storage.retention=forever"}}, "the rendered vigil.yaml")
	f(Options{Set: []string{"vigil.source.url=http://prometheus:9090", "vigil.source.selector={cluster"}}, "source.selector")
	// Prometheus's sections have values of their own.
	f(Options{ValuesFiles: []string{write("rw.yaml", "vigil:\n  extraConfig:\n    remote_write: [{url: http://x}]\n")}}, "invalid propertyName 'remote_write'")
	// A discovery role Prometheus does not have.
	f(Options{ValuesFiles: []string{write("role.yaml", "scrape:\n  extraScrapeConfigs:\n    - job_name: x\n      kubernetes_sd_configs: [{role: deployment}]\n")}}, "role \"deployment\"")
}

// TestHAReplicaLabels: the two replicas of ci/ha-values.yaml share one
// vigil.yaml, so their alerts carry the same labels (Alertmanager keeps each
// once), while what each remote-writes carries its own __replica__.
func TestHAReplicaLabels(t *testing.T) {
	b, err := VigilConfig(renderScenario(t, chartFS(t), "ci/ha-values.yaml"))
	require.NoError(t, err)
	for _, pod := range []string{"vigil-0", "vigil-1"} {
		t.Setenv("POD_NAME", pod)
		cfg, err := config.Parse("vigil.yaml", b)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"cluster": "gpu-east"}, cfg.Alerting.ExternalLabels)
		require.Equal(t, pod, cfg.Scrape.GlobalConfig.ExternalLabels.Get("__replica__"))
		require.Equal(t, "gpu-east", cfg.Scrape.GlobalConfig.ExternalLabels.Get("cluster"))
		require.Len(t, cfg.Scrape.RemoteWriteConfigs, 1)
	}
}

// TestSecured: ci/secured-values.yaml mounts the web configuration's
// Secret, passes --web.config.file, probes over HTTPS with the probe
// user's header, and the ServiceMonitor scrapes over HTTPS with basic
// auth; the OTLP receivers' TLS and tokens reach vigil.yaml.
func TestSecured(t *testing.T) {
	s := newScheme(t)
	ms := renderScenario(t, chartFS(t), "ci/secured-values.yaml")
	found := 0
	for _, m := range ms {
		switch o := decodeStrict(t, s, m).(type) {
		case *appsv1.StatefulSet:
			found++
			pod := o.Spec.Template.Spec
			c := pod.Containers[0]
			require.Contains(t, c.Args, "--web.config.file=/etc/vigil-web/web-config.yml")
			for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				require.Equal(t, corev1.URISchemeHTTPS, p.HTTPGet.Scheme)
				require.Equal(t, []corev1.HTTPHeader{{Name: "Authorization", Value: "Basic cHJvYmU6cHJvYmUtcGFzc3dvcmQ="}}, p.HTTPGet.HTTPHeaders)
			}
			require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "web-config", MountPath: "/etc/vigil-web", ReadOnly: true})
			var secret string
			for _, v := range pod.Volumes {
				if v.Name == "web-config" {
					secret = v.Secret.SecretName
				}
			}
			require.Equal(t, "vigil-web", secret)
		case *monitoringv1.ServiceMonitor:
			found++
			ep := o.Spec.Endpoints[0]
			require.Equal(t, "https", string(*ep.Scheme))
			require.Equal(t, "vigil-scrape", ep.BasicAuth.Username.Name)
			require.Equal(t, "vigil", *ep.TLSConfig.ServerName)
		}
	}
	require.Equal(t, 2, found)
	b, err := VigilConfig(ms)
	require.NoError(t, err)
	cfg, err := config.Parse("vigil.yaml", b)
	require.NoError(t, err)
	require.Equal(t, "/etc/vigil-web/tls.crt", cfg.OTLP.TLS.CertFile)
	require.True(t, cfg.OTLP.OTLPAuthenticates())

	// Unsecured (the default), nothing of it renders.
	var def bytes.Buffer
	require.NoError(t, Write(&def, renderScenario(t, chartFS(t), "")))
	require.NotContains(t, def.String(), "web.config.file")
	require.NotContains(t, def.String(), "HTTPS")
}
