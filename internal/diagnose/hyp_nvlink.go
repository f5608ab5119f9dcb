package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// strengthOfRatio maps how far below its peers a GPU's signal runs (value
// / peer median) to evidence strength: halved or worse is a clear fault;
// within a few spreads (a few percent) it stays weak.
func strengthOfRatio(ratio float64) float64 {
	switch {
	case ratio <= 0.3:
		return 0.85
	case ratio <= 0.6:
		return 0.75
	case ratio <= 0.85:
		return 0.55
	}
	return 0.3
}

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
	for _, j := range an.jobs {
		devs, err := an.peerDeviations(ctx, j, "gpu.nvlink_bandwidth", -slowZ)
		if err != nil {
			return nil, err
		}
		byNode := map[string][]gpuRef{}
		for _, g := range j.gpus {
			if _, ok := devs[g.key()]; ok {
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
			d := devs[worst.key()]
			c := an.gpuCandidate(KindNVLinkDegraded, node, gpu)
			c.onset, c.strength = an.v.time(onset), strengthOfRatio(d.ratio)
			c.headline = fmt.Sprintf("%s NVLink degradation", node)
			c.action = fmt.Sprintf("cordon %s; restart the job on healthy nodes; run dcgmi diag -r 3 and check nvidia-smi nvlink -s on it", node)
			c.workload = j.workload()
			c.evidence = append(c.evidence, Evidence{
				Signal: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
				Query:  an.v.query("gpu.nvlink_bandwidth", gpuMatchers(an.v, node, "")),
				Summary: fmt.Sprintf("NVLink traffic of %d of %d GPUs of %s at %.0f%% of the job's other GPUs from %s (GPU %s lowest, %.0f%%)",
					len(gs), nodeGPUs, node, 100*med, an.v.time(onset).Format(time.TimeOnly), worst.gpu, 100*d.ratio),
			})
			if e, ok := errs[node]; ok {
				c.strength = 1 - (1-c.strength)*0.5
				c.evidence = append(c.evidence, e)
			}
			out = append(out, c)
		}
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
