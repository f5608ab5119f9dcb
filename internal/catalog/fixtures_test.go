package catalog_test

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
)

var update = flag.Bool("update", false, "rewrite golden files (testdata/golden, docs/signals.md)")

// realFixtures is the project's copy of the real scrapes (never edited).
const realFixtures = "../../testdata/exposition"

// fixtureTime is when samples without a timestamp are taken as observed.
var fixtureTime = time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)

// readFixture reads one exposition file with the project's file loader.
func readFixture(t *testing.T, path string) *fileimport.File {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	file, err := fileimport.Read(filepath.Base(path), f, fileimport.DefaultOptions(fixtureTime))
	require.NoError(t, err)
	return file
}

// describe writes what the catalog makes of one series, one line.
func describe(c *catalog.Catalog, lset labels.Labels) string {
	name := lset.Get(model.MetricNameLabel)
	m, ok := c.Lookup(name)
	if !ok {
		return name + " UNKNOWN"
	}
	r := c.Resolve(m.Source.Vocabulary, lset)
	var b strings.Builder
	fmt.Fprintf(&b, "%s -> %s [%s %s]", name, m.Signal.Name, m.Source.Vocabulary, m.Source.TrueType(*m.Signal))
	if m.Source.Declared != "" {
		fmt.Fprintf(&b, " declared=%s", m.Source.Declared)
	}
	fmt.Fprintf(&b, " entity{%s}", kv(r.Entity))
	if len(r.Attributes) > 0 {
		fmt.Fprintf(&b, " attrs{%s}", kv(r.Attributes))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, " note=%q", n)
	}
	return b.String()
}

func kv(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// seriesOf returns one description per distinct series of the files.
func seriesOf(t *testing.T, c *catalog.Catalog, paths []string) string {
	t.Helper()
	var out bytes.Buffer
	for _, p := range paths {
		fmt.Fprintf(&out, "# %s\n", filepath.Base(p))
		seen := map[string]bool{}
		require.NoError(t, readFixture(t, p).Each(func(lset labels.Labels, _ int64, _ float64) error {
			line := describe(c, lset)
			if !seen[line] {
				seen[line] = true
				out.WriteString(line + "\n")
			}
			return nil
		}))
	}
	return out.String()
}

// golden compares got with a golden file, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/catalog -update to create it")
	if string(want) == got {
		return
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			t.Fatalf("%s is stale (go test ./internal/catalog -update rewrites it; review the diff); first difference at line %d:\nfile:   %q\ncatalog: %q", path, i+1, wl, gl)
		}
	}
}

// TestRealFixtures maps every real sample to a signal and an entity; the
// golden file records the whole mapping for review.
func TestRealFixtures(t *testing.T) {
	c := catalog.Default()
	paths, err := filepath.Glob(filepath.Join(realFixtures, "*.prom"))
	require.NoError(t, err)
	require.Len(t, paths, 6)
	for _, p := range paths {
		require.NoError(t, readFixture(t, p).Each(func(lset labels.Labels, _ int64, _ float64) error {
			name := lset.Get(model.MetricNameLabel)
			_, ok := c.Lookup(name)
			require.True(t, ok, "%s: %s has no catalog entry", filepath.Base(p), name)
			return nil
		}))
	}
	golden(t, "testdata/golden/exposition.txt", seriesOf(t, c, paths))
}

// TestSyntheticFixtures does the same for this package's synthetic files.
func TestSyntheticFixtures(t *testing.T) {
	c := catalog.Default()
	paths, err := filepath.Glob("testdata/synthetic/*.prom")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	got := seriesOf(t, c, paths)
	require.NotContains(t, got, "UNKNOWN")
	golden(t, "testdata/golden/synthetic.txt", got)
}

// TestFixtureEntities spells out the mappings that matter most.
func TestFixtureEntities(t *testing.T) {
	c := catalog.Default()
	type want struct {
		signal string
		entity catalog.Entity
		attrs  map[string]string
		notes  int
	}
	// first returns what the catalog makes of the first series of metric
	// in a file whose labels include match.
	first := func(path, metric, match string) catalog.Resolution {
		t.Helper()
		var r *catalog.Resolution
		require.NoError(t, readFixture(t, path).Each(func(lset labels.Labels, _ int64, _ float64) error {
			if r == nil && lset.Get(model.MetricNameLabel) == metric && strings.Contains(lset.String(), match) {
				res := c.ResolveSeries(lset)
				r = &res
			}
			return nil
		}))
		require.NotNil(t, r, "%s: no %s with %s", path, metric, match)
		return *r
	}
	f := func(path, metric, match string, w want) {
		t.Helper()
		m, ok := c.Lookup(metric)
		require.True(t, ok, metric)
		require.Equal(t, w.signal, m.Signal.Name, metric)
		r := first(path, metric, match)
		require.Equal(t, w.entity, r.Entity, "%s %s", path, metric)
		for k, v := range w.attrs {
			require.Equal(t, v, r.Attributes[k], "%s %s attribute %s", path, metric, k)
		}
		require.Len(t, r.Notes, w.notes, "%s %s: %v", path, metric, r.Notes)
	}
	real := func(name string) string { return filepath.Join(realFixtures, name) }
	syn := func(name string) string { return filepath.Join("testdata/synthetic", name) }

	// dcgm-exporter, A100 with MIG: node from Hostname.
	f(real("dcgm-exporter-a100-mig.prom"), "DCGM_FI_PROF_GR_ENGINE_ACTIVE", `GPU_I_ID="13"`, want{"gpu.gr_engine_active",
		catalog.Entity{"node": "ub20-a100-k8s", "gpu": "0", "uuid": "GPU-34319582-d595-d1c7-d1d2-179bcfa61660", "gpu_instance": "13"},
		map[string]string{catalog.AttrMIGProfile: "1g.5gb"}, 0})
	f(real("dcgm-exporter-a100-mig.prom"), "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "", want{"gpu.nvlink_bandwidth",
		catalog.Entity{"node": "ub20-a100-k8s", "gpu": "0", "uuid": "GPU-34319582-d595-d1c7-d1d2-179bcfa61660"}, nil, 0})
	// dcgm-exporter in Docker without NODE_NAME: Hostname is a container ID.
	f(real("dcgm-exporter-t4.prom"), "DCGM_FI_DEV_SM_CLOCK", "", want{"gpu.sm_clock",
		catalog.Entity{"gpu": "0", "uuid": "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"},
		map[string]string{catalog.AttrHostname: "424773df46e0", catalog.AttrGPUModel: "Tesla T4", catalog.AttrDriverVersion: "460.106.00"}, 1})
	f(real("dcgm-exporter-t4.prom"), "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "", want{"gpu.clock_event_reasons",
		catalog.Entity{"gpu": "0", "uuid": "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"}, nil, 1})
	f(real("dcgm-exporter-t4.prom"), "DCGM_FI_PROF_DRAM_ACTIVE", "", want{"gpu.dram_active",
		catalog.Entity{"node": "ip-11111", "gpu": "0", "uuid": "GPU-abc", "pod": "ray-1111111", "namespace": "ray-llm", "container": "ray-worker"},
		map[string]string{catalog.AttrGPUModel: "NVIDIA A10G"}, 0})
	// vLLM: model from model_name; the info gauge has none.
	f(real("vllm.prom"), "vllm:time_to_first_token_seconds_bucket", "", want{"infer.ttft",
		catalog.Entity{"model": "facebook/opt-125m"}, nil, 1})
	f(real("vllm.prom"), "vllm:gpu_cache_usage_perc", "", want{"infer.kv_cache_usage",
		catalog.Entity{"model": "facebook/opt-125m"}, nil, 1})
	f(real("vllm.prom"), "vllm:cache_config_info", "", want{"infer.cache_config", catalog.Entity{}, nil, 0})
	f(real("vllm.prom"), "vllm:request_success_total", "", want{"infer.request_success",
		catalog.Entity{"model": "facebook/opt-125m"}, nil, 1})
	// TGI and Triton.
	f(real("tgi.prom"), "tgi_queue_size", "", want{"infer.queue_depth", catalog.Entity{}, nil, 0})
	f(real("tgi.prom"), "tgi_request_failure", "", want{"infer.request_failure", catalog.Entity{}, nil, 0})
	f(real("triton.prom"), "nv_inference_request_duration_us", "", want{"infer.request_duration_total",
		catalog.Entity{"model": "densenet_onnx"}, map[string]string{catalog.AttrModelVersion: "1"}, 1})
	f(real("triton.prom"), "nv_gpu_memory_used_bytes", "", want{"gpu.fb_used",
		catalog.Entity{"uuid": "GPU-951eeeeb-d284-d263-688e-d98a5306389b"}, nil, 0})
	// kube-state-metrics.
	f(real("kube-state-metrics.prom"), "kube_pod_info", "", want{"k8s.pod_info",
		catalog.Entity{"node": "node2", "namespace": "ns2", "pod": "pod2", "workload": "rs-name"},
		map[string]string{catalog.AttrWorkloadKind: "ReplicaSet", catalog.AttrNodeAddress: "1.1.1.1"}, 0})
	f(real("kube-state-metrics.prom"), "kube_pod_container_status_last_terminated_reason", "", want{"k8s.container_last_terminated_reason",
		catalog.Entity{"namespace": "ns6", "pod": "pod6", "container": "container7"}, nil, 0})
	f(real("kube-state-metrics.prom"), "kube_job_failed", "", want{"k8s.job_failed",
		catalog.Entity{"namespace": "ns1", "workload": "FailedJob1"}, map[string]string{catalog.AttrWorkloadKind: "Job"}, 0})
	// kube-state-metrics' node label is the node name, even one that
	// looks like an address.
	f(real("kube-state-metrics.prom"), "kube_node_status_condition", "", want{"k8s.node_condition",
		catalog.Entity{"node": "127.0.0.1"}, nil, 0})

	// Synthetic: hostname (2026), old namespace, NIM, SGLang, OTel, node-exporter.
	f(syn("dcgm-exporter-hostname.prom"), "DCGM_EXP_XID_ERRORS_COUNT", "", want{"gpu.xid_count",
		catalog.Entity{"node": "gpu-node-06", "gpu": "3", "uuid": "GPU-8c1f0a52-3b7e-4d21-9a55-0c6d2e1f7a93",
			"namespace": "ml-train", "pod": "llm-pretrain-worker-5", "container": "trainer"}, nil, 0})
	f(syn("dcgm-exporter-old-namespace.prom"), "DCGM_FI_DEV_FB_USED", "", want{"gpu.fb_used",
		catalog.Entity{"node": "gpu-node-02", "gpu": "0", "uuid": "GPU-5d2c9e0b-7a41-4f3e-8b16-2e9f4c7a1d05", "gpu_instance": "1",
			"namespace": "inference", "pod": "vllm-6b8f-xyz12", "container": "server"},
		map[string]string{catalog.AttrMIGProfile: "3g.40gb"}, 0})
	f(syn("nim.prom"), "time_to_first_token_seconds_bucket", "", want{"infer.ttft",
		catalog.Entity{"model": "meta/llama-3.1-8b-instruct", "namespace": "nim", "pod": "llm-0"}, nil, 0})
	f(syn("nim.prom"), "gpu_cache_usage_perc", "", want{"infer.kv_cache_usage",
		catalog.Entity{"model": "meta/llama-3.1-8b-instruct", "namespace": "nim", "pod": "llm-0"}, nil, 0})
	f(syn("sglang.prom"), "sglang:num_queue_reqs", "", want{"infer.queue_depth",
		catalog.Entity{"model": "Qwen/Qwen2.5-7B-Instruct", "namespace": "research", "pod": "sglang-0"}, nil, 0})
	f(syn("vllm-v1.prom"), "vllm:inter_token_latency_seconds_count", "", want{"infer.itl",
		catalog.Entity{"model": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "llm", "pod": "chat-7d9f-abcde"},
		map[string]string{catalog.AttrEngine: "0"}, 0})
	f(syn("otel-genai.prom"), "gen_ai_server_time_to_first_token_seconds_sum", "", want{"infer.ttft",
		catalog.Entity{"model": "gpt-oss-20b", "service": "inference-gateway", "namespace": "gateway", "pod": "gateway-5c4"}, nil, 0})
	f(syn("node-exporter.prom"), "node_infiniband_port_data_received_bytes_total", "10.0.3.16", want{"node.ib_received_bytes",
		catalog.Entity{}, map[string]string{catalog.AttrNodeAddress: "10.0.3.16"}, 1})
	f(syn("node-exporter.prom"), "node_infiniband_port_data_received_bytes_total", "gpu-node-06:9100", want{"node.ib_received_bytes",
		catalog.Entity{"node": "gpu-node-06"}, nil, 0})
}
