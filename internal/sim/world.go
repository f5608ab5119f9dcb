package sim

import (
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// nodeNotReadyAfter is how long the node controller waits for a silent
// kubelet before it marks the node Ready=Unknown (node-monitor-grace-period).
const nodeNotReadyAfter = 40 * time.Second

// world is one run in progress: the cluster, its exporters, the faults and
// decoys, and the simulated time.
type world struct {
	cfg      Config
	c        *cluster
	reg      *registry
	targets  []*target
	faults   []*activeFault
	decoys   []decoy
	notebook notebookState
	k, ticks int
	dt       float64
	out      scrapeOut
}

// newWorld builds the world of a resolved, valid Config and its faults.
func newWorld(cfg Config, sc Scenario) (*world, error) {
	c := newCluster(cfg)
	w := &world{
		cfg:   cfg,
		c:     c,
		reg:   newRegistry(),
		ticks: int(cfg.Duration / cfg.ScrapeInterval),
		dt:    cfg.ScrapeInterval.Seconds(),
	}
	w.targets = newTargets(w.reg, c)
	w.initGPUs()
	w.decoys = newDecoys(w)
	faults, err := newFaults(w, sc)
	if err != nil {
		return nil, err
	}
	w.faults = faults
	return w, nil
}

// initGPUs sets the GPUs' counters to what their uptime gives.
func (w *world) initGPUs() {
	r := newRand(w.cfg, "gpu-init")
	for _, n := range w.c.nodes {
		up := w.cfg.Start.Sub(n.boot).Seconds()
		for _, g := range n.gpus {
			g.st.energy = math.Floor(up * w.c.spec.TDP * (0.35 + 0.3*r.Float64()) * 1000)
			g.st.sbe = float64(r.IntN(3))
			if r.Float64() < 0.2 {
				g.st.pcieReplays = float64(1 + r.IntN(3))
			}
			g.st.powerViol = math.Floor(up * 1e9 * 0.002 * r.Float64())
		}
	}
}

// at is the simulated time of tick k.
func (w *world) at(k int) time.Time {
	return w.cfg.Start.Add(time.Duration(k) * w.cfg.ScrapeInterval)
}

// step simulates tick w.k and leaves its scrapes in w.out. It returns false
// after the last tick.
func (w *world) step() bool {
	if w.k > w.ticks {
		return false
	}
	t := w.at(w.k)
	since := t.Sub(w.cfg.Start)
	w.resetConds()
	for _, d := range w.decoys {
		d.apply(w, t)
	}
	for _, f := range w.faults {
		switch {
		case !t.Before(f.truth.Onset):
			f.apply(w, t.Sub(f.truth.Onset))
		case f.before != nil:
			f.before(w, f.truth.Onset.Sub(t))
		}
	}
	w.physics()
	w.liveness(t)
	w.c.job.step(t, since, w.cfg)
	w.c.serve.step(t, w.dt, w.cfg.PeakRequestRate)
	w.stepGPUs()
	share := 0.0
	if j := w.c.job; j.cur.phase == phaseRunning && !j.checkpoint {
		share = stepHealthy / j.cur.t
	}
	for _, n := range w.c.nodes {
		if !n.cond.down {
			s := share
			if n.idx >= w.cfg.TrainingNodes {
				s = 1
			}
			n.stepHost(w.dt, s, w.c.job.checkpoint && n.idx < w.cfg.TrainingNodes)
		}
	}
	w.scrape(t)
	w.k++
	return true
}

func (w *world) resetConds() {
	for _, n := range w.c.nodes {
		n.cond = healthyNodeCond()
		for _, g := range n.gpus {
			g.cond = healthyGPUCond()
		}
	}
	for _, p := range w.c.pods {
		p.memLeak = 0
	}
	w.c.serve.trafficMul, w.c.serve.accuracyDrop = 1, 0
	w.notebook.idle, w.notebook.poll = false, false
	for _, r := range w.c.serve.replicas {
		r.capacity, r.kvExtra, r.promptMul, r.genMul = 1, 0, 1, 1
		r.ttftMul, r.itlMul, r.abortExtra = 1, 1, 0
	}
}

// physics applies what a GPU's last temperature does to its clocks: above
// its slowdown temperature it throttles.
func (w *world) physics() {
	spec := w.c.spec
	for _, n := range w.c.nodes {
		for _, g := range n.gpus {
			over := g.st.temp - spec.SlowdownTemp
			if !g.st.tempInit || over < 0 {
				continue
			}
			g.cond.clock *= clamp(1-0.02-0.08*over, 0.5, 1)
			g.cond.reasons |= uint64(catalog.ClockSWThermal)
			if over >= 4 {
				g.cond.reasons |= uint64(catalog.ClockHWThermal)
			}
			g.st.thermalViol += w.dt * 1e9
		}
	}
}

// liveness tracks when a silent node turns Ready=Unknown.
func (w *world) liveness(t time.Time) {
	for _, n := range w.c.nodes {
		silent := n.cond.down || n.cond.notReady
		switch {
		case !silent:
			n.state.downSince, n.state.readyUnknown = time.Time{}, false
		case n.state.downSince.IsZero():
			n.state.downSince = t
		}
		if silent && t.Sub(n.state.downSince) >= nodeNotReadyAfter {
			n.state.readyUnknown = true
		}
	}
}

// stepGPUs computes every GPU's readings for the tick.
func (w *world) stepGPUs() {
	for _, n := range w.c.nodes {
		for _, g := range n.gpus {
			if n.cond.down {
				continue
			}
			var a activity
			switch p := g.pod; {
			case p == nil:
				a = idleActivity(g)
			case p.training:
				a = w.trainingActivity(g)
			case p.rep != nil:
				a = w.servingActivity(g, p.rep)
			case p == w.c.notebook:
				a = w.notebookActivity(g)
			default:
				a = idleActivity(g)
			}
			w.applyGPU(g, a, w.dt)
		}
	}
}

// scrape collects the samples of every target due at t.
func (w *world) scrape(t time.Time) {
	w.out.t = t.UnixMilli()
	w.out.samples = w.out.samples[:0]
	w.out.targets = 0
	for _, tg := range w.targets {
		if w.k%tg.every != 0 {
			continue
		}
		w.out.targets++
		up := tg.up
		if tg.upOf != nil {
			up = tg.upOf()
		}
		if !tg.alive() {
			w.out.add(up, 0)
			continue
		}
		w.out.add(up, 1)
		tg.scrape(&w.out)
	}
}
