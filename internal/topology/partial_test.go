package topology_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/topology"
)

// withoutFamilies returns the mixed dump without the metric families whose
// name starts with one of prefixes.
func withoutFamilies(t *testing.T, prefixes ...string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/mixed.om")
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		name := strings.TrimPrefix(line, "# TYPE ")
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(name, p)
		}
		if !drop {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// Timestamps (milliseconds) for Prometheus text: the instant and ten
// minutes before it.
const (
	tsNow      = " 1794451800000"
	tsTenAgo   = " 1794451200000"
	h100Labels = `modelName="NVIDIA H100 80GB HBM3"`
)

func findNode(t *testing.T, topo *topology.Topology, name string) *topology.Node {
	t.Helper()
	for _, n := range topo.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q in %v", name, nodeNames(topo))
	return nil
}

// partialCase is a store's content (Prometheus text; samples without a
// timestamp are at fixtureAt) and what its topology must show.
type partialCase struct {
	name   string
	inline string
	check  func(t *testing.T, topo *topology.Topology)
}

// runCases builds each case's topology with opts and checks it.
func runCases(t *testing.T, opts topology.Options, cases []partialCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := openFiles(t, nil, map[string]string{tt.name: strings.TrimPrefix(tt.inline, "\n")})
			topo, err := topology.Build(t.Context(), s, nil, fixtureAt, opts)
			require.NoError(t, err)
			requireWellFormed(t, topo)
			tt.check(t, topo)
		})
	}
}

// TestMissingSources checks that a missing source gives a usable graph
// and a warning that says what is missing and why it matters.
func TestMissingSources(t *testing.T) {
	runCases(t, topology.DefaultOptions(), []partialCase{
		{"no kube-state-metrics", withoutFamilies(t, "kube_"), func(t *testing.T, topo *topology.Topology) {
			requireWarning(t, topo, "no kube-state-metrics series")
			require.Equal(t, []string{"cpu-node-01", "gpu-node-01", "gpu-node-02", "gpu-node-03", "", "", ""}, nodeNames(topo),
				"dcgm-exporter host names and node-exporter's nodename stand; node-exporter's IP:port instances name no node")
			for _, n := range topo.Nodes[4:] {
				require.Contains(t, n.Unresolved, "no kube-state-metrics to map address 10.0.1.")
			}
			requireWarning(t, topo, "node-exporter targets whose node nothing names", "10.0.1.1:9100")
			n := findNode(t, topo, "gpu-node-01")
			require.Equal(t, "llm-pretrain-worker-0", n.Pods[0].Pod, "dcgm-exporter's pod labels still place the pod")
			require.Empty(t, n.Pods[0].Workload)
			require.Equal(t, []string{"0", "1", "2", "3"}, n.Pods[0].GPUs)
			require.Empty(t, findNode(t, topo, "gpu-node-02").Pods, "no requests to fall back on")
			require.Len(t, topo.Models, 1, "the vLLM target with pod labels is placed")
			requireWarning(t, topo, "served models", "not placed", "meta-llama/Llama-3.1-8B-Instruct")
		}},
		{"no dcgm-exporter", withoutFamilies(t, "DCGM_"), func(t *testing.T, topo *topology.Topology) {
			requireWarning(t, topo, "no dcgm-exporter series")
			n := findNode(t, topo, "gpu-node-02")
			require.Empty(t, n.GPUs)
			require.Equal(t, 4, n.GPUCapacity)
			require.Equal(t, 4, n.Pods[0].GPURequest)
			require.Equal(t, 8, topo.Workloads[4].GPUs, "requested GPUs count where none is attributed")
		}},
		{"no node-exporter and no vLLM", withoutFamilies(t, "node_", "vllm:"), func(t *testing.T, topo *topology.Topology) {
			require.Equal(t, []string{"cpu-node-01", "gpu-node-01", "gpu-node-02", "gpu-node-03"}, nodeNames(topo))
			require.Empty(t, topo.Models)
		}},
		{"exporter silent while the node is up", `
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="n1"} 40` + tsTenAgo + `
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",Hostname="n1"} 40` + tsTenAgo + `
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-c",Hostname="gone"} 40` + tsTenAgo + `
kube_node_status_condition{node="n1",condition="Ready",status="true"} 1` + tsNow + `
`, func(t *testing.T, topo *topology.Topology) {
			require.Equal(t, []string{"n1"}, nodeNames(topo), "a node nothing reports any more is left out")
			require.Len(t, topo.Nodes[0].GPUs, 2)
			for _, g := range topo.Nodes[0].GPUs {
				require.Equal(t, topology.HealthUnknown, g.Health)
				require.Contains(t, g.Reason, "while the node is up")
			}
			requireWarning(t, topo, "dcgm-exporter is silent while its node is up", "n1")
		}},
	})
}

// TestNodeIdentity checks how odd node names resolve, or why they do not.
func TestNodeIdentity(t *testing.T) {
	runCases(t, topology.DefaultOptions(), []partialCase{
		{"container-ID Hostname placed through its pods", `
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="0123456789ab",pod="train-0",namespace="ml",container="c"} 40
kube_pod_info{namespace="ml",pod="train-0",node="gpu-7",host_ip="10.0.0.7",pod_ip="10.1.0.9"} 1
`, func(t *testing.T, topo *topology.Topology) {
			n := findNode(t, topo, "gpu-7")
			require.Len(t, n.GPUs, 1)
			require.Equal(t, []topology.Identity{
				{Source: "kube-state-metrics", Label: "node", Value: "gpu-7"},
				{Source: "dcgm-exporter", Label: "pod", Value: "ml/train-0", Via: "kube_pod_info node of the pods it attributes GPUs to"},
			}, n.Identities)
			for _, w := range topo.Warnings {
				require.NotContains(t, w, "container ID", "resolved: nothing to warn about")
			}
		}},
		{"container-ID Hostname placed through its host-network address", `
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="0123456789ab",instance="10.0.0.7:9400"} 40
kube_node_info{node="gpu-7",internal_ip="10.0.0.7"} 1
`, func(t *testing.T, topo *topology.Topology) {
			n := findNode(t, topo, "gpu-7")
			require.Len(t, n.GPUs, 1)
			require.Equal(t, "kube_node_info internal_ip", n.Identities[1].Via)
		}},
		{"exporters with custom counter lists only", `
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-a",Hostname="gpu.node+1"} 0.5
DCGM_FI_PROF_DRAM_ACTIVE{gpu="1",UUID="GPU-b",Hostname="gpu.node+1"} 0.5
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-c",instance="10.9.9.9:9400"} 1400
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-d",Hostname="gpu-node-1"} 40
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-x",Hostname="gone"} 0.5` + tsTenAgo + `
`, func(t *testing.T, topo *topology.Topology) {
			require.Equal(t, []string{"gpu-node-1", "gpu.node+1", ""}, nodeNames(topo), "found through the label index, their names matched literally")
			require.Len(t, topo.Nodes[1].GPUs, 2)
			require.Equal(t, topology.HealthUnknown, topo.Nodes[1].GPUs[0].Health)
			require.Equal(t, "GPU-c", topo.Nodes[2].GPUs[0].UUID)
			require.Contains(t, topo.Nodes[2].Unresolved, "no kube-state-metrics to map address 10.9.9.9")
		}},
		{"short host name and FQDN node", `
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="ip-10-0-0-1"} 40
kube_node_info{node="ip-10-0-0-1.ec2.internal",internal_ip="10.0.0.1"} 1
`, func(t *testing.T, topo *topology.Topology) {
			require.Equal(t, []string{"ip-10-0-0-1.ec2.internal"}, nodeNames(topo))
			require.Equal(t, "same short host name", topo.Nodes[0].Identities[1].Via)
		}},
		{"two nodes claim one IP", `
kube_node_info{node="old",internal_ip="10.0.0.9"} 1
kube_node_info{node="new",internal_ip="10.0.0.9"} 1
node_boot_time_seconds{instance="10.0.0.9:9100"} 1
`, func(t *testing.T, topo *topology.Topology) {
			requireWarning(t, topo, "two nodes claim one IP", "10.0.0.9 (new, old)")
			require.Equal(t, []string{"new", "old", ""}, nodeNames(topo))
			require.Contains(t, topo.Nodes[2].Unresolved, "claimed by two nodes")
		}},
	})
}

// TestGPUAttribution checks GPU → pod attribution and XID events.
func TestGPUAttribution(t *testing.T) {
	runCases(t, topology.DefaultOptions(), []partialCase{
		{"dcgm-exporter without pod labels, pods sharing a node", `
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="n1",` + h100Labels + `} 40
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",Hostname="n1",` + h100Labels + `} 40
kube_node_info{node="n1",internal_ip="10.0.0.1"} 1
kube_pod_info{namespace="a",pod="p1",node="n1",host_ip="10.0.0.1",pod_ip="10.1.0.1"} 1
kube_pod_info{namespace="a",pod="p2",node="n1",host_ip="10.0.0.1",pod_ip="10.1.0.2"} 1
kube_pod_container_resource_requests{namespace="a",pod="p1",container="c",node="n1",resource="nvidia_com_gpu",unit="integer"} 1
kube_pod_container_resource_requests{namespace="a",pod="p2",container="c",node="n1",resource="nvidia_com_gpu",unit="integer"} 1
`, func(t *testing.T, topo *topology.Topology) {
			n := findNode(t, topo, "n1")
			require.Empty(t, n.GPUs[0].Pods)
			require.Equal(t, 1, n.Pods[0].GPURequest)
			require.Empty(t, n.Pods[0].GPUs)
			requireWarning(t, topo, "dcgm-exporter names no pod on nodes where pods request GPUs", "n1")
			requireWarning(t, topo, "several pods share a node's GPUs", "which GPU each uses is unknown", "n1")
		}},
		{"MIG instances with their pods", `
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",GPU_I_ID="1",GPU_I_PROFILE="3g.40gb",pod="a-0",namespace="x"} 0.5
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",GPU_I_ID="2",GPU_I_PROFILE="3g.40gb",pod="b-0",namespace="x"} 0.5
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="n1"} 40
`, func(t *testing.T, topo *topology.Topology) {
			g := topo.Nodes[0].GPUs[0]
			require.Empty(t, g.Pods)
			require.Len(t, g.Instances, 2)
			require.Equal(t, []topology.PodRef{{Namespace: "x", Pod: "a-0", By: topology.AttributedByDCGM}}, g.Instances[0].Pods)
			require.Equal(t, "3g.40gb", g.Instances[1].Profile)
			require.Equal(t, []string{"0"}, topo.Nodes[0].Pods[0].GPUs)
		}},
		{"XID series per code (dcgm-exporter 3.3+)", `
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-a",Hostname="n1",err_code="0",err_msg="No Error"} 0 1794451440000
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-a",Hostname="n1",err_code="31",err_msg="GPU memory page fault"} 31 1794451740000
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-a",Hostname="n1",err_code="31",err_msg="GPU memory page fault"} 31` + tsNow + `
DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-b",Hostname="n1",err_code="48",err_msg="DBE"} 48` + tsNow + `
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",Hostname="n1"} 40` + tsNow + `
`, func(t *testing.T, topo *topology.Topology) {
			gpus := topo.Nodes[0].GPUs
			require.Equal(t, topology.HealthXID, gpus[0].Health, gpus[0].Reason)
			require.Contains(t, gpus[0].Reason, "XID 31 ")
			require.Contains(t, gpus[0].Reason, "a new XID series appeared")
			require.Equal(t, topology.HealthOK, gpus[1].Health, "one scrape: the XID may be old news")
		}},
	})
}

// TestWorkloads checks owner chains, tenants and kube-state-metrics
// scraped without honor_labels.
func TestWorkloads(t *testing.T) {
	opts := topology.DefaultOptions()
	opts.TenantLabel = "team"
	runCases(t, opts, []partialCase{
		{"kube-state-metrics scraped without honor_labels", `
kube_pod_info{namespace="monitoring",pod="ksm-0",exported_namespace="ml",exported_pod="train-0",node="n1"} 1
kube_pod_owner{namespace="monitoring",pod="ksm-0",exported_namespace="ml",exported_pod="train-0",owner_kind="Job",owner_name="train",owner_is_controller="true"} 1
`, func(t *testing.T, topo *topology.Topology) {
			p := findNode(t, topo, "n1").Pods[0]
			require.Equal(t, "ml", p.Namespace)
			require.Equal(t, "train-0", p.Pod)
			require.Equal(t, "Job", p.WorkloadKind)
		}},
		{"owner chains", `
kube_pod_info{namespace="ml",pod="lws-0",node="n1"} 1
kube_pod_owner{namespace="ml",pod="lws-0",owner_kind="StatefulSet",owner_name="llm",owner_is_controller="true"} 1
kube_pod_labels{namespace="ml",pod="lws-0",label_leaderworkerset_sigs_k8s_io_name="llm"} 1
kube_pod_info{namespace="ml",pod="ray-head",node="n1"} 1
kube_pod_owner{namespace="ml",pod="ray-head",owner_kind="RayCluster",owner_name="tune-raycluster-x7",owner_is_controller="true"} 1
kube_pod_labels{namespace="ml",pod="ray-head",label_ray_io_originated_from_crd="RayJob",label_ray_io_originated_from_cr_name="tune"} 1
kube_pod_info{namespace="ml",pod="js-0",node="n1"} 1
kube_pod_owner{namespace="ml",pod="js-0",owner_kind="Job",owner_name="js-workers-0",owner_is_controller="true"} 1
kube_job_owner{namespace="ml",job_name="js-workers-0",owner_kind="JobSet",owner_name="js",owner_is_controller="true"} 1
kube_pod_info{namespace="ml",pod="static",node="n1",created_by_kind="Node",created_by_name="n1"} 1
kube_pod_info{namespace="ml",pod="bare",node="n1",created_by_kind="<none>",created_by_name="<none>"} 1
`, func(t *testing.T, topo *topology.Topology) {
			var got []string
			for _, w := range topo.Workloads {
				got = append(got, w.Kind+"/"+w.Name)
			}
			require.Equal(t, []string{"JobSet/js", "LeaderWorkerSet/llm", "RayJob/tune"}, got)
		}},
		{"tenant label", `
kube_pod_info{namespace="a",pod="p1",node="n1"} 1
kube_pod_info{namespace="a",pod="p2",node="n1"} 1
kube_pod_info{namespace="b",pod="p3",node="n1"} 1
kube_pod_labels{namespace="a",pod="p1",label_team="search"} 1
kube_namespace_labels{namespace="a",label_team="ads"} 1
`, func(t *testing.T, topo *topology.Topology) {
			var got []string
			for _, p := range topo.Nodes[0].Pods {
				got = append(got, p.Pod+"="+p.Tenant)
			}
			require.Equal(t, []string{"p1=search", "p2=ads", "p3=b"}, got)
			requireWarning(t, topo, "lack the tenant label label_team", "b/p3")
		}},
	})
}

// TestNoData checks ErrNoData for a store without samples at or before
// the instant.
func TestNoData(t *testing.T) {
	s := openFiles(t, nil, map[string]string{"later": "kube_node_info{node=\"n1\"} 1 1894451800000\n"})
	_, err := topology.Build(t.Context(), s, nil, fixtureAt, topology.DefaultOptions())
	require.ErrorIs(t, err, topology.ErrNoData)
	require.ErrorContains(t, err, "no data at or before 2026-11-12T02:50:00Z (looked back 1h)")
}

// TestOptionsValidate checks the option errors.
func TestOptionsValidate(t *testing.T) {
	f := func(mutate func(*topology.Options), want string) {
		t.Helper()
		o := topology.DefaultOptions()
		mutate(&o)
		err := o.Validate()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.EqualError(t, err, want)
		_, err = topology.Build(t.Context(), nil, nil, fixtureAt, o)
		require.ErrorContains(t, err, want)
	}
	f(func(*topology.Options) {}, "")
	f(func(o *topology.Options) { o.Window = 0 }, "window must be positive, got 0s")
	f(func(o *topology.Options) { o.History = time.Minute }, "history (1m0s) must be at least the window (5m0s)")
	f(func(o *topology.Options) { o.TenantLabel = "a b" }, `tenant label "a b" is not a label name`)
}
