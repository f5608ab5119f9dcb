package diagnose

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// hypExporterDown: every GPU series of a node stops while the node stays
// Ready and node-exporter keeps answering — Vigil is blind to its GPUs; or
// one GPU's series stop without XID 79 while its work goes on.
func hypExporterDown(ctx context.Context, an *analysis) ([]*candidate, error) {
	ts, err := an.v.sigs(ctx, "gpu.temp", "node.load1")
	if err != nil {
		return nil, err
	}
	temp, load := ts[0], ts[1]
	gpusGone := an.vanished(temp)
	nodeGone := an.vanished(load)
	evs, err := an.xidEvents(ctx)
	if err != nil {
		return nil, err
	}
	notReady, err := an.conditionEpisodes(ctx, "Ready", func(status string, x float64) bool {
		return (status == "unknown" || status == "false") && x == 1 || status == "true" && x == 0
	})
	if err != nil {
		return nil, err
	}
	byNode := map[string][]string{}
	total := map[string]int{}
	first := map[string]int{}
	for _, r := range temp.rows {
		node := r.ent[catalog.KeyNode]
		total[node]++
		if g, ok := gpusGone[entityKey(r.ent)]; ok {
			byNode[node] = append(byNode[node], r.ent[catalog.KeyGPU])
			if f, ok := first[node]; !ok || g.at < f {
				first[node] = g.at
			}
		}
	}
	var out []*candidate
	for _, node := range sortedKeys(byNode) {
		if _, down := nodeGone[nodeKey(node)]; down || len(notReady[node]) > 0 {
			continue // the node itself is down
		}
		gs := byNode[node]
		at := first[node]
		if len(gs) == total[node] {
			c := an.nodeCandidate(KindExporterDown, node)
			c.onset, c.strength, c.direct = an.v.time(at), 0.85, true
			c.headline = fmt.Sprintf("dcgm-exporter on %s down", node)
			c.action = fmt.Sprintf("restart dcgm-exporter on %s (kubectl -n <ns> delete pod on that node); Vigil cannot see its GPUs until then", node)
			c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_GPU_TEMP", Query: an.v.query("gpu.temp", gpuMatchers(an.v, node, "")),
				Summary: fmt.Sprintf("all %d GPUs of %s stopped reporting at %s while node-exporter still answers", len(gs), node, an.v.time(at).Format(time.TimeOnly))})
			out = append(out, c)
			continue
		}
		for _, gpu := range gs {
			lost := slices.ContainsFunc(evs, func(e xidEvent) bool { return e.node == node && (e.gpu == gpu || e.gpu == "") && e.code == 79 })
			if lost {
				continue // hypXID names it gpu_lost
			}
			g := gpusGone[gpuKey(node, gpu)]
			kind, strength := KindExporterDown, 0.6
			headline := fmt.Sprintf("dcgm-exporter on %s stopped reporting GPU %s", node, gpu)
			if j := an.jobOfNode(node); j != nil && j.symptom != nil && absDiff(j.symptom.start, g.at) <= 4 {
				// Its job stopped with it: the GPU is gone, not just unseen.
				kind, strength = KindGPULost, 0.7
				headline = fmt.Sprintf("%s GPU %s lost", node, gpu)
			}
			c := an.gpuCandidate(kind, node, gpu)
			c.onset, c.strength = an.v.time(g.at), strength
			c.headline = headline
			c.action = fmt.Sprintf("check nvidia-smi on %s; if GPU %s is missing there, drain the node and reset or replace it", node, gpu)
			c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_GPU_TEMP", Query: an.v.query("gpu.temp", gpuMatchers(an.v, node, gpu)),
				Summary: fmt.Sprintf("GPU %s of %s stopped reporting at %s; its %d peers still report", gpu, node, an.v.time(g.at).Format(time.TimeOnly), total[node]-len(gs))})
			out = append(out, c)
		}
	}
	return out, nil
}
