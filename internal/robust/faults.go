package robust

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Fault is an injected fault's ground truth.
type Fault struct {
	// Kind is a DESIGN.md cause kind.
	Kind string `json:"kind"`
	// Size is half or double; Scale its factor on the usual size.
	Size  string  `json:"size"`
	Scale float64 `json:"scale"`
	// Entity is the faulty entity with DESIGN.md's canonical keys.
	Entity map[string]string `json:"entity"`
	// Onset is when the fault starts.
	Onset time.Time `json:"onset"`
	// Summary says what happens, in words.
	Summary string `json:"summary"`
}

// activeFault is a fault and its effects on the world, applied from its
// onset on.
type activeFault struct {
	truth Fault
	// pre runs before the workloads (state changes, modifiers), demand
	// after them (overrides of what they asked of the GPUs), power after
	// the GPUs' power is known (temperatures relative to the peers).
	pre, demand, power func(w *world, t time.Time, since time.Duration)
}

func (f *activeFault) step(w *world, t time.Time) {
	if f.pre != nil && !t.Before(f.truth.Onset) {
		f.pre(w, t, t.Sub(f.truth.Onset))
	}
}

func (f *activeFault) onDemand(w *world, t time.Time) {
	if f.demand != nil && !t.Before(f.truth.Onset) {
		f.demand(w, t, t.Sub(f.truth.Onset))
	}
}

func (f *activeFault) onPower(w *world, t time.Time) {
	if f.power != nil && !t.Before(f.truth.Onset) {
		f.power(w, t, t.Sub(f.truth.Onset))
	}
}

// faultBuilder draws a fault's place and time.
type faultBuilder struct {
	w     *world
	r     *rng
	sc    Scenario
	onset time.Time
}

// buildFault draws the scenario's fault: where (from the seed and the
// kind) and when (past the run's first 40%, at least 10 minutes before its
// end).
func buildFault(w *world, sc Scenario) (*activeFault, error) {
	cfg := w.c.cfg
	r := newRNG(cfg.Seed, "fault/"+sc.Kind)
	lo := max(10*time.Minute, cfg.Duration*2/5)
	hi := cfg.Duration - 10*time.Minute
	b := &faultBuilder{w: w, r: r, sc: sc, onset: cfg.Start.Add(lo + time.Duration(r.float()*float64(hi-lo))).Truncate(time.Second)}
	build, ok := map[string]func(*faultBuilder) *activeFault{
		KindThermalThrottle: buildThermal, KindPowerThrottle: buildPower, KindPCIeDegraded: buildPCIe,
		KindNVLinkDegraded: buildNVLink, KindXIDError: buildXID, KindGPULost: buildLost, KindMemoryErrors: buildMemoryErrors,
		KindNodeDown: buildNodeDown, KindMemoryPressure: buildMemoryPressure, KindCrashLoop: buildCrashLoop,
		KindKVCacheExhausted: buildKVCache, KindCapacitySaturated: buildCapacity,
	}[sc.Kind]
	if !ok {
		return nil, fmt.Errorf("no fault of kind %q", sc.Kind)
	}
	f := build(b)
	f.truth.Kind, f.truth.Size, f.truth.Scale, f.truth.Onset = sc.Kind, sc.Size, sc.Scale, b.onset
	// A checkpoint at the onset would hide the fault's first minutes.
	w.c.job.avoid(b.onset, 3*time.Minute)
	return f, nil
}

// trainingGPU draws a GPU of a training node.
func (b *faultBuilder) trainingGPU() *gpu {
	p := pick(b.r, b.w.c.job.pods)
	return p.gpus[b.r.intn(len(p.gpus))]
}

func gpuEntity(g *gpu) map[string]string {
	return map[string]string{"node": g.node.name, "gpu": strconv.Itoa(g.idx)}
}

// ramp goes from 0 to 1 over d.
func ramp(since, d time.Duration) float64 { return clamp(since.Seconds()/d.Seconds(), 0, 1) }

// shrink is what is left of something a fault cuts to 55% at its usual
// size: 78% at half size, 30% at double.
func shrink(s float64) float64 {
	if s <= 1 {
		return 1 - 0.45*s
	}
	return math.Pow(0.55, s)
}

// peers are a GPU's node-mates still on the bus.
func peers(g *gpu) []*gpu {
	var out []*gpu
	for _, o := range g.node.gpus {
		if o != g && !o.lost {
			out = append(out, o)
		}
	}
	return out
}

// buildThermal: the GPU's cooling fails (a fan, a clogged heatsink, bad
// paste): it runs about 25 °C above its peers at its usual size and the
// driver holds its SM clock at about 55% of theirs; the job slows to its
// pace.
func buildThermal(b *faultBuilder) *activeFault {
	g, s, m := b.trainingGPU(), b.sc.Scale, b.w.c.model
	delta, ratio := 25*s, shrink(s)
	f := &activeFault{truth: Fault{Entity: gpuEntity(g),
		Summary: fmt.Sprintf("GPU %d of %s runs about %.0f °C above its peers (capped near its %.0f °C slowdown) with its SM clock at %.0f%% of theirs",
			g.idx, g.node.name, delta, m.slowdown, 100*ratio)}}
	f.pre = func(_ *world, _ time.Time, since time.Duration) {
		g.st.fault.clockMul = 1 - (1-ratio)*ramp(since, 90*time.Second)
	}
	f.power = func(_ *world, _ time.Time, since time.Duration) {
		ps := peers(g)
		if len(ps) == 0 {
			return
		}
		var pw, off float64
		for _, o := range ps {
			pw += o.st.power
			off += o.offset
		}
		pw, off = pw/float64(len(ps)), off/float64(len(ps))
		// At low power a failed fan matters less.
		load := clamp(pw/(0.6*m.tdp), 0.3, 1)
		g.st.fault.tempAdd = ramp(since, 2*time.Minute) * (delta*load + off - g.offset + m.rth*g.rthMul*(pw-g.st.power))
	}
	return f
}

// buildPower: the GPU is held at a power cap (a misapplied power limit, a
// power brake from its shelf): its draw pinned at about 55% of its peers'
// at the usual size, its clocks down with it, the job at its pace.
func buildPower(b *faultBuilder) *activeFault {
	g, s, m, j := b.trainingGPU(), b.sc.Scale, b.w.c.model, b.w.c.job
	ratio := shrink(s)
	capW := ratio * (m.idle + (m.tdp-m.idle)*j.intensity)
	f := &activeFault{truth: Fault{Entity: gpuEntity(g),
		Summary: fmt.Sprintf("GPU %d of %s is capped at %.0f W, %.0f%% of what its peers draw", g.idx, g.node.name, capW, 100*ratio)}}
	f.pre = func(_ *world, _ time.Time, since time.Duration) {
		g.st.fault.capW = m.tdp - (m.tdp-capW)*ramp(since, 20*time.Second)
		g.st.fault.pinned = true
	}
	return f
}

// buildPCIe: the GPU's PCIe link degrades (a riser, a connector): replays
// by the hundred per scrape at the usual size (10 a second), its PCIe
// throughput down to a quarter, the job slower where its traffic crosses
// that link.
func buildPCIe(b *faultBuilder) *activeFault {
	g, s, j := b.trainingGPU(), b.sc.Scale, b.w.c.job
	rate := 10 * s
	left := math.Max(0.05, 1-0.75*s)
	slow := math.Max(0.3, 1-0.3*s)
	f := &activeFault{truth: Fault{Entity: gpuEntity(g),
		Summary: fmt.Sprintf("GPU %d of %s: PCIe link replays %.0f packets a second, its throughput at %.0f%%", g.idx, g.node.name, rate, 100*left)}}
	f.pre = func(_ *world, _ time.Time, since time.Duration) {
		k := ramp(since, 30*time.Second)
		g.st.fault.replayRate = rate * (0.6 + 0.8*g.rng.float()) * k
		g.st.fault.pcieMul = 1 - (1-left)*k
		j.rankMul[g.holder] = 1 - (1-slow)*k
	}
	return f
}

// buildNVLink: a node's NVLink fabric degrades (links down, an NVSwitch
// retraining): NCCL moves what it can over PCIe, the node's NVLink
// bandwidth falls to about a tenth of its peers' at the usual size and
// the job slows to a crawl; at double size the links go (XID 74) and two
// minutes later the job hangs.
func buildNVLink(b *faultBuilder) *activeFault {
	s, j := b.sc.Scale, b.w.c.job
	p := pick(b.r, j.pods)
	n := p.node
	left := math.Pow(0.1, s)
	speed := 0.3 + 0.7*math.Sqrt(left)
	bad := n.gpus[b.r.intn(8)]
	f := &activeFault{truth: Fault{Entity: map[string]string{"node": n.name},
		Summary: fmt.Sprintf("NVLink on %s carries %.0f%% of its peers' bandwidth; the job runs at %.0f%%", n.name, 100*left, 100*speed)}}
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		k := ramp(since, 45*time.Second)
		for _, g := range n.gpus {
			g.st.fault.nvlinkMul = math.Max(1e-3, 1-(1-left)*k)
			g.st.fault.pcieMul = 1 + 3*(1-left)*k
		}
		j.rankMul[p] = 1 - (1-speed)*k
		if s >= 1 && since < tick {
			bad.setXID(74)
		}
		if s > 1 && since >= 2*time.Minute {
			j.stall(b.onset.Add(2*time.Minute), nil, nil)
		}
	}
	return f
}

// buildXID: the GPU stops answering its driver and the rank's process
// dies; the other ranks hang in their collective. NVIDIA's XID catalog
// names these GPU faults of no particular part (a memory error, XID
// 48/94/95, is gpu_memory_errors; a link's, XID 74, nvlink_degraded):
// half size XID 109 (context switch timeout); usual: XID 119 (GSP RPC
// timeout); double: XID 119 then 120 (GSP error) and the GPU is unusable
// until reset, its rank's container crash-looping.
func buildXID(b *faultBuilder) *activeFault {
	g, s, j := b.trainingGPU(), b.sc.Scale, b.w.c.job
	p := g.holder
	codes := map[bool]int{true: 109, false: 119}
	code := codes[s < 1]
	f := &activeFault{truth: Fault{Entity: gpuEntity(g),
		Summary: fmt.Sprintf("XID %d on GPU %d of %s kills its rank; the job hangs", code, g.idx, g.node.name)}}
	var loop *crashLoop
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		switch {
		case since < tick:
			g.setXID(code)
			p.restartContainer(t, "Error")
			j.stall(t, p, func(o *gpu) demand {
				if o == g || !p.st.container {
					return demand{}
				}
				return demand{fb: 520}
			})
		case s > 1 && since >= 80*time.Second && since < 80*time.Second+tick:
			g.setXID(120)
			loop = &crashLoop{p: p, upFor: 15 * time.Second, reason: "Error"}
			loop.start(t)
		}
		if loop != nil {
			loop.step(t)
		}
	}
	return f
}

// buildLost: the GPU falls off the bus (XID 79): dcgm-exporter reports its
// XID, then no longer sees it; the device plugin takes it off the node's
// allocatable; its rank dies and the job hangs. At double size the rank's
// container then crash-loops on the missing device.
func buildLost(b *faultBuilder) *activeFault {
	g, s, j, w := b.trainingGPU(), b.sc.Scale, b.w.c.job, b.w
	p := g.holder
	scrapes := 1
	if s >= 1 {
		scrapes = 2
	}
	gone := time.Duration(scrapes)*w.dcgmCollect + tick
	f := &activeFault{truth: Fault{Entity: gpuEntity(g),
		Summary: fmt.Sprintf("GPU %d of %s fell off the bus (XID 79); its rank died and the job hangs", g.idx, g.node.name)}}
	var loop *crashLoop
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		switch {
		case since < tick:
			g.setXID(79)
			p.restartContainer(t, "Error")
			j.stall(t, p, func(o *gpu) demand {
				if o == g || !p.st.container {
					return demand{}
				}
				return demand{fb: 520}
			})
		case since >= gone && !g.lost:
			g.lost = true
			g.node.k8s.gpuAlloc = 7
			if s > 1 {
				loop = &crashLoop{p: p, upFor: 8 * time.Second, reason: "Error"}
				loop.start(t)
			}
		}
		if loop != nil {
			loop.step(t)
		}
	}
	return f
}

// buildMemoryErrors: the GPU's HBM degrades: uncorrectable errors the
// row remapper repairs (rows rising, XID 63), correctable ones besides; at
// the usual size and above a bank runs out of spare rows (ROW_REMAP_FAILURE,
// XID 64). The job keeps running: a part degrading before it hurts.
func buildMemoryErrors(b *faultBuilder) *activeFault {
	g, s, r := b.trainingGPU(), b.sc.Scale, b.r
	nu, nc := int(math.Round(4*s)), int(math.Round(8*s))
	window := 8 * time.Minute
	if s > 1 {
		window = 5 * time.Minute
	}
	var unc, corr []time.Duration
	for i := range nu {
		unc = append(unc, time.Duration(float64(window)*float64(i)/float64(nu))+r.duration(0, 20*time.Second))
	}
	for range nc {
		corr = append(corr, r.duration(0, window))
	}
	f := &activeFault{truth: Fault{Entity: gpuEntity(g),
		Summary: fmt.Sprintf("GPU %d of %s remaps %d rows for uncorrectable errors in %s%s", g.idx, g.node.name, nu, window,
			map[bool]string{true: ", then a row remap fails", false: ""}[s >= 1])}}
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		for _, d := range unc {
			if since >= d && since < d+tick {
				g.st.remapUnc++
				g.setXID(63)
			}
		}
		for _, d := range corr {
			if since >= d && since < d+tick {
				g.st.remapCorr++
			}
		}
		if s >= 1 && since >= window && since < window+tick {
			g.st.remapFailure = 1
			g.setXID(64)
		}
	}
	return f
}

// buildNodeDown: a training node drops off the network (power, kernel
// panic): its exporters stop answering, its Ready condition goes Unknown
// after the grace period, its pods not ready; the job hangs on its rank.
// At the usual size and above the node controller marks the pods NodeLost
// after the eviction timeout (sooner at double size).
func buildNodeDown(b *faultBuilder) *activeFault {
	s, j := b.sc.Scale, b.w.c.job
	p := pick(b.r, j.pods)
	n := p.node
	lost := 5 * time.Minute
	if s > 1 {
		lost = 90 * time.Second
	}
	f := &activeFault{truth: Fault{Entity: map[string]string{"node": n.name},
		Summary: fmt.Sprintf("%s went down: its exporters stopped answering and the job hangs on its rank", n.name)}}
	f.pre = func(w *world, t time.Time, since time.Duration) {
		if since < tick {
			n.down = true
			p.st.container = false
			j.stall(t, p, nil)
		}
		if since >= 40*time.Second {
			for _, q := range w.c.pods {
				if q.node == n {
					q.st.ready = false
					q.st.nodeLost = q.st.nodeLost || s >= 1 && since >= lost
				}
			}
		}
	}
	return f
}

// buildMemoryPressure: a leak on a training node (a dataloader's workers,
// pinned buffers) eats its memory: MemAvailable falls to about 1.5% at
// the usual size (4.5% at half), reclaim stalls the node and its rank; at
// double size the kernel's OOM killer takes the rank and the job hangs.
func buildMemoryPressure(b *faultBuilder) *activeFault {
	s, j := b.sc.Scale, b.w.c.job
	p := pick(b.r, j.pods)
	n := p.node
	left := 0.015
	switch {
	case s < 1:
		left = 0.045
	case s > 1:
		left = 0.004
	}
	slow := 1 - 0.2*math.Min(s, 1)
	f := &activeFault{truth: Fault{Entity: map[string]string{"node": n.name},
		Summary: fmt.Sprintf("memory on %s runs out: %.1f%% available, reclaim stalls its rank", n.name, 100*left)}}
	killed := false
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		if killed {
			return
		}
		k := ramp(since, 6*time.Minute)
		n.host.memExtra = k * math.Max(0, n.memTotal*(1-left)-n.host.memBase)
		j.rankMul[p] = 1 - (1-slow)*k
		if s > 1 && k >= 1 && n.available() < 0.006*n.memTotal {
			killed = true
			n.host.memExtra = 0
			p.restartContainer(t, "OOMKilled")
			j.stall(t, p, func(o *gpu) demand {
				if !p.st.container {
					return demand{}
				}
				return demand{fb: 520}
			})
		}
	}
	return f
}

// crashLoop is a container that exits upFor after each start; the
// kubelet's back-off (restartContainer) spaces the restarts.
type crashLoop struct {
	p      *pod
	upFor  time.Duration
	reason string
	exitAt time.Time
}

func (c *crashLoop) start(t time.Time) { c.exitAt = t.Add(c.upFor) }

func (c *crashLoop) step(t time.Time) {
	if c.p.st.running && !c.exitAt.IsZero() && !t.Before(c.exitAt) {
		c.p.restartContainer(t, c.reason)
		c.exitAt = c.p.st.backAt.Add(c.upFor)
	}
}

// buildCrashLoop: a vLLM replica's container keeps exiting (a bad
// argument after a config change, a failing health check): a minute
// after each start at the usual size, before it has even loaded the
// model; two minutes at half size, 10 s at double; the kubelet backs off
// between the restarts.
func buildCrashLoop(b *faultBuilder) *activeFault {
	s, d := b.sc.Scale, b.w.c.serve
	rep := pick(b.r, d.replicas)
	p := rep.pod
	up := time.Duration(float64(time.Minute) / s)
	if s > 1 {
		up = 10 * time.Second
	}
	f := &activeFault{truth: Fault{Entity: map[string]string{"namespace": p.namespace, "pod": p.name},
		Summary: fmt.Sprintf("%s/%s crash-loops: its container exits %s after each start", p.namespace, p.name, up)}}
	loop := &crashLoop{p: p, upFor: up, reason: "Error"}
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		if since < tick {
			p.restartContainer(t, "Error")
			loop.exitAt = p.st.backAt.Add(up)
		}
		loop.step(t)
	}
	return f
}

// buildKVCache: one replica gets long-context traffic (a tenant's RAG
// requests pinned to it by session affinity): its KV cache fills, requests
// queue and are preempted. At the usual size the KV demand is 1.6 times the
// cache (1.3 at half, 2.2 at double).
func buildKVCache(b *faultBuilder) *activeFault {
	s, d := b.sc.Scale, b.w.c.serve
	rep := pick(b.r, d.replicas)
	p := rep.pod
	want := 1 + 0.6*s
	f := &activeFault{truth: Fault{Entity: map[string]string{"namespace": p.namespace, "pod": p.name},
		Summary: fmt.Sprintf("the KV cache of %s/%s is exhausted: long prompts ask %.1f times what it holds", p.namespace, p.name, want)}}
	mul := 0.0
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		if mul == 0 {
			mul = rep.promptMulFor(want)
		}
		rep.promptMul = 1 + (mul-1)*ramp(since, 2*time.Minute)
	}
	return f
}

// promptMulFor is how much longer the replica's prompts must be for its
// KV demand to be want times its cache at its current request rate.
func (r *replica) promptMulFor(want float64) float64 {
	d := r.d
	lambda := math.Max(r.lambda, 0.05)
	// Offered load over what fits: arrivals times the time each holds a
	// place in the batch, over the places the cache leaves.
	demandOf := func(pm float64) float64 {
		conc := d.concurrency(pm)
		return lambda * d.serviceTime(pm, conc) / conc
	}
	lo, hi := 1.0, 400.0
	for range 60 {
		mid := (lo + hi) / 2
		if demandOf(mid) < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// buildCapacity: demand climbs past what the deployment serves (a launch,
// a client's retry storm): 1.5 times its capacity at the usual size (1.25
// at half, 2 at double), every replica full and queueing.
func buildCapacity(b *faultBuilder) *activeFault {
	s, d := b.sc.Scale, b.w.c.serve
	want := 1 + 0.5*s
	f := &activeFault{truth: Fault{Entity: map[string]string{"namespace": d.namespace, "workload": d.name},
		Summary: fmt.Sprintf("requests to %s/%s climb to %.2f times what its replicas serve", d.namespace, d.name, want)}}
	mul := 0.0
	f.pre = func(_ *world, t time.Time, since time.Duration) {
		if mul == 0 {
			base := d.peak * diurnal(t)
			mul = want * d.capacityPerReplica() * float64(len(d.replicas)) / base
		}
		d.demandMul = 1 + (mul-1)*ramp(since, 3*time.Minute)
	}
	return f
}
