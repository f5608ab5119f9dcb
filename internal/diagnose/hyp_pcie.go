package diagnose

import (
	"context"
	"fmt"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// hypPCIe: a GPU whose PCIe link trained below its peers' width or
// generation, or that keeps replaying packets step after step (a single
// burst of replays is a blip).
func hypPCIe(ctx context.Context, an *analysis) ([]*candidate, error) {
	var out []*candidate
	rt, err := an.v.sig(ctx, "gpu.pcie_replays")
	if err != nil {
		return nil, err
	}
	cands := map[string]*candidate{}
	for _, sname := range []string{"gpu.pcie_link_width", "gpu.pcie_link_gen"} {
		t, err := an.v.sig(ctx, sname)
		if err != nil {
			return nil, err
		}
		// The link is as trained at the window's start by the healthy
		// majority: the peers' median of each GPU's first value.
		var firsts []float64
		for _, r := range t.rows {
			if i := firstValid(r.v); i >= 0 {
				firsts = append(firsts, r.v[i])
			}
		}
		want := detect.Median(firsts)
		for _, r := range t.rows {
			bad := episodes(an.v.n, func(i int) bool { return r.v[i] < want }, peerRun)
			if len(bad) == 0 {
				continue
			}
			node, gpu := r.ent[catalog.KeyNode], r.ent[catalog.KeyGPU]
			low, _ := lastValid(r.v)
			c := an.pcieCandidate(cands, node, gpu, bad[0].start)
			c.strength = 1 - (1-c.strength)*(1-0.8)
			c.direct = true
			sp, _ := an.v.sigSpec(sname)
			c.evidence = append(c.evidence, Evidence{Signal: sp.metric, Query: an.v.query(sname, gpuMatchers(an.v, node, gpu)),
				Summary: fmt.Sprintf("link at %.0f where its peers run %.0f, from %s", low, want, an.v.time(bad[0].start).Format(time.TimeOnly))})
		}
	}
	for _, r := range rt.rows {
		a := activityOf(r.v, 0)
		if a.steps < 3 {
			continue
		}
		node, gpu := r.ent[catalog.KeyNode], r.ent[catalog.KeyGPU]
		c := an.pcieCandidate(cands, node, gpu, a.first)
		c.strength = 1 - (1-c.strength)*(1-0.4)
		c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Query: an.v.query("gpu.pcie_replays", gpuMatchers(an.v, node, gpu)),
			Summary: fmt.Sprintf("%.0f PCIe replays in %d steps from %s", a.total, a.steps, an.v.time(a.first).Format(time.TimeOnly))})
	}
	for _, k := range sortedKeys(cands) {
		out = append(out, cands[k])
	}
	return out, nil
}

func (an *analysis) pcieCandidate(m map[string]*candidate, node, gpu string, step int) *candidate {
	k := gpuKey(node, gpu)
	c := m[k]
	if c == nil {
		c = an.gpuCandidate(KindPCIeDegraded, node, gpu)
		c.onset = an.v.time(step)
		c.headline = fmt.Sprintf("%s GPU %s PCIe link degraded", node, gpu)
		c.action = fmt.Sprintf("drain %s and reseat or replace GPU %s's riser/cable; check lspci -vv for the link state", node, gpu)
		m[k] = c
	}
	if t := an.v.time(step); t.Before(c.onset) {
		c.onset = t
	}
	return c
}
