package sim

// scrapeOut collects the samples of one tick's scrapes.
type scrapeOut struct {
	t       int64 // milliseconds
	samples []pending
	targets int
}

type pending struct {
	s *series
	v float64
}

func (o *scrapeOut) add(s *series, v float64) { o.samples = append(o.samples, pending{s, v}) }

// target is one scrape target: how often Prometheus scrapes it, whether it
// answers, and what it exposes.
type target struct {
	every int // ticks between scrapes
	up    *series
	// upOf, if set, gives the up series instead of up (a target whose
	// identity changes).
	upOf   func() *series
	alive  func() bool
	scrape func(*scrapeOut)
}

// newTargets makes the scrape targets of the cluster: per node
// dcgm-exporter and node-exporter, one kube-state-metrics, the evaluator,
// per replica vLLM, per node the kubelet's cAdvisor.
func newTargets(reg *registry, c *cluster) []*target {
	upFam := reg.family("up", typeGauge, "1 if the target answered its last scrape, 0 if not (set by Prometheus).")
	every := int(c.cfg.DCGMInterval / c.cfg.ScrapeInterval)
	var ts []*target
	for _, n := range c.nodes {
		d := newDCGMExporter(reg, n, c.spec, c.cfg.Labels)
		ts = append(ts, &target{
			every: every, up: upFam.newSeries("up", "instance", d.instance(), "job", jobDCGM),
			alive:  func() bool { return !n.cond.down && !n.cond.dcgmDown },
			scrape: d.scrape,
		})
	}
	for _, n := range c.nodes {
		e := newNodeExporter(reg, n, c.cfg.Labels)
		ts = append(ts, &target{
			every: 1, up: upFam.newSeries("up", "instance", e.instance, "job", jobNodeExporter),
			alive:  func() bool { return !n.cond.down && !n.cond.nodeExpDown },
			scrape: e.scrape,
		})
	}
	k := newKubeStateMetrics(reg, c)
	ksmUp := []string{"instance", ksmInstance, "job", jobKSM}
	if c.cfg.Labels.KSM == KSMExported {
		ksmUp = append(ksmUp, ksmTargetLabels...)
	}
	ts = append(ts, &target{
		every: 1, up: upFam.newSeries("up", ksmUp...),
		alive: func() bool { return true }, scrape: k.scrape,
	})
	ev := newEvaluator(reg, c)
	ts = append(ts, &target{
		every: 1, up: upFam.newSeries("up", "instance", evaluatorInstance, "job", jobEvaluator),
		alive: func() bool { return true }, scrape: ev.scrape,
	})
	for _, r := range c.serve.replicas {
		v := &vllmTarget{reg: reg, upFam: upFam, r: r, model: c.serve.model, old: c.cfg.Labels.VLLM == VLLMOld, servers: map[*pod]*vllmServer{}}
		ts = append(ts, &target{every: 1, upOf: v.up, alive: func() bool { return replicaServes(r) }, scrape: v.scrape})
	}
	for _, n := range c.nodes {
		ca := newCAdvisor(reg, n, c.cfg)
		ts = append(ts, &target{
			every: 1, up: upFam.newSeries("up", "endpoint", kubeletEndpoint, "instance", ca.instance, "job", jobKubelet,
				"metrics_path", cadvisorPath, "node", n.name, "service", kubeletService),
			alive:  func() bool { return !n.cond.down },
			scrape: ca.scrape,
		})
	}
	return ts
}

// vllmTarget is the scrape target of one replica: its pod's endpoint, a
// new one when the pod is replaced.
type vllmTarget struct {
	reg     *registry
	upFam   *family
	r       *replica
	model   string
	old     bool
	servers map[*pod]*vllmServer
	ups     map[*pod]*series
}

func (v *vllmTarget) server() *vllmServer {
	s, ok := v.servers[v.r.pod]
	if !ok {
		s = newVLLMServer(v.reg, v.r, v.model, v.old)
		v.servers[v.r.pod] = s
	}
	return s
}

func (v *vllmTarget) up() *series {
	p := v.r.pod
	if v.ups == nil {
		v.ups = map[*pod]*series{}
	}
	s, ok := v.ups[p]
	if !ok {
		s = v.upFam.newSeries("up", "instance", v.server().instance, "job", jobVLLM, "namespace", p.namespace, "pod", p.name)
		v.ups[p] = s
	}
	return s
}

func (v *vllmTarget) scrape(o *scrapeOut) { v.server().scrape(o) }
