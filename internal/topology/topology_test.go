package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/topology"
)

// TestMixedGolden builds the synthetic mixed dump (dcgm-exporter,
// kube-state-metrics, node-exporter, vLLM) whose nodes are named three
// ways, and compares the tree and the JSON with the golden files.
func TestMixedGolden(t *testing.T) {
	topo := build(t, []string{"testdata/mixed.om"}, nil)
	requireWellFormed(t, topo)
	golden(t, "mixed.txt.golden", textOf(t, topo))
	golden(t, "mixed.json.golden", jsonOf(t, topo))

	require.Equal(t, []string{"cpu-node-01", "gpu-node-01", "gpu-node-02", "gpu-node-03"}, nodeNames(topo), "one node per Kubernetes node, whatever each exporter calls it")
	require.Equal(t, []topology.Identity{
		{Source: "kube-state-metrics", Label: "node", Value: "gpu-node-01"},
		{Source: "dcgm-exporter", Label: "Hostname", Value: "gpu-node-01"},
		{Source: "node-exporter", Label: "instance", Value: "10.0.1.1:9100", Via: "kube_node_info internal_ip"},
	}, topo.Nodes[1].Identities)
	require.Equal(t, "hostname", topo.Nodes[2].Identities[1].Label)
	health := map[string]topology.Health{}
	for _, n := range topo.Nodes {
		for _, g := range n.GPUs {
			health[n.Name+"/"+g.Index] = g.Health
		}
	}
	require.Equal(t, map[string]topology.Health{
		"gpu-node-01/0": "ok", "gpu-node-01/1": "ok", "gpu-node-01/2": "ecc", "gpu-node-01/3": "hot",
		"gpu-node-02/0": "ok", "gpu-node-02/1": "throttled", "gpu-node-02/2": "xid", "gpu-node-02/3": "ok",
		"gpu-node-03/0": "ok", "gpu-node-03/1": "ok", "gpu-node-03/2": "lost", "gpu-node-03/3": "idle",
	}, health)
}
