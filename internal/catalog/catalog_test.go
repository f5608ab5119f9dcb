package catalog

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestDefaultBuilds(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	require.NotEmpty(t, c.Signals())
	require.Same(t, Default(), Default())
}

func TestLookup(t *testing.T) {
	c := Default()
	f := func(metric, signal, suffix string, trueType, declared Type) {
		t.Helper()
		m, ok := c.Lookup(metric)
		require.True(t, ok, metric)
		require.Equal(t, signal, m.Signal.Name, metric)
		require.Equal(t, suffix, m.Suffix, metric)
		require.Equal(t, trueType, m.Source.TrueType(*m.Signal), metric)
		require.Equal(t, declared, m.Source.Declared, metric)
	}
	f("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gpu.nvlink_bandwidth", "", Gauge, Counter)
	f("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gpu.tensor_active", "", Gauge, "")
	f("DCGM_FI_DEV_XID_ERRORS", "gpu.xid", "", Gauge, "")
	f("DCGM_EXP_XID_ERRORS_COUNT", "gpu.xid_count", "", Gauge, "")
	f("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gpu.clock_event_reasons", "", Gauge, "")

	for metric, want := range map[string]Type{
		"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":      Gauge,
		"DCGM_FI_PROF_PCIE_RX_BYTES":              Gauge,
		"DCGM_FI_DEV_PCIE_REPLAY_COUNTER":         Counter,
		"vllm:iteration_tokens_total_bucket":      Histogram,
		"vllm:e2e_request_latency_seconds_count":  Histogram,
		"vllm:cache_config_info":                  Info,
		"kube_pod_status_phase":                   StateSet,
		"nv_inference_count":                      Counter,
		"gen_ai_client_token_usage_sum":           Histogram,
		"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": Gauge,
	} {
		got, ok := c.TrueType(metric)
		require.True(t, ok, metric)
		require.Equal(t, want, got, metric)
	}
	_, ok := c.TrueType("unknown_metric")
	require.False(t, ok)

	_, ok = c.Lookup("DCGM_FI_DEV_GPU_TEMP_bucket")
	require.False(t, ok, "a gauge has no _bucket series")
	_, ok = c.Lookup("no_such_metric")
	require.False(t, ok)
}

func TestResolveDCGM(t *testing.T) {
	c := Default()
	f := func(lset labels.Labels, want Entity, attrs map[string]string, notes int) {
		t.Helper()
		r := c.Resolve(DCGMExporter, lset)
		require.Equal(t, want, r.Entity)
		for k, v := range attrs {
			require.Equal(t, v, r.Attributes[k], k)
		}
		require.Len(t, r.Notes, notes, r.Notes)
	}
	f(labels.FromStrings("gpu", "0", "UUID", "GPU-1", "Hostname", "node-a", "pod", "p", "namespace", "ns", "container", "c"),
		Entity{"node": "node-a", "gpu": "0", "uuid": "GPU-1", "pod": "p", "namespace": "ns", "container": "c"}, nil, 0)
	f(labels.FromStrings("gpu", "1", "uuid", "GPU-2", "hostname", "node-b", "pod_name", "p", "pod_namespace", "ns", "container_name", "c"),
		Entity{"node": "node-b", "gpu": "1", "uuid": "GPU-2", "pod": "p", "namespace": "ns", "container": "c"}, nil, 0)
	f(labels.FromStrings("gpu", "0", "UUID", "GPU-3", "Hostname", "424773df46e0", "modelName", "Tesla T4"),
		Entity{"gpu": "0", "uuid": "GPU-3"}, map[string]string{AttrHostname: "424773df46e0", AttrGPUModel: "Tesla T4"}, 1)
	f(labels.FromStrings("gpu", "0", "UUID", "GPU-4", "Hostname", "n", "GPU_I_ID", "13", "GPU_I_PROFILE", "1g.5gb"),
		Entity{"node": "n", "gpu": "0", "uuid": "GPU-4", "gpu_instance": "13"}, map[string]string{AttrMIGProfile: "1g.5gb"}, 0)
	// Scraped without honor_labels: pod/namespace name the exporter.
	f(labels.FromStrings("gpu", "0", "Hostname", "n", "pod", "dcgm-exporter-x", "namespace", "gpu-operator",
		"exported_pod", "train-0", "exported_namespace", "ml"),
		Entity{"node": "n", "gpu": "0", "pod": "train-0", "namespace": "ml"}, nil, 0)
}

func TestBlank(t *testing.T) {
	f := func(v float64, want Blank) {
		t.Helper()
		require.Equal(t, want, BlankKind(v), "%v", v)
		require.Equal(t, want != NotBlank, IsBlank(v))
	}
	f(9223372036854775794, BlankInt64)
	f(9223372036854775792, BlankInt64)
	f(float64(DCGMInt64Blank)+3, BlankInt64)
	f(140737488355328, BlankUnspecified)
	f(140737488355330, BlankNotSupported)
	f(140737488355331, BlankNotPermissioned)
	f(140737488355332, NotBlank)
	f(0, NotBlank)
	f(319159391, NotBlank)
	f(math.NaN(), NotBlank)
}

func TestClockReasons(t *testing.T) {
	f := func(v float64, want string) {
		t.Helper()
		require.Equal(t, want, FormatClockReasons(v))
	}
	f(0, "none")
	f(1, "idle")
	f(0x4|0x8, "sw_power_cap|hw_slowdown")
	f(0x20|0x40|0x80, "sw_thermal|hw_thermal|hw_power_brake")
	f(0x10|0x2, "clocks_setting|sync_boost")
	f(0x1000|0x4, "sw_power_cap|0x1000")
	f(-1, "none")
	f(1.5, "none")
	f(9223372036854775794, "none")
}

func TestXID(t *testing.T) {
	c := Default()
	f := func(code int, action Action, sev Severity, cause string) {
		t.Helper()
		x, ok := c.XID(code)
		require.True(t, ok, code)
		require.Equal(t, action, x.Action, code)
		require.Equal(t, sev, x.Severity, code)
		require.Equal(t, cause, x.Cause, code)
		require.NotEmpty(t, x.Meaning)
	}
	f(13, RestartApp, SeverityApp, CauseXID)
	f(31, RestartApp, SeverityApp, CauseXID)
	f(43, Ignore, SeverityInfo, CauseXID)
	f(45, Ignore, SeverityInfo, CauseXID)
	f(48, ResetGPU, SeverityCritical, CauseMemory)
	f(61, ContactSupport, SeverityCritical, CauseXID)
	f(62, ResetGPU, SeverityCritical, CauseXID)
	f(63, Ignore, SeverityInfo, CauseMemory)
	f(64, ResetGPU, SeverityCritical, CauseMemory)
	f(74, ResetGPU, SeverityCritical, CauseNVLink)
	f(79, RestartBM, SeverityCritical, CauseGPULost)
	f(92, Ignore, SeverityInfo, CauseMemory)
	f(94, RestartApp, SeverityApp, CauseMemory)
	f(95, ResetGPU, SeverityCritical, CauseMemory)
	f(119, ResetGPU, SeverityCritical, CauseXID)
	f(136, ResetGPU, SeverityCritical, CauseNVLink)
	for code := 144; code <= 150; code++ {
		f(code, ResetGPU, SeverityCritical, CauseNVLink)
	}
	_, ok := c.XID(1)
	require.False(t, ok, "XID 1 is unused")
}

func TestTrainingOptions(t *testing.T) {
	c, err := New(Options{Training: []TrainingMetric{
		{Metric: "trainer_global_step", Signal: SignalTrainStep, Type: Gauge},
		{Metric: "trainer_tokens_per_second", Signal: SignalTrainThroughput, Type: Gauge},
	}})
	require.NoError(t, err)
	m, ok := c.Lookup("trainer_global_step")
	require.True(t, ok)
	require.Equal(t, SignalTrainStep, m.Signal.Name)
	require.Equal(t, Gauge, m.Source.TrueType(*m.Signal), "a step gauge is not rate()d")
	q := c.SourceQuery(m.Signal, m.Source, QueryOptions{})
	require.Equal(t, "max by (namespace, pod) (trainer_global_step)", q.Expr)
	_, ok = Default().Signal(SignalTrainStep)
	require.False(t, ok, "the default catalog has no training signal")

	f := func(opts Options, want string) {
		t.Helper()
		_, err := New(opts)
		require.ErrorContains(t, err, want)
	}
	f(Options{Training: []TrainingMetric{{Signal: SignalTrainStep, Type: Counter}}}, "metric name is empty")
	f(Options{Training: []TrainingMetric{{Metric: "x", Signal: "train.loss", Type: Gauge}}}, "signal must be train.step or train.throughput")
	f(Options{Training: []TrainingMetric{{Metric: "x", Signal: SignalTrainStep, Type: Histogram}}}, "type must be counter or gauge")
	f(Options{Training: []TrainingMetric{{Metric: "x", Signal: SignalTrainStep, Type: Counter}, {Metric: "x", Signal: SignalTrainThroughput, Type: Gauge}}}, "listed twice")
	f(Options{Training: []TrainingMetric{{Metric: "vllm:num_requests_waiting", Signal: SignalTrainStep, Type: Gauge}}}, "is a source of both")
}

func TestResolveVocabularies(t *testing.T) {
	c, err := New(Options{TenantLabel: "team"})
	require.NoError(t, err)
	f := func(v Vocabulary, lset labels.Labels, want Entity, attrs map[string]string) {
		t.Helper()
		r := c.Resolve(v, lset)
		require.Equal(t, want, r.Entity, "%s %s", v, lset)
		for k, val := range attrs {
			require.Equal(t, val, r.Attributes[k], "%s attribute %s", v, k)
		}
	}
	f(KubeStateMetrics, labels.FromStrings("namespace", "ml", "pod", "w-0", "owner_kind", "PyTorchJob", "owner_name", "llm", "owner_is_controller", "true"),
		Entity{"namespace": "ml", "pod": "w-0", "workload": "llm"}, map[string]string{AttrWorkloadKind: "PyTorchJob"})
	f(KubeStateMetrics, labels.FromStrings("namespace", "ml", "pod", "static", "owner_kind", "<none>", "owner_name", "<none>"),
		Entity{"namespace": "ml", "pod": "static"}, nil)
	f(KubeStateMetrics, labels.FromStrings("namespace", "llm", "replicaset", "chat-7d9f", "owner_kind", "Deployment", "owner_name", "chat"),
		Entity{"namespace": "llm", "workload": "chat"}, map[string]string{AttrWorkloadKind: "Deployment"})
	f(KubeStateMetrics, labels.FromStrings("namespace", "ml", "statefulset", "trainer"),
		Entity{"namespace": "ml", "workload": "trainer"}, map[string]string{AttrWorkloadKind: "StatefulSet"})
	f(KubeStateMetrics, labels.FromStrings("node", "gpu-node-01", "internal_ip", "10.0.0.1"),
		Entity{"node": "gpu-node-01"}, map[string]string{AttrNodeAddress: "10.0.0.1"})
	f(NodeExporter, labels.FromStrings("instance", "[2001:db8::1]:9100"), Entity{}, map[string]string{AttrNodeAddress: "2001:db8::1"})
	f(NodeExporter, labels.FromStrings("instance", "10.0.0.1:9100", "node", "gpu-node-01"), Entity{"node": "gpu-node-01"}, nil)
	f(NodeExporter, labels.FromStrings("instance", "gpu-node-01"), Entity{"node": "gpu-node-01"}, nil)
	f(CAdvisor, labels.FromStrings("instance", "10.0.0.1:10250", "namespace", "ml", "pod", "w-0", "container", "trainer"),
		Entity{"namespace": "ml", "pod": "w-0", "container": "trainer"}, map[string]string{AttrNodeAddress: "10.0.0.1"})
	f(VLLM, labels.FromStrings("model_name", "m", "namespace", "llm", "team", "search"),
		Entity{"model": "m", "namespace": "llm", "tenant": "search"}, nil)
	f(RayServe, labels.FromStrings("deployment", "LLMServer", "application", "app", "route", "/v1"),
		Entity{"service": "LLMServer"}, nil)
	f("", labels.FromStrings("namespace", "x", "pod", "y"), Entity{"namespace": "x", "pod": "y"}, nil)
	// Scraped through a ServiceMonitor without pod attribution: the target
	// labels name dcgm-exporter's own pod and Service.
	f(DCGMExporter, labels.FromStrings("gpu", "0", "Hostname", "n1", "namespace", "gpu-operator", "pod", "nvidia-dcgm-exporter-x2v9k",
		"container", "nvidia-dcgm-exporter", "service", "nvidia-dcgm-exporter"), Entity{"node": "n1", "gpu": "0"}, nil)
	f(VLLM, labels.FromStrings("model_name", "m", "namespace", "llm", "pod", "chat-0", "service", "chat"),
		Entity{"model": "m", "namespace": "llm", "pod": "chat-0", "service": "chat"}, nil)
}

func TestResolveSeriesNodeLevel(t *testing.T) {
	c := Default()
	// kube-state-metrics scraped with honor_labels: a node series carries
	// the scrape target's namespace and pod, kube-state-metrics' own.
	r := c.ResolveSeries(labels.FromStrings("__name__", "kube_node_status_condition", "node", "gpu-node-01",
		"condition", "Ready", "status", "true", "namespace", "monitoring", "pod", "ksm-7f9c-abcde"))
	require.Equal(t, Entity{"node": "gpu-node-01"}, r.Entity)
	require.Empty(t, r.Notes)
	r = c.ResolveSeries(labels.FromStrings("__name__", "kube_pod_info", "node", "gpu-node-01", "namespace", "ml", "pod", "w-0"))
	require.Equal(t, Entity{"node": "gpu-node-01", "namespace": "ml", "pod": "w-0"}, r.Entity)
}

func TestVocabulary(t *testing.T) {
	c := Default()
	f := func(metric string, want Vocabulary) {
		t.Helper()
		v, ok := c.Vocabulary(metric)
		require.True(t, ok, metric)
		require.Equal(t, want, v, metric)
	}
	f("DCGM_FI_DEV_GPU_TEMP", DCGMExporter)
	f("DCGM_FI_DEV_SOMETHING_NEW", DCGMExporter)
	f("DCGM_FI_DRIVER_VERSION", DCGMExporter)
	f("vllm:time_to_first_token_seconds_bucket", VLLM)
	f("vllm:some_future_metric", VLLM)
	f("time_to_first_token_seconds_count", NIM)
	f("sglang:num_queue_reqs", SGLang)
	f("nv_trt_llm_request_metrics", TRTLLM)
	f("nv_inference_queue_duration_us", Triton)
	f("gen_ai_client_token_usage_bucket", OTelGenAI)
	f("kube_pod_info", KubeStateMetrics)
	f("node_load1", NodeExporter)
	f("container_oom_events_total", CAdvisor)
	_, ok := c.Vocabulary("http_requests_total")
	require.False(t, ok)
}

func TestCatalogInvariants(t *testing.T) {
	c := Default()
	units := map[string]bool{UnitRatio: true, UnitPercent: true, UnitSeconds: true, UnitBytes: true, UnitBytesPerS: true,
		UnitMiB: true, UnitMiBPerS: true, UnitWatts: true, UnitJoules: true, UnitMHz: true, UnitCelsius: true,
		UnitCount: true, UnitPerSecond: true, UnitTokens: true, UnitRequests: true, UnitCode: true, UnitBitmask: true}
	levels := map[Level]bool{LevelNode: true, LevelGPU: true, LevelGPUInstance: true, LevelPod: true, LevelContainer: true,
		LevelWorkload: true, LevelModel: true, LevelService: true, LevelTenant: true, LevelJob: true}
	types := map[Type]bool{Counter: true, Gauge: true, Histogram: true, Summary: true, Info: true, StateSet: true}
	vocabs := map[Vocabulary]bool{}
	for _, v := range Vocabularies() {
		vocabs[v] = true
	}
	for _, s := range c.Signals() {
		require.True(t, units[s.Unit], "%s: unknown unit %q", s.Name, s.Unit)
		require.True(t, levels[s.Level], "%s: unknown level %q", s.Name, s.Level)
		require.True(t, types[s.Type], "%s: unknown type %q", s.Name, s.Type)
		require.True(t, strings.HasSuffix(s.Meaning, "."), "%s: a meaning is a sentence", s.Name)
		for _, src := range s.Sources {
			require.True(t, vocabs[src.Vocabulary], "%s: unknown vocabulary %q", s.Name, src.Vocabulary)
			require.True(t, types[src.TrueType(*s)], "%s: unknown type of %s", s.Name, src.Metric)
			if src.TrueType(*s) == Counter && src.Vocabulary != TGI && src.Vocabulary != Triton {
				require.True(t, strings.HasSuffix(src.Metric, "_total") || src.Vocabulary == DCGMExporter,
					"%s: counter %s without _total", s.Name, src.Metric)
			}
		}
	}
	for _, ig := range c.IgnoredMetrics() {
		require.True(t, vocabs[ig.Vocabulary], ig.Metric)
		require.NotEmpty(t, ig.Reason, ig.Metric)
	}
}
