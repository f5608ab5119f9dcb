package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// hypInputPipeline: the whole job waits for its input — its work drops on
// every rank alike (no rank unlike its peers) while I/O pressure rises on
// its nodes with it. Each node's pressure over the symptom's steps is read
// against its pressure over as many working steps just before them, in
// the robust spread of its working steps before the symptom: I/O of a
// checkpoint, while the job pauses, is the checkpoint's, and pressure that
// was as high before the job slowed did not slow it. The median node's
// rise is the evidence: a rise on one node is that node's. While the
// symptom holds, the pressure must still be up.
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
		working := j.working(an.v.n, workMask)
		s0, s1 := j.symptom.start, j.symptom.end
		var rises []float64
		rising, first := 0, -1
		for _, node := range j.nodes {
			r := io[nodeKey(node)]
			if r == nil {
				continue
			}
			u, onset, ok := ioRise(r.v, working, s0, s1, j.current, detect.Floor{Rel: 0.05, Abs: 0.01 * an.v.step.Seconds()})
			if !ok {
				continue
			}
			rises = append(rises, u)
			if u > 0 {
				rising++
				if first < 0 || onset < first {
					first = onset
				}
			}
		}
		u := detect.Median(rises)
		if len(rises) == 0 || !(u > 0) {
			continue
		}
		c := &candidate{kind: KindInputPipelineSlow, ent: Entity{catalog.KeyNamespace: j.ns, catalog.KeyWorkload: j.name},
			workload: j.workload(), nodes: j.nodes, onset: an.v.time(first), strength: strengthOf(u)}
		c.headline = fmt.Sprintf("%s/%s input pipeline slow", j.ns, j.name)
		c.action = "check the shared storage and the dataloaders (workers, prefetch); the GPUs wait for data on every rank"
		c.evidence = append(c.evidence, Evidence{Signal: "node_pressure_io_waiting_seconds_total",
			Query: "rate(node_pressure_io_waiting_seconds_total[2m])",
			Summary: fmt.Sprintf("I/O pressure rose with the %s on %d of the job's %d nodes from %s", j.symptomWord(), rising, len(j.nodes),
				an.v.time(first).Format(time.TimeOnly))})
		out = append(out, c)
	}
	return out, nil
}

// symptomWord names the job's symptom in a sentence.
func (j *trainJob) symptomWord() string {
	if j.stall {
		return "stall"
	}
	return "slowdown"
}

// ioRise returns the units of evidence of a node's I/O pressure v rising
// over the symptom's steps [s0, s1] against the working steps before
// them (v is its time waiting per step; floor bounds its spread below),
// the first step of the rise, and false when v has too few readings to
// tell.
func ioRise(v []float64, working []bool, s0, s1 int, current bool, floor detect.Floor) (float64, int, bool) {
	var before, during []float64
	for i := range min(s0, len(v)) {
		if working[i] {
			before = append(before, v[i])
		}
	}
	for i := s0; i <= s1 && i < len(v); i++ {
		if !math.IsNaN(v[i]) {
			during = append(during, v[i])
		}
	}
	// The earliest working readings: a rise may lead the symptom (a
	// slowdown that deepens is seen late), and must not be its own
	// reference.
	base := reference(before, floor)
	if base.N < 2*slowRun || len(during) < peerRun {
		return 0, 0, false
	}
	rise := (detect.Median(during) - base.Median) / base.Scale
	if current {
		// Still up now: its last readings against the same reference.
		rise = min(rise, (recentLow(v[:min(len(v), s1+1)], peerRun)-base.Median)/base.Scale)
	}
	// Its onset is where the pressure left noise before the symptom.
	onset := s0
	for i := s0 - 1; i >= 0 && !math.IsNaN(v[i]) && base.Z(v[i]) > noiseZ; i-- {
		onset = i
	}
	return units(rise), onset, true
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
