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

// saturationUnits is the evidence of a resource's busy share: none up to
// half of it, maxUnits when full.
func saturationUnits(level float64) float64 {
	if !(level > 0.5) {
		return 0
	}
	return min(maxUnits, maxUnits*(level-0.5)/0.5)
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
		_, last := lastValid(busy[node])
		if d.ep.len() < 3 || d.ep.end < last-1 || d.ep.start <= firstValid(busy[node])+1 {
			continue // a burst that is over, or a node that always ran busier
		}
		level := detect.Median(busy[node][d.ep.start : d.ep.end+1])
		// Busier than its peers is news only as far as the CPUs fill up:
		// a node at half its CPUs has room for its dataloaders.
		sat := saturationUnits(level)
		if sat == 0 {
			continue
		}
		c := an.nodeCandidate(KindNodeCPUSaturated, node)
		c.onset, c.strength = an.v.time(d.onset), strengthOf(min(units(d.z), sat)+sat)
		c.direct = level >= 0.9
		c.headline = fmt.Sprintf("%s CPU saturated", node)
		c.action = fmt.Sprintf("find the process eating %s's CPUs (top, kubectl top pod --all-namespaces on the node); evict it or cordon the node", node)
		c.evidence = append(c.evidence, Evidence{Signal: "node_cpu_seconds_total",
			Query:   `1 - avg(rate(node_cpu_seconds_total{mode=~"idle|iowait"}[2m]))`,
			Summary: fmt.Sprintf("CPUs %.0f%% busy from %s, %.1f× its peers' spread above them", 100*level, an.v.time(d.onset).Format(time.TimeOnly), d.z)})
		out = append(out, c)
	}
	return out, nil
}

// pressureUnits is the evidence of the kubelet reporting MemoryPressure:
// its eviction threshold is crossed.
const pressureUnits = 5.0

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
	// over: the node's memory ran out earlier in the window and was
	// freed (the kernel OOM-killed a process, or it exited), and a symptom
	// on the node began while it ran out; lasting: that symptom still
	// holds (the rank killed, the job stalled behind it).
	over, lasting := map[string]bool{}, map[string]bool{}
	for n, d := range devs {
		_, last := lastValid(used[n])
		switch {
		case d.ep.len() < 3 || d.ep.start <= firstValid(used[n])+1:
			delete(devs, n) // a blip, or a node that always used more
		case d.ep.end >= last-1:
			nodes[n] = true // above its peers now, and not always
		default:
			cur, past := an.symptomWithin(n, d.ep)
			if !cur && !past {
				delete(devs, n)
				continue
			}
			nodes[n], over[n], lasting[n] = true, true, cur
		}
	}
	var out []*candidate
	for _, node := range sortedKeys(nodes) {
		c := an.nodeCandidate(KindNodeMemoryPressure, node)
		c.headline = fmt.Sprintf("%s memory pressure", node)
		c.action = fmt.Sprintf("find what fills %s's memory (a leaking dataloader?); restart it or cordon the node before the kernel OOM-kills the rank", node)
		u := 0.0
		if d, ok := devs[node]; ok {
			// Above its peers counts as far as the memory fills up: now,
			// or at its fullest when it is over.
			level, _ := lastValid(used[node])
			if over[node] {
				level = maxOf(used[node][d.ep.start : d.ep.end+1])
			}
			sat := saturationUnits(level)
			u += min(units(d.z), sat) + sat
			c.onset = an.v.time(d.onset)
			c.evidence = append(c.evidence, Evidence{Signal: "node_memory_MemAvailable_bytes",
				Query:   "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes",
				Summary: fmt.Sprintf("memory in use %.0f%% from %s, %.1f spreads above its peers'", 100*detect.Median(used[node][d.ep.start:d.ep.end+1]), an.v.time(d.onset).Format(time.TimeOnly), d.z)})
			if over[node] {
				c.evidence[len(c.evidence)-1].Summary += fmt.Sprintf(", up to %.1f%% until %s, when it was freed", 100*level, an.v.time(d.ep.end+1).Format(time.TimeOnly))
			}
		}
		if es, ok := press[node]; ok && es[len(es)-1].end >= an.v.n-2 {
			// The kubelet's own eviction threshold is crossed now.
			u += pressureUnits
			c.direct = true
			if c.onset.IsZero() || an.v.time(es[0].start).Before(c.onset) {
				c.onset = an.v.time(es[0].start)
			}
			c.evidence = append(c.evidence, Evidence{Signal: "kube_node_status_condition",
				Query:   fmt.Sprintf(`kube_node_status_condition{node=%q, condition="MemoryPressure", status="true"}`, node),
				Summary: fmt.Sprintf("MemoryPressure from %s", an.v.time(es[0].start).Format(time.TimeOnly))})
		}
		if c.strength = strengthOf(u); c.strength == 0 {
			continue
		}
		if over[node] {
			c.headline = fmt.Sprintf("%s ran out of memory %s–%s", node, an.v.time(devs[node].ep.start).Format("15:04"), an.v.time(devs[node].ep.end+1).Format("15:04"))
			if !lasting[node] {
				// History: what it slowed recovered; named, under 0.5.
				c.strength = min(c.strength, historyCap)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// symptomWithin reports whether a current symptom, and whether one that is
// over, touches node and began within episode e of a cause on it (or up
// to precedenceSlack around it).
func (an *analysis) symptomWithin(node string, e episode) (current, past bool) {
	from, to := an.v.time(e.start).Add(-precedenceSlack), an.v.time(e.end+1).Add(precedenceSlack)
	for _, s := range an.syms {
		if !slices.Contains(s.nodes, node) || s.Since.Before(from) || s.Since.After(to) {
			continue
		}
		if s.Current() {
			current = true
		} else {
			past = true
		}
	}
	return current, past
}
