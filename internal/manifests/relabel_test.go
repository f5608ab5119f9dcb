package manifests

import (
	"maps"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/util/strutil"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// pod is what Prometheus's pod discovery sees of one container port.
type pod struct {
	labels, annotations map[string]string
	port                string // the container port's name
	portNumber          string
}

// target returns the labels Prometheus's role pod discovery gives the pod's
// port (discovery/kubernetes/pod.go's names), before relabelling.
func (p pod) target() *labels.Builder {
	lb := labels.NewBuilder(labels.EmptyLabels())
	lb.Set("__address__", "10.0.0.7:"+p.portNumber)
	lb.Set("__metrics_path__", "/metrics")
	lb.Set("__scheme__", "http")
	lb.Set("__meta_kubernetes_namespace", "ml")
	lb.Set("__meta_kubernetes_pod_name", "the-pod")
	lb.Set("__meta_kubernetes_pod_node_name", "gpu-node-06")
	lb.Set("__meta_kubernetes_pod_phase", "Running")
	lb.Set("__meta_kubernetes_pod_container_port_name", p.port)
	for k, v := range p.labels {
		lb.Set("__meta_kubernetes_pod_label_"+strutil.SanitizeLabelName(k), v)
		lb.Set("__meta_kubernetes_pod_labelpresent_"+strutil.SanitizeLabelName(k), "true")
	}
	for k, v := range p.annotations {
		lb.Set("__meta_kubernetes_pod_annotation_"+strutil.SanitizeLabelName(k), v)
	}
	return lb
}

// scrapedBy relabels the pod's target with each rendered job's rules and
// returns the jobs that keep it, with the target's labels (the meta labels
// dropped, as Prometheus drops them).
func scrapedBy(t *testing.T, jobs map[string][]*relabel.Config, p pod) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for job, cfgs := range jobs {
		lb := p.target()
		if !relabel.ProcessBuilder(lb, cfgs...) {
			continue
		}
		ls := map[string]string{}
		lb.Labels().Range(func(l labels.Label) {
			if len(l.Name) < 7 || l.Name[:7] != "__meta_" {
				ls[l.Name] = l.Value
			}
		})
		out[job] = ls
	}
	return out
}

// TestScrapeJobsFindTheChartsPods relabels pods labelled as each exporter's
// own chart labels them with the default render's jobs.
func TestScrapeJobsFindTheChartsPods(t *testing.T) {
	ms := renderScenario(t, chartFS(t), "ci/with-dcgm-exporter-values.yaml")
	b, err := VigilConfig(ms)
	require.NoError(t, err)
	jobs := map[string][]*relabel.Config{}
	for _, sc := range prometheusSections(t, b).ScrapeConfigs {
		jobs[sc.JobName] = sc.RelabelConfigs
	}
	// This chart's own dcgm-exporter DaemonSet's pods.
	var ds *appsv1.DaemonSet
	s := newScheme(t)
	for _, m := range ms {
		if d, ok := decodeStrict(t, s, m).(*appsv1.DaemonSet); ok {
			ds = d
		}
	}
	require.NotNil(t, ds)
	own := pod{labels: ds.Spec.Template.Labels, port: ds.Spec.Template.Spec.Containers[0].Ports[0].Name, portNumber: "9400"}

	only := func(name string, p pod, job string, want map[string]string) {
		t.Helper()
		got := scrapedBy(t, jobs, p)
		if job == "" {
			require.Empty(t, got, name)
			return
		}
		require.Equal(t, []string{job}, sortStrings(keysOf(got)), name)
		for k, v := range want {
			require.Equal(t, v, got[job][k], "%s: %s", name, k)
		}
	}
	only("dcgm-exporter, NVIDIA's chart", pod{labels: map[string]string{"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/instance": "dcgm"}, port: "metrics", portNumber: "9400"},
		"dcgm-exporter", map[string]string{"node": "gpu-node-06", "__address__": "10.0.0.7:9400"})
	only("dcgm-exporter, this chart's DaemonSet", own, "dcgm-exporter", map[string]string{"node": "gpu-node-06"})
	only("dcgm-exporter, the GPU operator", pod{labels: map[string]string{"app": "nvidia-dcgm-exporter"}, port: "metrics", portNumber: "9400"},
		"dcgm-exporter", map[string]string{"node": "gpu-node-06"})
	only("kube-state-metrics", pod{labels: map[string]string{"app.kubernetes.io/name": "kube-state-metrics"}, port: "http", portNumber: "8080"},
		"kube-state-metrics", map[string]string{"__address__": "10.0.0.7:8080", "pod": "", "node": ""})
	only("kube-state-metrics' own telemetry", pod{labels: map[string]string{"app.kubernetes.io/name": "kube-state-metrics"}, port: "metrics", portNumber: "8081"}, "", nil)
	only("node-exporter", pod{labels: map[string]string{"app.kubernetes.io/name": "prometheus-node-exporter"}, port: "metrics", portNumber: "9100"},
		"node-exporter", map[string]string{"node": "gpu-node-06", "instance": "gpu-node-06"})
	only("vLLM, annotated", pod{labels: map[string]string{"app": "llama"}, annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8000", "prometheus.io/path": "/metrics"}, port: "grpc", portNumber: "9000"},
		"inference", map[string]string{"__address__": "10.0.0.7:8000", "namespace": "ml", "pod": "the-pod", "node": "gpu-node-06"})
	only("vLLM, by its label", pod{labels: map[string]string{"app.kubernetes.io/name": "vllm"}, port: "http", portNumber: "8000"},
		"inference", map[string]string{"__address__": "10.0.0.7:8000", "pod": "the-pod"})
	only("Triton, by its app label", pod{labels: map[string]string{"app": "triton"}, port: "metrics", portNumber: "8002"},
		"inference", map[string]string{"__address__": "10.0.0.7:8002"})
	only("annotated, not scraping", pod{labels: map[string]string{"app": "vllm"}, annotations: map[string]string{"prometheus.io/scrape": "false"}, port: "grpc", portNumber: "9000"}, "", nil)
	only("another app", pod{labels: map[string]string{"app": "nginx"}, port: "http", portNumber: "80"}, "", nil)
	only("Vigil itself", pod{labels: map[string]string{"app.kubernetes.io/name": "vigil"}, port: "http", portNumber: "9700"}, "", nil)
	only("dcgm-exporter, annotated too", pod{labels: map[string]string{"app.kubernetes.io/name": "dcgm-exporter"}, annotations: map[string]string{"prometheus.io/scrape": "true"}, port: "metrics", portNumber: "9400"}, "dcgm-exporter", nil)
}

func keysOf(m map[string]map[string]string) []string {
	var out []string
	for k := range maps.Keys(m) {
		out = append(out, k)
	}
	return out
}

// TestDCGMExporterDaemonSet: the counters file from the chart, the kubelet's
// pod-resources directory for pod attribution.
func TestDCGMExporterDaemonSet(t *testing.T) {
	s := newScheme(t)
	var ds *appsv1.DaemonSet
	var counters *corev1.ConfigMap
	for _, m := range renderScenario(t, chartFS(t), "ci/with-dcgm-exporter-values.yaml") {
		switch obj := decodeStrict(t, s, m).(type) {
		case *appsv1.DaemonSet:
			ds = obj
		case *corev1.ConfigMap:
			if obj.Name == "vigil-dcgm-counters" {
				counters = obj
			}
		}
	}
	require.NotNil(t, ds)
	require.NotNil(t, counters)
	csv, err := chartFile(t, "files/vigil-counters.csv")
	require.NoError(t, err)
	require.Equal(t, string(csv), counters.Data["vigil-counters.csv"])

	spec := ds.Spec.Template.Spec
	c := spec.Containers[0]
	require.Equal(t, []string{"-f", "/etc/dcgm-exporter/vigil-counters.csv"}, c.Args)
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	require.Equal(t, "/var/lib/kubelet/pod-resources", mounts["pod-resources"].MountPath)
	require.True(t, mounts["pod-resources"].ReadOnly)
	require.Equal(t, "/etc/dcgm-exporter/vigil-counters.csv", mounts["counters"].MountPath)
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	require.Equal(t, "/var/lib/kubelet/pod-resources", vols["pod-resources"].HostPath.Path)
	require.Equal(t, "vigil-dcgm-counters", vols["counters"].ConfigMap.Name)
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	require.Equal(t, "true", env["DCGM_EXPORTER_KUBERNETES"].Value)
	require.Equal(t, "spec.nodeName", env["NODE_NAME"].ValueFrom.FieldRef.FieldPath)
	require.Equal(t, map[string]string{"nvidia.com/gpu.present": "true"}, spec.NodeSelector)
}
