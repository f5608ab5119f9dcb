package robust

import (
	"sort"
	"time"
)

// variation is a run's healthy variation beyond the physics' noise: the
// events a healthy cluster goes through and the scrapes that go wrong.
type variation struct {
	// missP is the chance that one scrape fails (timeout, a busy
	// exporter): up is 0 and the target's series go stale until the next.
	missP float64
	// promGaps are Prometheus restarts: no scrape of anything.
	promGaps []span
	// exporterRestarts and nodeExRestarts are dcgm-exporter and
	// node-exporter pods restarting on a node.
	exporterRestarts, nodeExRestarts []nodeSpan
	events                           []event
	// Kinds of variation drawn, for tests.
	notebookXIDs, replays, remaps, rollout, replicaRestart, driverReload bool
}

type nodeSpan struct {
	node *node
	span span
}

// event is something that happens once, at its time.
type event struct {
	at time.Time
	do func(w *world, t time.Time)
}

// drawVariation draws a run's healthy events. A fault of the vLLM
// deployment keeps its replicas: no rollout or restart then (the draws
// are made all the same, so the rest of the run stays its healthy twin's).
func drawVariation(w *world, sc Scenario) *variation {
	c, st := w.c, w.c.style
	r := newRNG(c.cfg.Seed, "variation")
	start := c.cfg.Start
	when := func(lo, hi time.Duration) time.Time {
		return start.Add(r.duration(lo, min(hi, c.cfg.Duration-5*time.Minute)))
	}
	v := &variation{missP: pick(r, []float64{0, 0.001, 0.003, 0.01})}
	if r.chance(0.2) {
		at := when(5*time.Minute, c.cfg.Duration)
		v.promGaps = append(v.promGaps, span{at, at.Add(r.duration(45*time.Second, 3*time.Minute))})
	}
	if r.chance(0.4) {
		// A dcgm-exporter pod restarts (a DaemonSet rollout, an OOM of its
		// own): its node's GPU series stop for a while; with the pod in
		// the target labels they come back under the new pod's name.
		n := pick(r, c.nodes)
		at := when(3*time.Minute, c.cfg.Duration)
		s := span{at, at.Add(r.duration(20*time.Second, 70*time.Second))}
		v.exporterRestarts = append(v.exporterRestarts, nodeSpan{n, s})
		name := "nvidia-dcgm-exporter-" + r.suffix(5)
		v.events = append(v.events, event{at: s.from, do: func(w *world, t time.Time) {
			// The old pod goes, and with it its target: Prometheus marks
			// its series stale. The new pod's target fails until its
			// exporter is up.
			old := n.dcgmPod
			old.st.deleted = true
			n.dcgmPod = c.newPod(r, old.namespace, name, old.container, n, old.ownerKind, old.ownerName, old.cpuReq, old.memReq)
			n.dcgmPod.start = t.Truncate(time.Second)
			tg := n.dcgmTarget
			if !st.dcgmMonitor {
				return // static: the same target
			}
			for _, s := range append(tg.prev, tg.up) {
				if s != nil {
					w.round = append(w.round, point{s: s, t: t.UnixMilli(), v: staleNaN})
				}
			}
			tg.labels, tg.up, tg.prev, tg.cache, tg.lastCollect = w.dcgmLabels(n), nil, nil, nil, time.Time{}
		}})
	}
	if r.chance(0.2) {
		n := pick(r, c.nodes)
		at := when(3*time.Minute, c.cfg.Duration)
		v.nodeExRestarts = append(v.nodeExRestarts, nodeSpan{n, span{at, at.Add(r.duration(15*time.Second, 45*time.Second))}})
	}
	if nb := c.nb; nb != nil && r.chance(0.6) {
		// The notebook's user crashes a kernel or two: XID 13, 31 or 43.
		v.notebookXIDs = true
		for range r.between(1, 2) {
			nb.crashes = append(nb.crashes, when(2*time.Minute, c.cfg.Duration))
			nb.crashXID = append(nb.crashXID, pick(r, []int{13, 31, 43}))
		}
		sort.Slice(nb.crashes, func(i, j int) bool { return nb.crashes[i].Before(nb.crashes[j]) })
	}
	if r.chance(0.3) {
		// A GPU or two replay a PCIe packet now and then: far below DCGM's
		// 8 per minute.
		v.replays = true
		for range r.between(1, 2) {
			g := pick(r, pick(r, c.nodes).gpus)
			for range r.between(1, 3) {
				v.events = append(v.events, event{at: when(time.Minute, c.cfg.Duration), do: func(*world, time.Time) { g.st.replays++ }})
			}
		}
	}
	if r.chance(0.12) {
		// One correctable row remap: benign (XID 63).
		v.remaps = true
		g := pick(r, pick(r, c.nodes).gpus)
		v.events = append(v.events, event{at: when(2*time.Minute, c.cfg.Duration), do: func(_ *world, t time.Time) {
			g.st.remapCorr++
			g.setXID(63)
		}})
	}
	d := c.serve
	keep := sc.Kind == KindCrashLoop || sc.Kind == KindKVCacheExhausted || sc.Kind == KindCapacitySaturated
	switch x := r.float(); {
	case keep:
	case x < 0.2:
		if at := when(4*time.Minute, c.cfg.Duration-8*time.Minute); d.spareFor(at) {
			v.rollout = true
			v.drawRollout(r, d, at)
		}
	case x < 0.45:
		// One replica restarts once (a liveness probe during a burst):
		// its counters start again from 0.
		rep := pick(r, d.replicas)
		if at := when(4*time.Minute, c.cfg.Duration-6*time.Minute); d.spareFor(at) {
			v.replicaRestart = true
			v.events = append(v.events, event{at: at, do: func(_ *world, t time.Time) {
				rep.pod.restartContainer(t, "Error")
			}})
		}
	}
	if spare := spareNodes(c); len(spare) > 0 && r.chance(0.35) {
		// An administrator reloads the driver of an idle node: its GPUs
		// vanish for a minute or two and come back with their counters
		// (energy, replays) and XIDs at 0.
		v.driverReload = true
		n := pick(r, spare)
		at := when(4*time.Minute, c.cfg.Duration)
		s := span{at, at.Add(r.duration(60*time.Second, 150*time.Second))}
		v.exporterRestarts = append(v.exporterRestarts, nodeSpan{n, s})
		v.events = append(v.events, event{at: s.from.Add(20 * time.Second), do: func(*world, time.Time) {
			for _, g := range n.gpus {
				g.st.energy, g.st.replays, g.st.xid = 0, 0, 0
			}
		}})
	}
	sort.SliceStable(v.events, func(i, j int) bool { return v.events[i].at.Before(v.events[j].at) })
	return v
}

// drawRollout is `kubectl rollout restart` of the vLLM deployment: a new
// ReplicaSet, its pods replacing the old ones one at a time (each loading
// the model for a minute or two, its counters from 0).
func (v *variation) drawRollout(r *rng, d *deployment, at time.Time) {
	rs := d.name + "-" + r.hex(10)[:9] + "d"
	v.events = append(v.events, event{at: at, do: func(*world, time.Time) {
		d.rs = rs
		d.replicaSets = append(d.replicaSets, rs)
		d.generation++
	}})
	olds := append([]*replica(nil), d.replicas...)
	for i, old := range olds {
		xid := r.chance(0.5)
		v.events = append(v.events, event{at: at.Add(time.Duration(i)*150*time.Second + time.Second), do: func(w *world, t time.Time) {
			p := old.pod
			for _, g := range p.gpus {
				if xid {
					// The driver cleans up after the killed process.
					g.setXID(45)
				}
				g.holder = nil
			}
			p.st.deleted, p.st.running, p.st.ready, p.st.container = true, false, false, false
			nr := d.newReplica(r, p.node, t)
			for k, rep := range d.replicas {
				if rep == old {
					d.replicas[k] = nr
				}
			}
			w.addVLLMTarget(nr)
		}})
	}
}

// spareFor tells whether the deployment can lose a replica for a few
// minutes around t without queueing: what an operator checks before a
// rolling restart (maxUnavailable 1, no spare GPUs to surge into).
// Otherwise the restart would be an incident, not healthy variation.
func (d *deployment) spareFor(t time.Time) bool {
	if len(d.replicas) < 2 {
		return false
	}
	peakNear := d.peak * max(diurnal(t), diurnal(t.Add(15*time.Minute))) * (1 + 3*d.burst.sd)
	return peakNear <= 0.8*d.capacityPerReplica()*float64(len(d.replicas)-1)
}

// spareNodes are the nodes no pod holds a GPU of.
func spareNodes(c *cluster) []*node {
	var out []*node
	for _, n := range c.nodes {
		held := false
		for _, g := range n.gpus {
			held = held || g.holder != nil
		}
		if !held {
			out = append(out, n)
		}
	}
	return out
}

// apply runs the events due at t.
func (v *variation) apply(w *world, t time.Time) {
	for len(v.events) > 0 && !v.events[0].at.After(t) {
		e := v.events[0]
		v.events = v.events[1:]
		e.do(w, t)
	}
}
