package diagnose

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/topology"
)

// HintConfidence is the least confidence at which a cause or finding
// becomes a topology hint: what makes a report not healthy.
const HintConfidence = 0.5

// Hints returns what the report says about nodes and GPUs as topology
// hints (topology.ApplyHints), so that `vigil topology` shows what
// `vigil diagnose` names: every cause and finding with confidence ≥
// HintConfidence whose entity is a node or a GPU of one, its kind as the
// hint, strongest first (causes before findings of equal confidence).
func (r *Report) Hints() []topology.Hint {
	cs := append(slices.Clone(r.Causes), r.Findings...)
	slices.SortStableFunc(cs, func(a, b Cause) int { return cmp.Compare(b.Confidence, a.Confidence) })
	var out []topology.Hint
	for _, c := range cs {
		node := c.Entity[catalog.KeyNode]
		if c.Confidence < HintConfidence || node == "" || !onNodeOrGPU(c.Entity) {
			continue
		}
		out = append(out, topology.Hint{Node: node, GPU: c.Entity[catalog.KeyGPU], Health: topology.Health(c.Kind),
			Reason: fmt.Sprintf("%s (diagnosis, confidence %.2f)", c.Summary, c.Confidence)})
	}
	return out
}

// onNodeOrGPU reports whether an entity names a node or a whole GPU of it
// (not a pod, a workload or a MIG instance).
func onNodeOrGPU(e Entity) bool {
	for k := range e {
		switch k {
		case catalog.KeyNode, catalog.KeyGPU, catalog.KeyUUID:
		default:
			return false
		}
	}
	return true
}
