package catalog

import (
	"math"
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

	_, ok := c.Lookup("DCGM_FI_DEV_GPU_TEMP_bucket")
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
