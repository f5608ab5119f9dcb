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

// nodeCandidate starts a candidate on a node.
func (an *analysis) nodeCandidate(kind, node string) *candidate {
	return &candidate{kind: kind, ent: Entity{catalog.KeyNode: node}, nodes: []string{node}}
}

// conditionEpisodes returns, per node, the episodes where kube-state-metrics
// reports a node condition as bad says.
func (an *analysis) conditionEpisodes(ctx context.Context, condition string, bad func(status string, v float64) bool) (map[string][]episode, error) {
	t, err := an.v.sig(ctx, "k8s.node_condition", "condition", "status")
	if err != nil {
		return nil, err
	}
	type acc struct{ badAt []bool }
	by := map[string]*acc{}
	for _, r := range t.rows {
		if r.extra["condition"] != condition {
			continue
		}
		node := r.ent[catalog.KeyNode]
		a := by[node]
		if a == nil {
			a = &acc{badAt: make([]bool, an.v.n)}
			by[node] = a
		}
		for i, x := range r.v {
			if !math.IsNaN(x) && bad(r.extra["status"], x) {
				a.badAt[i] = true
			}
		}
	}
	out := map[string][]episode{}
	for node, a := range by {
		if es := episodes(an.v.n, func(i int) bool { return a.badAt[i] }, 1); len(es) > 0 {
			out[node] = es
		}
	}
	return out, nil
}

// vanish says when an entity's series stopped: present before step at,
// absent from at to the end of the window.
type vanish struct{ at int }

// vanished returns the rows of a table whose series stopped inside the
// window at least two steps before its end.
func (an *analysis) vanished(t *table) map[string]vanish {
	out := map[string]vanish{}
	for _, r := range t.rows {
		_, last := lastValid(r.v)
		if last < 0 || last >= an.v.n-2 {
			continue
		}
		out[entityKey(r.ent)] = vanish{at: last + 1}
	}
	return out
}

// hypNodeDown: kube-state-metrics marks the node not Ready (the kubelet
// stopped posting status) and its exporters fall silent at the same time.
func hypNodeDown(ctx context.Context, an *analysis) ([]*candidate, error) {
	eps, err := an.conditionEpisodes(ctx, "Ready", func(status string, x float64) bool {
		return (status == "unknown" || status == "false") && x == 1 || status == "true" && x == 0
	})
	if err != nil {
		return nil, err
	}
	load, err := an.v.sig(ctx, "node.load1")
	if err != nil {
		return nil, err
	}
	gone := an.vanished(load)
	var out []*candidate
	for _, node := range sortedKeys(eps) {
		e := eps[node][0]
		c := an.nodeCandidate(KindNodeDown, node)
		c.onset, c.strength, c.direct = an.v.time(e.start), 0.6, true
		if e.len() >= 2 {
			c.strength = 0.85
		}
		c.headline = fmt.Sprintf("%s down", node)
		c.action = fmt.Sprintf("check %s's power and kubelet (kubectl describe node %s); restart the job on healthy nodes", node, node)
		c.evidence = append(c.evidence, Evidence{Signal: "kube_node_status_condition",
			Query:   fmt.Sprintf(`kube_node_status_condition{node=%q, condition="Ready", status="true"}`, node),
			Summary: fmt.Sprintf("%s not Ready from %s for %s", node, an.v.time(e.start).Format(time.TimeOnly), time.Duration(e.len())*an.v.step)})
		if g, ok := gone[nodeKey(node)]; ok && absDiff(g.at, e.start) <= 4 {
			// The exporters fell silent with it.
			c.strength = 1 - (1-c.strength)*0.4
			c.onset = an.v.time(min(g.at, e.start))
			c.evidence = append(c.evidence, Evidence{Signal: "node_load1", Query: an.v.query("node.load1", ""),
				Summary: fmt.Sprintf("node-exporter on %s silent from %s", node, an.v.time(g.at).Format(time.TimeOnly))})
		}
		out = append(out, c)
	}
	return out, nil
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

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
			lost := slices.ContainsFunc(evs, func(e xidEvent) bool { return e.node == node && e.gpu == gpu && e.code == 79 })
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

// nodeSeries returns, per node, a derived series from a table's rows.
type nodeSeries map[string][]float64

// cpuBusy returns each node's busy CPU share per step: 1 - (idle + iowait)
// / all, from node_cpu_seconds_total.
func (an *analysis) cpuBusy(ctx context.Context) (nodeSeries, error) {
	t, err := an.v.sig(ctx, "node.cpu_seconds", "mode")
	if err != nil {
		return nil, err
	}
	all, idle := nodeSeries{}, nodeSeries{}
	for _, r := range t.rows {
		node := r.ent[catalog.KeyNode]
		for _, m := range []nodeSeries{all, idle} {
			if m[node] == nil {
				m[node] = nanSeries(an.v.n)
			}
		}
		addInto(all[node], r.v)
		if mode := r.extra["mode"]; mode == "idle" || mode == "iowait" {
			addInto(idle[node], r.v)
		}
	}
	out := nodeSeries{}
	for node, a := range all {
		s := nanSeries(an.v.n)
		for i := range s {
			if a[i] > 0 {
				s[i] = 1 - idle[node][i]/a[i]
			}
		}
		out[node] = s
	}
	return out, nil
}

func nanSeries(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

func addInto(dst, src []float64) {
	for i, x := range src {
		if math.IsNaN(x) {
			continue
		}
		if math.IsNaN(dst[i]) {
			dst[i] = 0
		}
		dst[i] += x
	}
}

// nodePeerDeviations compares each node's series with the other nodes' at
// every step.
func (an *analysis) nodePeerDeviations(s nodeSeries, thr float64, floor detect.Floor) map[string]deviation {
	keys := sortedKeys(s)
	rows := make([]*row, len(keys))
	for i, k := range keys {
		rows[i] = &row{v: s[k]}
	}
	return peerDeviationsOf(rows, keys, an.v.n, thr, floor)
}

// hypNodeCPU: a node whose CPUs run far busier than its peers' for
// minutes (and near saturation): its dataloaders and NCCL proxies starve.
func hypNodeCPU(ctx context.Context, an *analysis) ([]*candidate, error) {
	busy, err := an.cpuBusy(ctx)
	if err != nil {
		return nil, err
	}
	devs := an.nodePeerDeviations(busy, slowZ, detect.Floor{Rel: 0.02, Abs: 0.01})
	var out []*candidate
	for _, node := range sortedKeys(devs) {
		d := devs[node]
		if d.ep.len() < 3 {
			continue
		}
		level := detect.Median(busy[node][d.ep.start : d.ep.end+1])
		c := an.nodeCandidate(KindNodeCPUSaturated, node)
		c.onset, c.strength = an.v.time(d.onset), 0.3
		if level >= 0.85 {
			c.strength, c.direct = 0.8, true
		}
		c.headline = fmt.Sprintf("%s CPU saturated", node)
		c.action = fmt.Sprintf("find the process eating %s's CPUs (top, kubectl top pod --all-namespaces on the node); evict it or cordon the node", node)
		c.evidence = append(c.evidence, Evidence{Signal: "node_cpu_seconds_total",
			Query:   `1 - avg(rate(node_cpu_seconds_total{mode=~"idle|iowait"}[2m]))`,
			Summary: fmt.Sprintf("CPUs %.0f%% busy from %s, %.1f× its peers' spread above them", 100*level, an.v.time(d.onset).Format(time.TimeOnly), d.z)})
		out = append(out, c)
	}
	return out, nil
}

// hypNodeMemory: the kubelet reports MemoryPressure, or a node's memory in
// use climbs far above its peers' with memory stalls (PSI).
func hypNodeMemory(ctx context.Context, an *analysis) ([]*candidate, error) {
	press, err := an.conditionEpisodes(ctx, "MemoryPressure", func(status string, x float64) bool { return status == "true" && x == 1 })
	if err != nil {
		return nil, err
	}
	ts, err := an.v.sigs(ctx, "node.memory_available", "node.memory_total")
	if err != nil {
		return nil, err
	}
	avail, tot := ts[0], ts[1].byEntity()
	used := nodeSeries{}
	for _, r := range avail.rows {
		node := r.ent[catalog.KeyNode]
		t := tot[entityKey(r.ent)]
		if t == nil {
			continue
		}
		s := nanSeries(an.v.n)
		for i := range s {
			if t.v[i] > 0 {
				s[i] = 1 - r.v[i]/t.v[i]
			}
		}
		used[node] = s
	}
	devs := an.nodePeerDeviations(used, slowZ, detect.Floor{Rel: 0.01, Abs: 0.005})
	nodes := map[string]bool{}
	for n := range press {
		nodes[n] = true
	}
	for n, d := range devs {
		if d.ep.len() >= 3 {
			nodes[n] = true
		}
	}
	var out []*candidate
	for _, node := range sortedKeys(nodes) {
		c := an.nodeCandidate(KindNodeMemoryPressure, node)
		c.headline = fmt.Sprintf("%s memory pressure", node)
		c.action = fmt.Sprintf("find what fills %s's memory (a leaking dataloader?); restart it or cordon the node before the kernel OOM-kills the rank", node)
		c.strength = 0.3
		if d, ok := devs[node]; ok {
			c.onset = an.v.time(d.onset)
			c.evidence = append(c.evidence, Evidence{Signal: "node_memory_MemAvailable_bytes",
				Query:   "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes",
				Summary: fmt.Sprintf("memory in use %.0f%% from %s, %.1f spreads above its peers'", 100*detect.Median(used[node][d.ep.start:d.ep.end+1]), an.v.time(d.onset).Format(time.TimeOnly), d.z)})
		}
		if es, ok := press[node]; ok {
			c.strength, c.direct = 0.85, true
			if c.onset.IsZero() || an.v.time(es[0].start).Before(c.onset) {
				c.onset = an.v.time(es[0].start)
			}
			c.evidence = append(c.evidence, Evidence{Signal: "kube_node_status_condition",
				Query:   fmt.Sprintf(`kube_node_status_condition{node=%q, condition="MemoryPressure", status="true"}`, node),
				Summary: fmt.Sprintf("MemoryPressure from %s", an.v.time(es[0].start).Format(time.TimeOnly))})
		}
		out = append(out, c)
	}
	return out, nil
}

// hypNodeNetwork: an InfiniBand port that leaves ACTIVE or goes down, or
// symbol and receive errors that keep climbing step after step.
func hypNodeNetwork(ctx context.Context, an *analysis) ([]*candidate, error) {
	cands := map[string]*candidate{}
	get := func(node string, step int) *candidate {
		c := cands[node]
		if c == nil {
			c = an.nodeCandidate(KindNodeNetworkDegraded, node)
			c.onset = an.v.time(step)
			c.headline = fmt.Sprintf("%s InfiniBand degraded", node)
			c.action = fmt.Sprintf("check %s's InfiniBand ports (ibstat, ibdiagnet) and reseat or replace the cable; restart the job on healthy nodes if collectives stay slow", node)
			cands[node] = c
		}
		if t := an.v.time(step); t.Before(c.onset) {
			c.onset = t
		}
		return c
	}
	state, err := an.v.sig(ctx, "node.ib_state", "device", "port")
	if err != nil {
		return nil, err
	}
	for _, r := range state.rows {
		i0 := firstValid(r.v)
		if i0 < 0 || r.v[i0] != 4 {
			continue
		}
		bad := episodes(an.v.n, func(i int) bool { return !math.IsNaN(r.v[i]) && r.v[i] != 4 }, 1)
		if len(bad) == 0 {
			continue
		}
		node := r.ent[catalog.KeyNode]
		c := get(node, bad[0].start)
		c.strength, c.direct = 1-(1-c.strength)*0.1, true
		c.evidence = append(c.evidence, Evidence{Signal: "node_infiniband_state_id",
			Query:   fmt.Sprintf(`node_infiniband_state_id{device=%q, port=%q}`, r.extra["device"], r.extra["port"]),
			Summary: fmt.Sprintf("port %s/%s left ACTIVE at %s", r.extra["device"], r.extra["port"], an.v.time(bad[0].start).Format(time.TimeOnly))})
	}
	for _, s := range []string{"node.ib_link_downed", "node.ib_symbol_errors", "node.ib_receive_errors", "node.network_receive_errors"} {
		t, err := an.v.sig(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, r := range t.rows {
			a := activityOf(r.v, 0)
			if a.steps == 0 || s != "node.ib_link_downed" && a.steps < 3 {
				continue
			}
			node := r.ent[catalog.KeyNode]
			c := get(node, a.first)
			st := 0.4
			perMin := a.total / (float64(an.v.n-a.first) * an.v.step.Minutes())
			switch {
			case s == "node.ib_link_downed":
				st = 0.8
			case perMin >= 10:
				st = 0.75
			}
			c.strength = 1 - (1-c.strength)*(1-st)
			c.direct = c.direct || st >= 0.75
			sp, _ := an.v.sigSpec(s)
			c.evidence = append(c.evidence, Evidence{Signal: sp.metric, Query: an.v.query(s, ""),
				Summary: fmt.Sprintf("+%.0f in %d steps from %s (%.1f/min)", a.total, a.steps, an.v.time(a.first).Format(time.TimeOnly), perMin)})
		}
	}
	var out []*candidate
	for _, k := range sortedKeys(cands) {
		out = append(out, cands[k])
	}
	return out, nil
}

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
		devs, err := an.peerDeviations(ctx, j, j.actSignal, slowZ)
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
			c.evidence = append(c.evidence, Evidence{Signal: j.actSignal, Query: an.v.query(j.actSignal, gpuMatchers(an.v, node, "")),
				Summary: fmt.Sprintf("%d GPUs of %s busier than the job's others (%.1f spreads) from %s: the others wait for it",
					count[node], node, detect.Median(zs[node]), an.v.time(first[node]).Format(time.TimeOnly))})
			out = append(out, c)
		}
	}
	return out, nil
}
