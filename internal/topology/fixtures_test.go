package topology_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/topology"
)

// TestRealFixtures loads each real exporter sample of testdata/exposition,
// then all of them together: no error, and the warnings that say what is
// missing.
func TestRealFixtures(t *testing.T) {
	all, err := filepath.Glob(realFixture("*.prom"))
	require.NoError(t, err)
	require.Len(t, all, 6)
	tests := []struct {
		name  string
		files []string
		check func(t *testing.T, topo *topology.Topology)
	}{
		{"dcgm-exporter A100 with MIG", []string{realFixture("dcgm-exporter-a100-mig.prom")}, func(t *testing.T, topo *topology.Topology) {
			require.Len(t, topo.Nodes, 1)
			n := topo.Nodes[0]
			require.Equal(t, "ub20-a100-k8s", n.Name, "Hostname is a host name: kept, unconfirmed")
			require.Len(t, n.GPUs, 1)
			g := n.GPUs[0]
			require.Equal(t, "GPU-34319582-d595-d1c7-d1d2-179bcfa61660", g.UUID)
			require.Equal(t, topology.HealthOK, g.Health, "61 °C, graphics engine 99.6 %% active")
			require.Len(t, g.Instances, 1)
			require.Equal(t, "13", g.Instances[0].ID)
			require.Equal(t, "1g.5gb", g.Instances[0].Profile)
			requireWarning(t, topo, "no kube-state-metrics series")
		}},
		{"dcgm-exporter T4 with container IDs", []string{realFixture("dcgm-exporter-t4.prom")}, func(t *testing.T, topo *topology.Topology) {
			require.Len(t, topo.Nodes, 3)
			require.Equal(t, "ip-11111", topo.Nodes[0].Name)
			require.Equal(t, []topology.PodRef{{Namespace: "ray-llm", Pod: "ray-1111111", Container: "ray-worker", By: topology.AttributedByDCGM}}, topo.Nodes[0].GPUs[0].Pods)
			require.Equal(t, topology.HealthUnknown, topo.Nodes[0].GPUs[0].Health, "only DRAM activity: nothing tells health")
			for _, n := range topo.Nodes[1:] {
				require.Empty(t, n.Name, "a container ID is never a node name")
				require.Contains(t, n.Unresolved, "container ID")
				require.Equal(t, "Tesla T4", n.GPUs[0].Model)
				require.Equal(t, topology.HealthIdle, n.GPUs[0].Health)
			}
			requireWarning(t, topo, "container ID", "424773df46e0", "551bdf382151")
		}},
		{"kube-state-metrics", []string{realFixture("kube-state-metrics.prom")}, func(t *testing.T, topo *topology.Topology) {
			require.Equal(t, []string{"127.0.0.1", "node2"}, nodeNames(topo), "a node named like an IP is a node name when kube-state-metrics says so")
			require.Equal(t, "ns2", topo.Nodes[1].Pods[0].Namespace)
			require.Equal(t, "Pending", topo.Nodes[1].Pods[0].Phase)
			require.Equal(t, "ReplicaSet", topo.Nodes[1].Pods[0].WorkloadKind)
			requireWarning(t, topo, "no kube_replicaset_owner series", "ns2/rs-name")
			requireWarning(t, topo, "no dcgm-exporter series")
		}},
		{"vLLM without target labels", []string{realFixture("vllm.prom")}, func(t *testing.T, topo *topology.Topology) {
			require.Empty(t, topo.Nodes)
			require.Empty(t, topo.Models)
			requireWarning(t, topo, "served models", "not placed", "facebook/opt-125m")
		}},
		{"TGI only", []string{realFixture("tgi.prom")}, func(t *testing.T, topo *topology.Topology) {
			require.Empty(t, topo.Nodes)
			requireWarning(t, topo, "the topology is empty")
		}},
		{"Triton only", []string{realFixture("triton.prom")}, func(t *testing.T, topo *topology.Topology) {
			require.Empty(t, topo.Nodes)
			requireWarning(t, topo, "the topology is empty")
		}},
		{"all together", all, func(t *testing.T, topo *topology.Topology) {
			require.Equal(t, []string{"127.0.0.1", "ip-11111", "node2", "ub20-a100-k8s", "", ""}, nodeNames(topo))
			requireWarning(t, topo, "kube-state-metrics has no node for", "ip-11111", "ub20-a100-k8s")
			requireWarning(t, topo, "no kube_pod_info", "ray-llm/ray-1111111")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := build(t, tt.files, nil)
			tt.check(t, topo)
			requireWellFormed(t, topo)
		})
	}
}

func nodeNames(topo *topology.Topology) []string {
	out := make([]string, 0, len(topo.Nodes))
	for _, n := range topo.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// requireWellFormed checks the invariants every topology keeps: lists are
// not nil, a node name is never an address or a container ID, every pod
// and workload has a namespace, and the text tree renders.
func requireWellFormed(t *testing.T, topo *topology.Topology) {
	t.Helper()
	require.NotNil(t, topo.Nodes)
	require.NotNil(t, topo.Workloads)
	require.NotNil(t, topo.Models)
	require.NotNil(t, topo.Warnings)
	for _, n := range topo.Nodes {
		require.NotRegexp(t, `:\d+$`, n.Name, "a node name is never IP:port")
		require.NotRegexp(t, `^[0-9a-f]{12}$`, n.Name, "a node name is never a container ID")
		require.Equal(t, n.Name == "", n.Unresolved != "", "unresolved exactly when nameless: %+v", n)
		require.NotNil(t, n.GPUs)
		require.NotNil(t, n.Pods)
		for _, g := range n.GPUs {
			require.NotEmpty(t, g.Health)
			require.NotNil(t, g.Pods)
		}
		for _, p := range n.Pods {
			require.NotEmpty(t, p.Namespace)
			require.NotEmpty(t, p.Tenant)
		}
	}
	for _, w := range topo.Workloads {
		require.NotEmpty(t, w.Namespace)
	}
	for _, m := range topo.Models {
		require.NotEmpty(t, m.Namespace)
	}
	require.NotEmpty(t, textOf(t, topo))
}
