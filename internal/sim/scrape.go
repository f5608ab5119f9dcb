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
	every  int // ticks between scrapes
	up     *series
	alive  func() bool
	scrape func(*scrapeOut)
}

// newTargets makes the scrape targets of the cluster: per node
// dcgm-exporter and node-exporter, one kube-state-metrics, per replica vLLM.
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
	ts = append(ts, &target{
		every: 1, up: upFam.newSeries("up", "instance", ksmInstance, "job", jobKSM),
		alive: func() bool { return true }, scrape: k.scrape,
	})
	for _, r := range c.serve.replicas {
		v := newVLLMServer(reg, r, c.serve.model)
		ts = append(ts, &target{
			every: 1, up: upFam.newSeries("up", "instance", v.instance, "job", jobVLLM, "namespace", r.pod.namespace, "pod", r.pod.name),
			alive:  func() bool { return replicaServes(r) },
			scrape: v.scrape,
		})
	}
	return ts
}
