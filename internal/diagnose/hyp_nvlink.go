package diagnose

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// hypNVLink: a GPU of a training job whose NVLink traffic falls below its
// peers' at the same moment (the job's collectives cross it), with NVLink
// error counters rising as corroboration. Every rank's traffic falls once
// the job waits, so the faulty GPU is the one that falls first and
// furthest; a whole node's GPUs falling together is the node's fabric.
func hypNVLink(ctx context.Context, an *analysis) ([]*candidate, error) {
	var out []*candidate
	errs, err := an.nvlinkErrors(ctx)
	if err != nil {
		return nil, err
	}
	temp, err := an.v.sig(ctx, "gpu.temp")
	if err != nil {
		return nil, err
	}
	gone := map[string][]int{} // node → steps its GPUs' series stopped at
	for k, g := range an.vanished(temp) {
		for _, r := range temp.rows {
			if entityKey(r.ent) == k {
				gone[r.ent[catalog.KeyNode]] = append(gone[r.ent[catalog.KeyNode]], g.at)
			}
		}
	}
	slack := int(precedenceSlack / an.v.step)
	for _, j := range an.jobs {
		devs, err := an.peerDeviations(ctx, j, "gpu.nvlink_bandwidth", -slowZ)
		if err != nil {
			return nil, err
		}
		drops, err := an.shareDrops(ctx, j, "gpu.nvlink_bandwidth")
		if err != nil {
			return nil, err
		}
		byNode := map[string][]gpuRef{}
		for _, g := range j.gpus {
			// Below its peers now, and below its own usual share of their
			// traffic: a GPU that always carried less (the last pipeline
			// stage) is no news.
			if d, ok := devs[g.key()]; ok && units(drops[g.key()].below(d.ratio)) > 0 {
				byNode[g.node] = append(byNode[g.node], g)
			}
		}
		for _, node := range sortedKeys(byNode) {
			gs := byNode[node]
			onset, worst, ratios := math.MaxInt, gs[0], []float64{}
			for _, g := range gs {
				d := devs[g.key()]
				onset = min(onset, d.onset)
				ratios = append(ratios, d.ratio)
				if d.ratio < devs[worst.key()].ratio {
					worst = g
				}
			}
			nodeGPUs := 0
			for _, g := range j.gpus {
				if g.node == node {
					nodeGPUs++
				}
			}
			gpu := worst.gpu
			med := detect.Median(ratios)
			if 2*len(gs) >= nodeGPUs && devs[worst.key()].ratio > 0.6*med {
				gpu = ""
			}
			// The traffic is below its peers' and its usual share now, or
			// it fell with a symptom on the node (a job that stalled with
			// it stops every rank's traffic, and the others are no longer
			// above it): an earlier dip that nothing felt is no fault (a
			// one-scrape reading taken as a checkpoint began).
			span := episode{start: onset, end: -1}
			for _, g := range gs {
				span.end = max(span.end, devs[g.key()].ep.end)
			}
			symNow, symPast := an.symptomWithin(node, span)
			// Now: its last working readings still under its usual share
			// (a checkpoint since may have ended the episode).
			current := span.end >= an.v.n-2 || slices.ContainsFunc(gs, func(g gpuRef) bool { return units(drops[g.key()].z) > 0 })
			if !current && !symNow && !symPast {
				continue
			}
			_, linkErrors := errs[node]
			if !linkErrors && slices.ContainsFunc(gone[node], func(at int) bool { return absDiff(at, onset) <= slack }) {
				// A GPU of the node fell silent as its traffic fell: the
				// others lost the peer they exchanged with, not a link
				// (gpu_lost or exporter_down name the GPU).
				continue
			}
			d := devs[worst.key()]
			drop := drops[worst.key()]
			u := units(drop.below(d.ratio))
			c := an.gpuCandidate(KindNVLinkDegraded, node, gpu)
			c.onset = an.v.time(onset)
			c.headline = fmt.Sprintf("%s NVLink degradation", node)
			c.action = fmt.Sprintf("cordon %s; restart the job on healthy nodes; run dcgmi diag -r 3 and check nvidia-smi nvlink -s on it", node)
			c.workload = j.workload()
			c.evidence = append(c.evidence, Evidence{
				Signal: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
				Query:  an.v.query("gpu.nvlink_bandwidth", gpuMatchers(an.v, node, "")),
				Summary: fmt.Sprintf("NVLink traffic of %d of %d GPUs of %s at %.0f%% of the job's other GPUs from %s (GPU %s lowest, %.0f%%)",
					len(gs), nodeGPUs, node, 100*med, an.v.time(onset).Format(time.TimeOnly), worst.gpu, 100*d.ratio) +
					fmt.Sprintf(" (usually %.0f%%)", 100*drop.usual),
			})
			if e, ok := errs[node]; ok {
				// Error counters that keep rising are the link's own word.
				u += nvlinkErrorUnits
				c.evidence = append(c.evidence, e)
			}
			c.strength = strengthOf(u)
			if !current && !symNow {
				c.strength = min(c.strength, historyCap) // over, and what it slowed recovered
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// nvlinkErrorUnits is the evidence of NVLink error counters rising in
// more than one step: direct, as strong as a signal far beyond its noise.
const nvlinkErrorUnits = 4.0

// shareDrop is how a GPU's share of the job's median GPU's signal moved:
// usually, now, and the drop in the job's spread of those shares.
type shareDrop struct{ usual, now, z, spread float64 }

// below returns how far a share runs below the usual one, in spreads
// (NaN without a usual share).
func (d shareDrop) below(share float64) float64 {
	if d.spread == 0 {
		return math.NaN()
	}
	return (d.usual - share) / d.spread
}

// shareDrops returns, per GPU key of the job, the drop of its share of the
// median GPU's signal from its usual share (the first quarter of the
// window's working steps) to now (the larger of its last two working
// readings), in the spread of the GPUs' shares.
func (an *analysis) shareDrops(ctx context.Context, j *trainJob, signal string) (map[string]shareDrop, error) {
	t, err := an.v.sig(ctx, signal)
	if err != nil {
		return nil, err
	}
	n := an.v.n
	share := shareOfPeers(j.rows(t), n)
	out := map[string]shareDrop{}
	if share == nil {
		return out, nil
	}
	working := j.working(n, 2)
	spread := spreadAcross(shareRows(share), n, working, 0.02)
	horizon := max(recentSteps, int(recentHorizon/an.v.step))
	for k, g := range j.gpus {
		if share[k] == nil {
			continue
		}
		d := shareDrop{usual: usualWorking(share[k], working), now: math.NaN(), z: math.NaN(), spread: spread}
		if recent := recentWorking(share[k], working, horizon); len(recent) > 0 {
			d.now = maxOf(pick(share[k], recent))
			d.z = d.below(d.now)
		}
		out[g.key()] = d
	}
	return out, nil
}

// nvlinkErrors finds nodes whose GPUs' NVLink error counters rose in more
// than one step (a single corrected error is noise).
func (an *analysis) nvlinkErrors(ctx context.Context) (map[string]Evidence, error) {
	out := map[string]Evidence{}
	for _, s := range []string{"gpu.nvlink_crc_flit_errors", "gpu.nvlink_crc_data_errors", "gpu.nvlink_replay_errors", "gpu.nvlink_recovery_errors"} {
		t, err := an.v.sig(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, r := range t.rows {
			a := activityOf(r.v, 0)
			node := r.ent[catalog.KeyNode]
			if a.steps < 2 {
				continue
			}
			if _, ok := out[node]; ok {
				continue
			}
			sp, _ := an.v.sigSpec(s)
			out[node] = Evidence{Signal: sp.metric, Query: an.v.query(s, gpuMatchers(an.v, node, r.ent[catalog.KeyGPU])),
				Summary: fmt.Sprintf("%s GPU %s: %.0f NVLink errors in %d steps from %s", node, r.ent[catalog.KeyGPU], a.total, a.steps,
					an.v.time(a.first).Format(time.TimeOnly))}
		}
	}
	return out, nil
}
