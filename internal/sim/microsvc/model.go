package microsvc

import (
	"math"
	"math/rand/v2"
	"time"
)

// Noise and load shapes of the model.
const (
	diurnalAmp   = 0.25  // ± share of the mean load over a day
	diurnalPeak  = 15.0  // hour (UTC) of the busiest time
	wanderPhi    = 0.95  // per-step persistence of the load's slow wander
	wanderSD     = 0.02  // stationary sd of the wander (log scale)
	cpuNoise     = 0.04  // sd of the CPU's relative noise
	memNoise     = 0.004 // sd of the working set's noise, share of its base
	latNoise     = 0.06  // sd of a service's own latency noise (log scale)
	noisyLatSD   = 0.35  // the same for the high-variance decoy service
	noisySigma   = 0.9   // its latency distribution's shape
	netNoise     = 0.03  // sd of the network traffic's relative noise
	netIdleBytes = 300.0 // bytes/s each way of probes and scrapes
	gcLatency    = 0.05  // latency slowdown per base-size of leaked memory
	satErrors    = 0.5   // error share per unit of utilisation above 0.85
	calleeErrors = 0.5   // share of a callee's errors its callers return
)

// draws are one service's random numbers of one step: always drawn, all
// of them, so that a fault never shifts another concern's stream.
type draws struct {
	count, cpu, gc, mem, lat, sample, err, rx, tx float64
}

// svcState is one service during a run.
type svcState struct {
	r *rand.Rand
	d draws
	// n and errs are the requests served and failed in the step.
	n, errs float64
	// cpu is the CPU used (cores, at most the limit), rho the demand over
	// the limit.
	cpu, rho float64
	// mem is the working set (bytes); heap what the GC will collect.
	mem, heap float64
	// trueLat is the mean latency (seconds) callers wait for, lat the mean
	// of the step's requests as the scrape sees it, delayed the part of it
	// that injected delays make, sigma the shape of single requests'
	// latencies; errFrac is the failing share.
	trueLat, lat, delayed, sigma, errFrac float64
	// faultFrac is the part of errFrac an availability fault makes, here
	// or in a callee: it reaches callers whole, not as healthy errors do.
	faultFrac float64
	// rx and tx are the network bytes/s received and sent.
	rx, tx float64
	// latSD is the own latency noise; restart is set in the step the
	// container restarted (counters start over) and up counts steps since.
	latSD   float64
	restart bool
	up      int
}

// world is one run of the model, step by step.
type world struct {
	cfg    Config
	g      *graph
	fault  *fault // nil: healthy
	dec    decoyPlan
	rLoad  *rand.Rand
	svcs   []svcState
	k      int // next step
	ticks  int // steps after the first: the run has ticks+1 rounds
	stepS  float64
	wander float64
	// entryLat is the entry's latency of the previous step, which the
	// closed-loop load generator sees.
	entryLat float64
}

func newWorld(cfg Config, g *graph, f *fault, dec decoyPlan) *world {
	w := &world{
		cfg: cfg, g: g, fault: f, dec: dec,
		rLoad: newRand(cfg.Seed, "load"),
		svcs:  make([]svcState, len(g.app.services)),
		ticks: int(cfg.Duration / cfg.Step),
		stepS: cfg.Step.Seconds(),
	}
	w.entryLat = g.nomLat[0]
	for i := range w.svcs {
		d := &g.app.services[i]
		s := &w.svcs[i]
		s.r = newRand(cfg.Seed, "service", d.name)
		s.heap = s.r.Float64() * d.gcAmp
		s.latSD, s.sigma = latNoise, d.sigma
		if i == dec.noisy {
			s.latSD, s.sigma = noisyLatSD, noisySigma
		}
		s.up = 1 << 30
	}
	return w
}

// at returns the time of step k.
func (w *world) at(k int) time.Time { return w.cfg.Start.Add(time.Duration(k) * w.cfg.Step) }

// step advances the model by one scrape interval; false when the run is
// over. The state then holds what the step's scrape sees.
func (w *world) step() bool {
	if w.k > w.ticks {
		return false
	}
	k := w.k
	w.k++
	ns := w.cfg.NoiseScale
	for i := range w.svcs {
		s := &w.svcs[i]
		z := func() float64 { return clip4(s.r.NormFloat64()) * ns }
		s.d = draws{count: z(), cpu: z(), gc: s.r.Float64(), mem: z(), lat: z(), sample: z(), err: z(), rx: z(), tx: z()}
		s.restart = i == w.dec.restartSvc && k == w.dec.restartAt
		if s.restart {
			s.up = 0
		} else {
			s.up++
		}
	}
	w.traffic(k)
	for i := range w.svcs {
		w.resources(k, i)
	}
	for i := len(w.g.order) - 1; i >= 0; i-- {
		w.latency(k, w.g.order[i])
	}
	for i := range w.svcs {
		w.network(i)
	}
	w.entryLat = w.svcs[0].lat
	return true
}

// traffic draws the requests of every service: the load generator's users
// (a diurnal cycle, a slow wander, the decoy spike) against the entry's
// latency, then each callee's share of its callers' requests.
func (w *world) traffic(k int) {
	t := w.at(k)
	hour := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
	diurnal := 1 + diurnalAmp*math.Cos(2*math.Pi*(hour-diurnalPeak)/24)
	w.wander = wanderPhi*w.wander + math.Sqrt(1-wanderPhi*wanderPhi)*wanderSD*w.cfg.NoiseScale*clip4(w.rLoad.NormFloat64())
	users := w.g.app.users * diurnal * math.Exp(w.wander)
	if k >= w.dec.spikeAt && k < w.dec.spikeAt+decoySpikeSteps {
		users *= decoySpikeMul
	}
	for _, s := range w.g.order {
		var lambda float64
		if s == 0 {
			lambda = users / (w.g.app.think + w.entryLat) * w.stepS
		}
		for _, c := range w.g.callers[s] {
			lambda += w.svcs[c.svc].n * c.calls
		}
		st := &w.svcs[s]
		st.n = math.Max(0, math.Round(lambda+math.Sqrt(lambda)*st.d.count))
	}
}

// resources sets a service's CPU and memory: idle plus per-request CPU,
// a garbage-collected heap that grows with the requests, and the fault's
// and the restart decoy's effects.
func (w *world) resources(k, i int) {
	d, s := &w.g.app.services[i], &w.svcs[i]
	rate := s.n / w.stepS
	demand := (d.cpuBase + d.cpuCost*rate) * (1 + cpuNoise*s.d.cpu)
	demand += w.fault.hog(k, i)
	if s.up < decoyStartupSteps {
		demand += decoyStartupCPU * d.cpuLimit
	}
	demand = math.Max(demand, 1e-4)
	s.cpu, s.rho = math.Min(demand, d.cpuLimit), demand/d.cpuLimit

	if s.restart {
		s.heap = 0
	}
	s.heap += d.gcAmp / d.gcPeriod * (rate / w.g.nomRate[i]) * w.stepS
	if s.heap >= d.gcAmp {
		s.heap = math.Max(0, s.heap-d.gcAmp*(0.85+0.15*s.d.gc))
		s.heap = math.Min(s.heap, d.gcAmp)
	}
	base := d.memBase
	if s.up < decoyWarmSteps {
		base *= decoyColdMem + (1-decoyColdMem)*float64(s.up)/decoyWarmSteps
	}
	mem := base + s.heap + w.fault.leak(k, i) + memNoise*d.memBase*s.d.mem
	s.mem = math.Round(math.Min(mem, 0.98*d.memLimit)/4096) * 4096
}

// latency sets a service's mean latency and failing share once its
// callees' are known: its own time, slowed by queueing (1/(1-ρ)) and by
// a leak's garbage collection, plus its synchronous callees', plus the
// fault's delay.
func (w *world) latency(k, i int) {
	d, s := &w.g.app.services[i], &w.svcs[i]
	gc := 1 + gcLatency*w.fault.leak(k, i)/d.memBase
	lat := d.svcTime * queueing(s.rho) * gc
	noise := math.Exp(s.latSD * s.d.lat)
	if i != w.dec.noisy {
		lat *= noise
	}
	delayed := w.fault.delay(k, i)
	frac := d.errFrac + satErrors*math.Max(0, s.rho-0.85)
	ok := 1 - w.fault.fails(k, i)
	for _, c := range w.g.callees[i] {
		if c.async {
			continue
		}
		cs := &w.svcs[c.svc]
		lat += c.calls * (cs.trueLat - cs.delayed)
		delayed += c.calls * cs.delayed
		frac += calleeErrors * math.Min(1, c.calls) * (cs.errFrac - cs.faultFrac)
		ok *= 1 - reached(c.calls, cs.faultFrac)
	}
	// The noisy decoy's whole answer varies (retries, uneven queries), not
	// only its own time.
	if i == w.dec.noisy {
		lat *= noise
	}
	s.faultFrac = 1 - ok
	s.trueLat, s.delayed, s.errFrac = lat+delayed, delayed, math.Min(1, frac+s.faultFrac)
	// The scrape sees the mean of this step's requests: the log-normal
	// spread of single requests over √n (a delay shifts them all alike).
	cv := math.Sqrt(math.Expm1(s.sigma * s.sigma))
	s.lat = s.trueLat + cv*lat/math.Sqrt(math.Max(1, s.n))*s.d.sample
	s.lat = math.Max(s.lat, 0.2*s.trueLat)
	m := s.n * s.errFrac
	s.errs = math.Max(0, math.Min(s.n, math.Round(m+math.Sqrt(m)*s.d.err)))
}

// reached is the share of a caller's requests that meet a failure of a
// callee failing share p of its requests, at calls calls per request: a
// request makes a call with probability calls when calls < 1, and calls
// calls otherwise, any of which may fail.
func reached(calls, p float64) float64 {
	if p <= 0 {
		return 0
	}
	if calls < 1 {
		return calls * p
	}
	return 1 - math.Pow(1-p, calls)
}

// network sets the bytes a service receives and sends: its requests and
// responses and those of its calls.
func (w *world) network(i int) {
	d, s := &w.g.app.services[i], &w.svcs[i]
	rate := s.n / w.stepS
	rx, tx := rate*d.reqBytes, rate*d.respBytes
	for _, c := range w.g.callees[i] {
		cd := &w.g.app.services[c.svc]
		rx += rate * c.calls * cd.respBytes
		tx += rate * c.calls * cd.reqBytes
	}
	s.rx = netIdleBytes + rx*math.Max(0, 1+netNoise*s.d.rx)
	s.tx = netIdleBytes + tx*math.Max(0, 1+netNoise*s.d.tx)
}

// metricOf returns the metric a fault kind moves, as a scrape sees it: the
// CPU in cores, the working set in bytes, the mean latency in seconds.
func (s *svcState) metricOf(kind string) float64 {
	switch kind {
	case FaultCPU:
		return s.cpu
	case FaultMemory:
		return s.mem
	case FaultAvailability:
		return s.errs / math.Max(1, s.n)
	}
	return s.lat
}
