package diagnose

import (
	"context"
	"fmt"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// hypInputPipeline: the whole job waits for its input — its work drops on
// every rank alike (no rank unlike its peers) while I/O pressure rises on
// most of its nodes.
func hypInputPipeline(ctx context.Context, an *analysis) ([]*candidate, error) {
	t, err := an.v.sig(ctx, "node.pressure_io_waiting")
	if err != nil {
		return nil, err
	}
	io := t.byEntity()
	var out []*candidate
	for _, j := range an.jobs {
		if j.symptom == nil {
			continue
		}
		rising, first := 0, -1
		for _, node := range j.nodes {
			r := io[nodeKey(node)]
			if r == nil {
				continue
			}
			ref := reference(r.v, detect.Floor{Rel: 0.05, Abs: 0.01 * an.v.step.Seconds()})
			es := episodes(an.v.n, func(i int) bool { return ref.Z(r.v[i]) >= slowZ }, slowRun)
			if len(es) == 0 {
				continue
			}
			rising++
			if first < 0 || es[0].start < first {
				first = es[0].start
			}
		}
		if rising == 0 || 2*rising < len(j.nodes) {
			continue
		}
		c := &candidate{kind: KindInputPipelineSlow, ent: Entity{catalog.KeyNamespace: j.ns, catalog.KeyWorkload: j.name},
			workload: j.workload(), nodes: j.nodes, onset: an.v.time(first), strength: 0.45}
		if 4*rising >= 3*len(j.nodes) {
			c.strength = 0.75
		}
		c.headline = fmt.Sprintf("%s/%s input pipeline slow", j.ns, j.name)
		c.action = "check the shared storage and the dataloaders (workers, prefetch); the GPUs wait for data on every rank"
		c.evidence = append(c.evidence, Evidence{Signal: "node_pressure_io_waiting_seconds_total",
			Query:   "rate(node_pressure_io_waiting_seconds_total[2m])",
			Summary: fmt.Sprintf("I/O pressure rose on %d of the job's %d nodes from %s", rising, len(j.nodes), an.v.time(first).Format(time.TimeOnly))})
		out = append(out, c)
	}
	return out, nil
}

// hypStraggler: in a job that slowed or stalled, one rank's GPUs work
// unlike their peers' (busier: the others wait for it) with no hardware
// reason of its own; hardware hypotheses on the same node explain it away
// in ranking.
func hypStraggler(ctx context.Context, an *analysis) ([]*candidate, error) {
	var out []*candidate
	for _, j := range an.jobs {
		if j.symptom == nil || j.actSignal == "" {
			continue
		}
		signal := j.actSignal
		if signal == "gpu.util" && j.power != nil {
			// GPU_UTIL is 100% on every rank, waiting or not: the rank the
			// others wait for is the one still drawing its full power.
			signal = "gpu.power"
		}
		devs, err := an.peerDeviations(ctx, j, signal, slowZ)
		if err != nil {
			return nil, err
		}
		count, first := map[string]int{}, map[string]int{}
		zs := map[string][]float64{}
		for _, g := range j.gpus {
			d, ok := devs[g.key()]
			if !ok {
				continue
			}
			count[g.node]++
			zs[g.node] = append(zs[g.node], d.z)
			if f, ok := first[g.node]; !ok || d.onset < f {
				first[g.node] = d.onset
			}
		}
		perNode := len(j.gpus) / max(1, len(j.nodes))
		for _, node := range sortedKeys(count) {
			if 2*count[node] < perNode {
				continue
			}
			c := an.nodeCandidate(KindStraggler, node)
			c.workload = j.workload()
			c.onset, c.strength = an.v.time(first[node]), 0.6
			c.headline = fmt.Sprintf("%s straggling rank", node)
			c.action = fmt.Sprintf("profile the rank on %s (py-spy, nsys); cordon the node and restart the job on healthy nodes if it stays slow", node)
			c.evidence = append(c.evidence, Evidence{Signal: signal, Query: an.v.query(signal, gpuMatchers(an.v, node, "")),
				Summary: fmt.Sprintf("%d GPUs of %s busier than the job's others (%.1f spreads) from %s: the others wait for it",
					count[node], node, detect.Median(zs[node]), an.v.time(first[node]).Format(time.TimeOnly))})
			out = append(out, c)
		}
	}
	return out, nil
}
