package topology

import "slices"

// Hint is a health hint another part gives a node or a GPU: the
// diagnosis's cause or finding on it, which the latest values alone (the
// topology's own hints) cannot tell, so that `vigil topology` and
// `vigil diagnose` say the same thing about it.
type Hint struct {
	// Node is the node's name.
	Node string
	// GPU is the GPU's index on the node; empty for the node itself.
	GPU string
	// Health is the hint, e.g. the cause kind pcie_degraded.
	Health Health
	// Reason explains it in one sentence.
	Reason string
}

// ApplyHints sets each hint on its node or GPU, over the topology's own
// hint; where several name one node or GPU the first wins, so pass the
// strongest first. A hint on a node or GPU the topology does not hold is
// dropped.
func (t *Topology) ApplyHints(hints []Hint) {
	done := map[[2]string]bool{}
	for _, h := range hints {
		k := [2]string{h.Node, h.GPU}
		if h.Node == "" || h.Health == "" || done[k] {
			continue
		}
		i := slices.IndexFunc(t.Nodes, func(n *Node) bool { return n.Name == h.Node })
		if i < 0 {
			continue
		}
		n := t.Nodes[i]
		if h.GPU == "" {
			n.Health, n.Reason, done[k] = h.Health, h.Reason, true
			continue
		}
		if j := slices.IndexFunc(n.GPUs, func(g *GPU) bool { return g.Index == h.GPU }); j >= 0 {
			n.GPUs[j].Health, n.GPUs[j].Reason, done[k] = h.Health, h.Reason, true
		}
	}
}
