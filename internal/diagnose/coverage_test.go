package diagnose_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// loadedSource is a promqltest storage with its PromQL engine: a
// diagnose.Source of hand-written series.
type loadedSource struct {
	*teststorage.TestStorage
	engine *promql.Engine
}

func (s loadedSource) Engine() promql.QueryEngine { return s.engine }

var _ diagnose.Source = loadedSource{}

// loadSource loads series in promqltest's load syntax (time 0 is the Unix
// epoch).
func loadSource(t *testing.T, text string) loadedSource {
	t.Helper()
	eng := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples: 10_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true, Parser: parser.NewParser(parser.Options{}),
	})
	return loadedSource{TestStorage: promqltest.LoadedStorage(t, text), engine: eng}
}

// coverageCluster is three GPU nodes, each Ready in kube-state-metrics and
// answered by node-exporter for 20 minutes: gpu-node-01's two GPUs report
// throughout; gpu-node-02's stop at 10 minutes (dcgm-exporter down while
// the node is up); gpu-node-03 has two GPUs of capacity and no
// dcgm-exporter series at all. Two pods run, one with a vLLM server.
const coverageCluster = `
load 30s
  kube_node_info{node="gpu-node-01",internal_ip="10.0.0.1"} 1x40
  kube_node_info{node="gpu-node-02",internal_ip="10.0.0.2"} 1x40
  kube_node_info{node="gpu-node-03",internal_ip="10.0.0.3"} 1x40
  kube_node_status_condition{node="gpu-node-01",condition="Ready",status="true"} 1x40
  kube_node_status_condition{node="gpu-node-02",condition="Ready",status="true"} 1x40
  kube_node_status_condition{node="gpu-node-03",condition="Ready",status="true"} 1x40
  kube_node_status_capacity{node="gpu-node-01",resource="nvidia_com_gpu",unit="integer"} 2x40
  kube_node_status_capacity{node="gpu-node-02",resource="nvidia_com_gpu",unit="integer"} 2x40
  kube_node_status_capacity{node="gpu-node-03",resource="nvidia_com_gpu",unit="integer"} 2x40
  kube_pod_info{namespace="ml",pod="train-0",node="gpu-node-01",host_ip="10.0.0.1",pod_ip="10.1.0.1"} 1x40
  kube_pod_info{namespace="serve",pod="llm-0",node="gpu-node-02",host_ip="10.0.0.2",pod_ip="10.1.0.2"} 1x40
  node_uname_info{instance="10.0.0.1:9100",nodename="gpu-node-01"} 1x40
  node_uname_info{instance="10.0.0.2:9100",nodename="gpu-node-02"} 1x40
  node_uname_info{instance="10.0.0.3:9100",nodename="gpu-node-03"} 1x40
  node_load1{instance="10.0.0.1:9100"} 1x40
  node_load1{instance="10.0.0.2:9100"} 1x40
  node_load1{instance="10.0.0.3:9100"} 1x40
  DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-01",gpu="0",UUID="GPU-10",modelName="NVIDIA H100 80GB HBM3"} 50x40
  DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-01",gpu="1",UUID="GPU-11",modelName="NVIDIA H100 80GB HBM3"} 50x40
  DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-02",gpu="0",UUID="GPU-20",modelName="NVIDIA H100 80GB HBM3"} 50x20
  DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-02",gpu="1",UUID="GPU-21",modelName="NVIDIA H100 80GB HBM3"} 50x20
  vllm:num_requests_waiting{namespace="serve",pod="llm-0",model_name="llama"} 0x40
`

// coverageAt is the evaluation time of coverageCluster: 20 minutes in.
var coverageAt = time.Unix(0, 0).Add(20 * time.Minute)

// TestCoverage checks the layers' counts and vocabularies, and the blind
// spots, on hand-built stores.
func TestCoverage(t *testing.T) {
	tests := []struct {
		name, data  string
		entityLabel string
		check       func(t *testing.T, rep *diagnose.Report)
	}{
		{
			name: "cluster", data: coverageCluster,
			check: func(t *testing.T, rep *diagnose.Report) {
				l := rep.Coverage.Layers
				require.Equal(t, diagnose.Layer{Entities: 4, Vocabularies: []string{"dcgm-exporter"}, Counts: map[string]int{"gpu": 4}}, l.GPU,
					"gpu-node-02's GPUs were seen in the window")
				require.Equal(t, diagnose.Layer{Entities: 3, Vocabularies: []string{"node-exporter"}, Counts: map[string]int{"node": 3}}, l.Node)
				require.Equal(t, diagnose.Layer{Entities: 5, Vocabularies: []string{"kube-state-metrics"}, Counts: map[string]int{"node": 3, "pod": 2}}, l.Kubernetes)
				require.Equal(t, diagnose.Layer{Entities: 2, Vocabularies: []string{"vllm"}, Counts: map[string]int{"server": 1, "model": 1}}, l.Inference)
				require.Equal(t, diagnose.Layer{Vocabularies: []string{}}, l.RequestPath)
				require.Equal(t, diagnose.Layer{Vocabularies: []string{}}, l.Logs)

				require.Len(t, rep.Coverage.Blind, 2, "%+v", rep.Coverage.Blind)
				b := rep.Coverage.Blind[0]
				require.Equal(t, diagnose.Entity{"node": "gpu-node-02"}, b.Entity)
				require.NotNil(t, b.Since)
				require.Equal(t, "dcgm-exporter stopped reporting its GPUs at "+b.Since.UTC().Format(time.TimeOnly)+" while the node is up", b.Reason)
				require.WithinDuration(t, time.Unix(0, 0).Add(11*time.Minute), *b.Since, time.Minute, "the last sample at 10:00, and the lookback after it")
				require.True(t, hasCause(rep, diagnose.KindExporterDown, diagnose.Entity{"node": "gpu-node-02"}),
					"the blind spot is the exporter_down finding's\n%s", brief(rep))
				b = rep.Coverage.Blind[1]
				require.Equal(t, diagnose.Entity{"node": "gpu-node-03"}, b.Entity)
				require.Nil(t, b.Since)
				require.Contains(t, b.Reason, "2 GPUs (nvidia.com/gpu capacity) and no dcgm-exporter series names them")
				require.False(t, rep.Blind(), "GPU data and Kubernetes are a verdict")
				require.Nil(t, l.Generic, "no entity label, no generic layer")
			},
		},
		{
			name: "gpus only",
			data: "load 30s\n" + `  DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-01",gpu="0",UUID="GPU-10"} 50x40` + "\n" +
				`  DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-01",gpu="1",UUID="GPU-11"} 50x40` + "\n",
			check: func(t *testing.T, rep *diagnose.Report) {
				require.Equal(t, 2, rep.Coverage.Layers.GPU.Entities)
				require.Zero(t, rep.Coverage.Layers.Kubernetes.Entities)
				require.Empty(t, rep.Coverage.Blind)
				require.False(t, rep.Blind())
				require.True(t, rep.Healthy, "GPU data without Kubernetes is still a verdict\n%s", brief(rep))
			},
		},
		{
			name: "request path and logs",
			data: "load 30s\n" +
				`  traces_service_graph_request_total{client="user",server="frontend",connection_type="virtual_node"} 0+10x40` + "\n" +
				`  traces_service_graph_request_total{client="frontend",server="cart"} 0+10x40` + "\n" +
				`  traces_span_metrics_calls_total{service_name="frontend",span_name="GET /",span_kind="SPAN_KIND_SERVER",status_code="STATUS_CODE_UNSET"} 0+10x40` + "\n" +
				`  traces_span_metrics_calls_total{service_name="checkout",span_name="POST /",span_kind="SPAN_KIND_SERVER",status_code="STATUS_CODE_UNSET"} 0+10x40` + "\n" +
				`  vigil_log_events_total{event="http_5xx",service="cart"} 1x40` + "\n" +
				`  vigil_log_events_total{event="oom_killed",node="gpu-node-01",namespace="ml",pod="train-0"} 1x40` + "\n" +
				`  vigil_log_xid_total{node="gpu-node-02",xid="79",pci="0000:17:00.0"} 1x40` + "\n",
			check: func(t *testing.T, rep *diagnose.Report) {
				l := rep.Coverage.Layers
				require.Equal(t, diagnose.Layer{Entities: 3, Vocabularies: []string{"servicegraph", "spanmetrics"}, Counts: map[string]int{"service": 3}}, l.RequestPath,
					"frontend, cart and checkout; the virtual user is no service")
				require.Equal(t, diagnose.Layer{Entities: 4, Vocabularies: []string{"vigil-logs"}, Counts: map[string]int{"node": 2, "pod": 1, "service": 1}}, l.Logs)
				require.Zero(t, l.GPU.Entities)
				require.False(t, rep.Blind())
			},
		},
		{
			name: "unknown vocabulary",
			data: "load 30s\n" + `  foo_requests_total{svc="a"} 0+1x40` + "\n" + `  foo_latency_seconds{svc="a"} 1x40` + "\n",
			check: func(t *testing.T, rep *diagnose.Report) {
				require.True(t, rep.Blind())
				require.False(t, rep.Healthy, "blind is not healthy")
				require.Empty(t, rep.Causes)
				require.Empty(t, rep.Symptoms)
				require.Equal(t, []diagnose.BlindSpot{{Entity: diagnose.Entity{},
					Reason: "no telemetry Vigil knows (2 metric names: foo_latency_seconds, foo_requests_total; none is dcgm-exporter's, kube-state-metrics', " +
						"node-exporter's, an inference server's, span metrics, a service graph or Vigil's log counters)"}}, rep.Coverage.Blind)
				require.Contains(t, strings.Join(rep.Warnings, "\n"), "--entity-label")
				for _, l := range []diagnose.Layer{rep.Coverage.Layers.GPU, rep.Coverage.Layers.Node, rep.Coverage.Layers.Kubernetes,
					rep.Coverage.Layers.Inference, rep.Coverage.Layers.RequestPath, rep.Coverage.Layers.Logs} {
					require.Equal(t, diagnose.Layer{Vocabularies: []string{}}, l)
				}
			},
		},
		{
			name: "unknown vocabulary with an entity label", entityLabel: "svc",
			data: "load 30s\n" + `  foo_requests_total{svc="a"} 0+1x40` + "\n" + `  foo_requests_total{svc="b"} 0+1x40` + "\n",
			check: func(t *testing.T, rep *diagnose.Report) {
				require.False(t, rep.Blind(), "the generic layer reads any vocabulary")
				require.Empty(t, rep.Coverage.Blind)
				require.Equal(t, &diagnose.Layer{Entities: 2, Vocabularies: []string{}, Counts: map[string]int{"svc": 2}}, rep.Coverage.Layers.Generic)
				require.True(t, rep.Healthy, brief(rep))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := diagnose.New(diagnose.Options{EntityLabel: tt.entityLabel})
			require.NoError(t, err)
			rep, err := eng.Diagnose(t.Context(), loadSource(t, tt.data), coverageAt)
			require.NoError(t, err)
			tt.check(t, rep)
			requireJSONFields(t, rep)
		})
	}
}

// TestCoverageText checks the page's coverage line and the blind page.
func TestCoverageText(t *testing.T) {
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	page := func(data string) string {
		rep, err := eng.Diagnose(t.Context(), loadSource(t, data), coverageAt)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, diagnose.WriteText(&b, rep, false))
		return b.String()
	}
	got := page(coverageCluster)
	require.Contains(t, got, "\nSeen: 4 GPUs (dcgm-exporter), 3 nodes (node-exporter), 3 nodes and 2 pods (kube-state-metrics), "+
		"1 server and 1 model (vllm); blind to gpu-node-02's GPUs since 00:11:30, gpu-node-03's GPUs\n")

	got = page("load 30s\n  foo_bar{x=\"1\"} 1x40\n")
	require.Regexp(t, `^Vigil diagnosis at 1970-01-01 00:20:00 UTC — BLIND: no telemetry Vigil knows \(1 metric name: foo_bar; [^\n]*\); `+
		`nothing can be said about the cluster's health\nHint: [^\n]*--entity-label`, got)
	require.NotContains(t, got, "healthy")
	require.NotContains(t, got, "No symptom", "blind says nothing about symptoms")
}

// requireCoverageJSON checks coverage's JSON (DESIGN.md): every layer
// key, even at zero, with its entities and vocabularies, and blind, an
// array of entity and reason.
func requireCoverageJSON(t *testing.T, m map[string]any) {
	t.Helper()
	require.Contains(t, m, "coverage")
	cov, ok := m["coverage"].(map[string]any)
	require.True(t, ok, "coverage is an object: %v", m["coverage"])
	layers, ok := cov["layers"].(map[string]any)
	require.True(t, ok, "coverage.layers is an object: %v", cov["layers"])
	for _, k := range []string{"gpu", "node", "kubernetes", "inference", "request_path", "logs"} {
		l, ok := layers[k].(map[string]any)
		require.True(t, ok, "coverage.layers.%s is an object: %v", k, layers)
		require.IsType(t, float64(0), l["entities"], "coverage.layers.%s.entities", k)
		require.IsType(t, []any{}, l["vocabularies"], "coverage.layers.%s.vocabularies is an array, never null", k)
	}
	require.IsType(t, []any{}, cov["blind"], "coverage.blind is an array, never null")
	for _, b := range cov["blind"].([]any) {
		obj := b.(map[string]any)
		require.IsType(t, map[string]any{}, obj["entity"])
		require.IsType(t, "", obj["reason"])
		require.NotEmpty(t, obj["reason"])
	}
}

// TestCoverageJSONOfZero: a report built by hand, without a coverage,
// still writes every key.
func TestCoverageJSONOfZero(t *testing.T) {
	b, err := json.Marshal(&diagnose.Report{Symptoms: []diagnose.Symptom{}, Causes: []diagnose.Cause{}, Findings: []diagnose.Cause{}, Warnings: []string{}})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	requireCoverageJSON(t, m)
}

// hasCause reports whether the report ranks kind on e, as a cause or a
// finding.
func hasCause(rep *diagnose.Report, kind string, e diagnose.Entity) bool {
	for _, c := range append(append([]diagnose.Cause{}, rep.Causes...), rep.Findings...) {
		if c.Kind == kind && maps.Equal(c.Entity, e) {
			return true
		}
	}
	return false
}

// TestCoverageLineBlindSpots: the page names three blind spots and counts
// the rest; a GPU is named with its node.
func TestCoverageLineBlindSpots(t *testing.T) {
	f := func(spots []diagnose.BlindSpot, want string) {
		t.Helper()
		rep := &diagnose.Report{Coverage: diagnose.Coverage{Blind: spots,
			Layers: diagnose.Layers{GPU: diagnose.Layer{Entities: 8, Vocabularies: []string{"dcgm-exporter"}, Counts: map[string]int{"gpu": 8}}}}}
		var b bytes.Buffer
		require.NoError(t, diagnose.WriteText(&b, rep, false))
		require.Equal(t, want, strings.SplitN(b.String(), "\n", 3)[1])
	}
	node := func(n string) diagnose.BlindSpot {
		return diagnose.BlindSpot{Entity: diagnose.Entity{"node": n}, Reason: "r"}
	}
	f(nil, "Seen: 8 GPUs (dcgm-exporter)")
	since := time.Date(2026, 11, 12, 2, 41, 0, 0, time.UTC)
	f([]diagnose.BlindSpot{{Entity: diagnose.Entity{"node": "n1", "gpu": "3"}, Reason: "r", Since: &since}},
		"Seen: 8 GPUs (dcgm-exporter); blind to n1 GPU 3 since 02:41:00")
	f([]diagnose.BlindSpot{node("n1"), node("n2"), node("n3")}, "Seen: 8 GPUs (dcgm-exporter); blind to n1's GPUs, n2's GPUs, n3's GPUs")
	f([]diagnose.BlindSpot{node("n1"), node("n2"), node("n3"), node("n4"), node("n5")},
		"Seen: 8 GPUs (dcgm-exporter); blind to n1's GPUs, n2's GPUs, n3's GPUs, and 2 more")
}

// TestCoverageLineGeneric: with an entity label the page counts the
// entities the generic layer ranks under the label's name.
func TestCoverageLineGeneric(t *testing.T) {
	rep := &diagnose.Report{Coverage: diagnose.Coverage{Layers: diagnose.Layers{
		Kubernetes: diagnose.Layer{Vocabularies: []string{"cadvisor"}},
		Generic:    &diagnose.Layer{Entities: 13, Counts: map[string]int{"service": 13}},
	}}}
	var b bytes.Buffer
	require.NoError(t, diagnose.WriteText(&b, rep, false))
	require.Equal(t, "Seen: no entity (cadvisor), 13 services (--entity-label service)", strings.SplitN(b.String(), "\n", 3)[1])
}
