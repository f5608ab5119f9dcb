package robust

import (
	"time"
)

// tick is the physics' time step: every interval is a multiple of it.
const tick = 5 * time.Second

// world is one run in progress: the cluster, its telemetry and the
// targets that scrape it.
type world struct {
	c         *cluster
	reg       *registry
	dcgm      *dcgmFamilies
	node      *nodeFamilies
	kube      *kubeFamilies
	vllm      *vllmFamilies
	targets   []*target
	scrapeRNG *rng
	var_      *variation
	faults    []*activeFault
	now       time.Time
	end       time.Time
	round     []point
	// intervals of each exporter's scrapes (and dcgm-exporter's collection)
	dcgmEvery, dcgmCollect, nodeEvery, kubeEvery, vllmEvery time.Duration
}

// newWorld builds a run of a scenario.
func newWorld(cfg Config, sc Scenario, record bool) (*world, error) {
	c := newCluster(cfg)
	w := &world{c: c, reg: newRegistry(record), scrapeRNG: newRNG(cfg.Seed, "scrape"), now: cfg.Start, end: cfg.Start.Add(cfg.Duration)}
	r := newRNG(cfg.Seed, "intervals")
	w.dcgmEvery = pick(r, []time.Duration{10 * time.Second, 15 * time.Second, 30 * time.Second, 60 * time.Second})
	w.dcgmCollect = w.dcgmEvery
	if w.dcgmEvery >= 30*time.Second && r.chance(0.25) {
		// Scraped twice as often as dcgm-exporter collects: each value
		// is seen twice.
		w.dcgmEvery /= 2
	}
	w.nodeEvery = pick(r, []time.Duration{15 * time.Second, 30 * time.Second, 60 * time.Second})
	w.kubeEvery = pick(r, []time.Duration{15 * time.Second, 30 * time.Second, 60 * time.Second})
	w.vllmEvery = pick(r, []time.Duration{10 * time.Second, 15 * time.Second, 30 * time.Second})
	w.dcgm = newDCGMFamilies(w.reg, c.style.nvlinkGaugeType)
	w.node = newNodeFamilies(w.reg)
	w.kube = newKubeFamilies(w.reg)
	w.vllm = newVLLMFamilies(w.reg, c.serve.newBuckets)
	for _, n := range c.nodes {
		role := "spare"
		switch {
		case c.job.rankOn(n) != nil:
			role = "train"
		case len(c.serve.replicas) > 0 && c.serve.replicas[0].pod.node == n:
			role = "serve"
		}
		n.initHost(role, cfg.Start)
		n.k8s = nodeK8s{ready: "true", gpuAlloc: 8}
		for _, g := range n.gpus {
			g.initCounters(cfg.Start, n.bootTime, c.model)
		}
	}
	w.var_ = drawVariation(w, sc)
	if sc.Kind != "" {
		f, err := buildFault(w, sc)
		if err != nil {
			return nil, err
		}
		w.faults = append(w.faults, f)
	}
	w.addTargets()
	return w, nil
}

// initCounters sets a GPU's counters at the start: energy and replays
// since the driver loaded, perhaps an old sticky XID or remapped row.
func (g *gpu) initCounters(start time.Time, boot float64, m gpuModel) {
	r := g.rng
	up := float64(start.Unix()) - boot
	g.st.energy = up * r.uniform(0.3, 0.7) * m.tdp * 1000
	if r.chance(0.15) {
		g.st.replays = float64(r.between(1, 40))
	}
	if r.chance(0.04) {
		// An XID from days ago: the field keeps it.
		g.st.xid = pick(r, []int{13, 31, 43, 45, 63})
	}
	if r.chance(0.04) {
		g.st.remapCorr = 1
	}
}

// addTargets sets up every scrape target and its labels.
func (w *world) addTargets() {
	c, st := w.c, w.c.style
	for _, n := range c.nodes {
		tg := &target{honor: st.dcgmHonor, collect: w.dcgmCollect, gather: w.gatherDCGM(n)}
		tg.labels = w.dcgmLabels(n)
		n.dcgmTarget = tg
		w.schedule(tg, w.dcgmEvery)
		for _, v := range w.var_.exporterRestarts {
			if v.node == n {
				tg.down = append(tg.down, v.span)
			}
		}
		ne := &target{gather: w.gatherNode(n)}
		inst := n.ip + ":9100"
		if st.nodeExInstanceIsNode {
			inst = n.name
		}
		ne.labels = []string{"job", st.nodeExJob, "instance", inst}
		if st.dcgmMonitor {
			ne.labels = append(ne.labels, "namespace", nsMonitoring, "pod", n.nodeExPod.name, "container", "node-exporter",
				"service", st.nodeExJob, "endpoint", "http-metrics")
		}
		for _, v := range w.var_.nodeExRestarts {
			if v.node == n {
				ne.down = append(ne.down, v.span)
			}
		}
		w.schedule(ne, w.nodeEvery)
	}
	ksm := &target{honor: true, gather: w.gatherKube,
		labels: []string{"job", "kube-state-metrics", "instance", c.ksmPod.ip + ":8080"}}
	if st.dcgmMonitor {
		ksm.labels = append(ksm.labels, "namespace", nsMonitoring, "pod", c.ksmPod.name, "container", "kube-state-metrics",
			"service", "kube-state-metrics", "endpoint", "http")
	}
	w.schedule(ksm, w.kubeEvery)
	for _, r := range c.serve.replicas {
		w.addVLLMTarget(r)
	}
}

// dcgmLabels are the target labels of a node's dcgm-exporter.
func (w *world) dcgmLabels(n *node) []string {
	st := w.c.style
	l := []string{"job", st.dcgmJob, "instance", n.ip + ":9400"}
	if st.dcgmMonitor {
		l = append(l, "namespace", nsGPUOperator, "pod", n.dcgmPod.name, "container", "nvidia-dcgm-exporter",
			"service", st.dcgmJob, "endpoint", "gpu-metrics")
	}
	return l
}

// addVLLMTarget discovers a replica's pod.
func (w *world) addVLLMTarget(r *replica) {
	d, p := r.d, r.pod
	tg := &target{gather: w.gatherVLLM(r), gone: func() bool { return p.st.deleted }}
	job := d.name
	if w.c.style.vllmPodMonitor {
		job = d.namespace + "/" + d.name
	}
	tg.labels = []string{"job", job, "instance", p.ip + ":8000", "namespace", p.namespace, "pod", p.name, "container", "vllm",
		"endpoint", "http"}
	if !w.c.style.vllmPodMonitor {
		tg.labels = append(tg.labels, "service", d.name)
	}
	w.schedule(tg, w.vllmEvery)
}

// step advances the world by one tick and scrapes what falls due in it.
func (w *world) step() bool {
	t := w.now
	if !t.Before(w.end) {
		return false
	}
	w.round = w.round[:0]
	w.var_.apply(w, t)
	for _, f := range w.faults {
		f.step(w, t)
	}
	for _, p := range w.c.pods {
		p.tick(t)
	}
	for _, n := range w.c.nodes {
		for _, g := range n.gpus {
			g.st.d = demand{}
		}
	}
	w.c.job.step(t)
	w.c.serve.step(t, tick)
	if w.c.nb != nil {
		w.c.nb.step(t)
	}
	for _, f := range w.faults {
		f.onDemand(w, t)
	}
	w.hostLoad()
	m := w.c.model
	for _, n := range w.c.nodes {
		n.stepHost(tick)
		for _, g := range n.gpus {
			g.electrical(m, tick)
		}
	}
	for _, f := range w.faults {
		f.onPower(w, t)
	}
	for _, n := range w.c.nodes {
		inlet := n.inlet + n.fan.step(n.rng, tick)
		for _, g := range n.gpus {
			g.thermal(m, inlet, tick)
			g.read(m)
		}
	}
	w.kubeState(t)
	next := t.Add(tick)
	for _, tg := range w.targets {
		for tg.next.Before(next) {
			w.scrape(tg, tg.next)
			tg.next = tg.next.Add(tg.interval)
		}
	}
	w.now = next
	return true
}

// hostLoad sets each node's CPU, memory and network load from what runs
// on it.
func (w *world) hostLoad() {
	j := w.c.job
	for _, n := range w.c.nodes {
		h := &n.host
		h.user, h.system, h.iowait, h.rx, h.tx, h.blocked = 0.01, 0.01, 0.001, 2e5, 1e5, 0
		if p := j.rankOn(n); p != nil && p.st.container {
			switch j.phase {
			case phaseTrain:
				h.user, h.system, h.iowait = 0.3*j.rate, 0.04, 0.008
				h.rx, h.tx = 3e8*j.rate, 2e7*j.rate
			case phaseCheckpoint:
				h.user, h.system, h.iowait = 0.06, 0.07, 0.05
				h.rx, h.tx, h.blocked = 1e7, 1.8e9, 4
			case phaseHung:
				// NCCL's proxy threads spin one core per GPU.
				h.user, h.system = 8.0/float64(n.cpus), 0.01
			}
		}
		for _, r := range w.c.serve.replicas {
			if r.pod.node == n && r.serving(w.now) {
				h.user += 0.015 + 0.05*r.running/r.d.maxSeqs
				h.rx += r.throughput * 12e3
				h.tx += r.throughput * 4e3
			}
		}
	}
}

// kubeState updates what the API server says about the nodes: Ready goes
// Unknown 40 s after a node stops posting its status; MemoryPressure
// follows the kubelet's eviction threshold.
func (w *world) kubeState(t time.Time) {
	for _, n := range w.c.nodes {
		k := &n.k8s
		switch {
		case n.down && k.unknownAt.IsZero():
			k.unknownAt = t.Add(40 * time.Second)
		case n.down && !t.Before(k.unknownAt):
			k.ready = "unknown"
		}
		if !n.down && n.available() < n.host.evictAt {
			// The kubelet holds the condition for its transition period.
			k.memPressureUntil = t.Add(5 * time.Minute)
		}
		k.memPressure = t.Before(k.memPressureUntil)
	}
}
