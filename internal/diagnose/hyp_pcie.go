package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
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
		// The link as its peers run it at the same moment: idle links
		// train down to save power (ASPM), every GPU's at once when the
		// job pauses; a link below its peers' while they run faster, and
		// still now, is degraded.
		peers := medianAcross(t.rows, an.v.n)
		for _, r := range t.rows {
			eps := episodes(an.v.n, func(i int) bool { return r.v[i] < peers[i] }, peerRun)
			_, last := lastValid(r.v)
			if len(eps) == 0 || eps[len(eps)-1].end < last {
				continue
			}
			bad := eps[len(eps)-1:]
			want := peers[last]
			node, gpu := r.ent[catalog.KeyNode], r.ent[catalog.KeyGPU]
			low, _ := lastValid(r.v)
			c := an.pcieCandidate(cands, node, gpu, bad[0].start)
			// A link trained below its peers' is the vendor's own word:
			// five units, as strong as a signal far beyond its noise.
			c.strength = strengthOf(-4*math.Log(1-c.strength) + 5)
			c.direct = true
			sp, _ := an.v.sigSpec(sname)
			c.evidence = append(c.evidence, Evidence{Signal: sp.metric, Query: an.v.query(sname, gpuMatchers(an.v, node, gpu)),
				Summary: fmt.Sprintf("link at %.0f where its peers run %.0f, from %s", low, want, an.v.time(bad[0].start).Format(time.TimeOnly))})
		}
	}
	for _, r := range rt.rows {
		a := activityOf(r.v, 0)
		if a.steps < 3 {
			continue // a single burst of replays is a blip
		}
		node, gpu := r.ent[catalog.KeyNode], r.ent[catalog.KeyGPU]
		perMin := replayRate(r.v, an.v.step)
		u := replayUnits(perMin)
		if u == 0 {
			continue
		}
		c := an.pcieCandidate(cands, node, gpu, a.first)
		c.strength = strengthOf(-4*math.Log(1-c.strength) + u)
		c.direct = c.direct || perMin >= pcieReplayLimit
		c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Query: an.v.query("gpu.pcie_replays", gpuMatchers(an.v, node, gpu)),
			Summary: fmt.Sprintf("%.0f PCIe replays in %d steps from %s, %.0f per minute lately (DCGM's health watch fails above %.0f)",
				a.total, a.steps, an.v.time(a.first).Format(time.TimeOnly), perMin, pcieReplayLimit)})
	}
	if err := an.pcieThroughput(ctx, cands); err != nil {
		return nil, err
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

// pcieReplayLimit is the replay rate, per minute, above which DCGM's PCIe
// health watch fails (DCGM_LIMIT_MAX_PCIREPLAY_RATE).
const pcieReplayLimit = 8.0

// replayRate is a GPU's replays per minute over the last ten minutes with
// data (its increases per step in v).
func replayRate(v []float64, step time.Duration) float64 {
	n := max(1, int(10*time.Minute/step))
	sum, steps := 0.0, 0
	for i := len(v) - 1; i >= 0 && steps < n; i-- {
		if !math.IsNaN(v[i]) {
			sum += v[i]
			steps++
		}
	}
	if steps == 0 {
		return 0
	}
	return sum / (float64(steps) * step.Minutes())
}

// replayUnits is a replay rate's evidence on a log scale around DCGM's
// limit: none at a tenth of it, half the cap at the limit, the cap at ten
// times it.
func replayUnits(perMin float64) float64 {
	if !(perMin > 0) {
		return 0
	}
	u := maxUnits/2 + maxUnits/2*math.Log10(perMin/pcieReplayLimit)
	return max(0, min(maxUnits, u))
}

// pcieThroughput adds the evidence of a GPU of a training job whose PCIe
// traffic collapsed against its peers' (which move the same data), to a
// GPU that already has PCIe evidence: on its own a low share of traffic
// has other reasons.
func (an *analysis) pcieThroughput(ctx context.Context, cands map[string]*candidate) error {
	if len(cands) == 0 {
		return nil
	}
	ts, err := an.v.sigs(ctx, "gpu.pcie_tx", "gpu.pcie_rx")
	if err != nil {
		return err
	}
	horizon := max(recentSteps, int(recentHorizon/an.v.step))
	for _, j := range an.jobs {
		traffic := addRows(j.rows(ts[0]), j.rows(ts[1]), an.v.n)
		share := shareOfPeers(traffic, an.v.n)
		if share == nil {
			continue
		}
		working := j.working(an.v.n, 2)
		spread := spreadAcross(shareRows(share), an.v.n, working, 0.05)
		for k, g := range j.gpus {
			c := cands[g.key()]
			if c == nil || share[k] == nil {
				continue
			}
			recent := recentWorking(share[k], working, horizon)
			if len(recent) == 0 {
				continue
			}
			now, usual := maxOf(pick(share[k], recent)), usualWorking(share[k], working)
			u := units((usual - now) / spread)
			if u == 0 {
				continue
			}
			c.strength = strengthOf(-4*math.Log(1-c.strength) + u)
			c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", Query: an.v.query("gpu.pcie_tx", gpuMatchers(an.v, g.node, g.gpu)),
				Summary: fmt.Sprintf("PCIe traffic at %.0f%% of the job's median GPU's (usually %.0f%%)", 100*now, 100*usual)})
		}
	}
	return nil
}

// addRows adds two row lists of the same order step by step (a missing
// side counts as nothing; both missing is no row).
func addRows(a, b []*row, n int) []*row {
	out := make([]*row, len(a))
	for k := range a {
		if a[k] == nil && b[k] == nil {
			continue
		}
		v := make([]float64, n)
		for i := range n {
			x, y := math.NaN(), math.NaN()
			if a[k] != nil {
				x = a[k].v[i]
			}
			if b[k] != nil {
				y = b[k].v[i]
			}
			switch {
			case math.IsNaN(x):
				v[i] = y
			case math.IsNaN(y):
				v[i] = x
			default:
				v[i] = x + y
			}
		}
		out[k] = &row{v: v}
	}
	return out
}
