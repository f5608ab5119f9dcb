package robust

import (
	"math"
	"time"
)

// deployment is a vLLM Deployment: replicas behind one Service, each a
// pod of tp GPUs with its own KV cache and scheduler.
type deployment struct {
	c               *cluster
	namespace, name string
	model           string
	tp              int
	want            int
	replicas        []*replica
	replicaSets     []string // every ReplicaSet kube-state-metrics lists
	rs              string   // the current one
	generation      int
	// newBuckets: vLLM 0.11+ (wider histogram buckets, inter-token
	// latency); else vLLM 0.9/0.10 buckets and time_per_output_token.
	newBuckets bool
	// The replicas' engine: max_num_seqs, KV-cache size in tokens,
	// prompt and output lengths (medians), decode time per token at a
	// small batch, prefill speed, gpu_memory_utilization.
	maxSeqs, kvTokens, promptMed, genMed, itl0, prefill, gmu float64
	// peak is the whole deployment's request rate at the daily peak.
	peak float64
	// timeout is how long clients wait for a first token before they give
	// up (the gateway's or the SDK's timeout).
	timeout   time.Duration
	burst     ou
	demandMul float64 // a fault's extra demand (1: none)
	rng       *rng
}

// replica is one vLLM server.
type replica struct {
	d        *deployment
	pod      *pod
	share    float64
	loadedAt time.Time // when its API server comes up after loading
	// engine state
	running, waiting, kv float64
	backlog              float64 // requests queued for want of room
	promptMul            float64 // a fault's longer prompts
	// counters since the process started
	promptTok, genTok, preempt float64
	success                    [3]float64 // stop, length, abort
	aborted                    float64    // requests given up, not yet counted
	ttft, e2e, itl, queue      *hist
	rng                        *rng
	lambda, throughput         float64
	restarts                   int // the pod's restarts this replica has seen
}

// hist is a cumulative Prometheus histogram.
type hist struct {
	bounds     []float64
	counts     []float64 // per bucket, not cumulative; last is +Inf
	sum, count float64
}

func newHist(bounds []float64) *hist {
	return &hist{bounds: bounds, counts: make([]float64, len(bounds)+1)}
}

func (h *hist) observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i]++
	h.sum += v
	h.count++
}

// vLLM's histogram buckets, old (0.9/0.10) and new (0.11+).
var (
	ttftOld = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	ttftNew = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	e2eOld  = []float64{1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60}
	e2eNew  = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	itlB    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
)

// servedModels are the models a deployment serves, with the tensor
// parallelism an 80 GB GPU needs for them.
var servedModels = []struct {
	name string
	tp   int
}{
	{"meta-llama/Llama-3.1-8B-Instruct", 1},
	{"Qwen/Qwen2.5-32B-Instruct", 2},
	{"meta-llama/Llama-3.3-70B-Instruct", 4},
	{"mistralai/Mixtral-8x7B-Instruct-v0.1", 2},
}

func newDeployment(c *cluster, r *rng, n *node) *deployment {
	m := pick(r, servedModels)
	tp := m.tp
	if c.model.fbTotal > 100000 && tp > 1 {
		tp /= 2
	}
	d := &deployment{
		c: c, namespace: pick(r, []string{"inference", "serving", "llm-serving"}), model: m.name, tp: tp,
		name:       pick(r, []string{"vllm", "llm-api", "chat-serving"}) + "-" + r.suffix(3),
		newBuckets: r.chance(0.6), maxSeqs: pick(r, []float64{128, 256}),
		promptMed: r.uniform(400, 1500), genMed: r.uniform(120, 400), itl0: r.uniform(0.012, 0.035),
		prefill: r.uniform(6000, 20000), gmu: pick(r, []float64{0.85, 0.9, 0.92}),
		demandMul: 1, generation: r.between(1, 12), rng: newRNG(c.cfg.Seed, "vllm"),
		timeout: pick(r, []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute}),
	}
	d.burst = ou{sd: r.uniform(0.05, 0.15), tau: r.duration(60*time.Second, 4*time.Minute)}
	// The KV cache holds maxSeqs requests of the usual length at 75–90%.
	d.kvTokens = d.maxSeqs * d.kvPerReq(1) / r.uniform(0.75, 0.9)
	d.want = max(1, min(4, (8-1)/tp))
	d.want = r.between(max(1, d.want-1), d.want)
	d.rs = d.name + "-" + r.hex(10)[:9] + "b"
	d.replicaSets = []string{d.rs}
	for range d.want {
		d.replicas = append(d.replicas, d.newReplica(r, n, c.cfg.Start.Add(-time.Duration(r.uniform(2, 200)*3600)*time.Second)))
	}
	// At the daily peak the replicas run at 35–65% of what they hold.
	rho := r.uniform(0.35, 0.65)
	d.peak = rho * d.capacityPerReplica() * float64(len(d.replicas))
	return d
}

// newReplica makes a replica pod of the current ReplicaSet on n, started
// at start.
func (d *deployment) newReplica(r *rng, n *node, start time.Time) *replica {
	p := d.c.newPod(r, d.namespace, d.rs+"-"+r.suffix(5), "vllm", n, "ReplicaSet", d.rs, 8, 64<<30)
	p.start = start.Truncate(time.Second)
	p.hold(n, d.tp)
	rep := &replica{d: d, pod: p, share: r.uniform(0.95, 1.05), promptMul: 1, rng: newRNG(d.c.cfg.Seed, "replica/"+p.name)}
	rep.resetCounters()
	rep.loadedAt = start.Add(r.duration(70*time.Second, 150*time.Second))
	return rep
}

// resetCounters starts a new process: every counter and histogram at 0.
func (r *replica) resetCounters() {
	ttft, e2e := ttftOld, e2eOld
	if r.d.newBuckets {
		ttft, e2e = ttftNew, e2eNew
	}
	r.ttft, r.e2e, r.itl, r.queue = newHist(ttft), newHist(e2e), newHist(itlB), newHist(e2e)
	r.promptTok, r.genTok, r.preempt, r.success, r.aborted = 0, 0, 0, [3]float64{}, 0
	r.running, r.waiting, r.kv, r.backlog = 0, 0, 0, 0
}

// kvPerReq is the KV cache a running request holds on average (tokens).
func (d *deployment) kvPerReq(promptMul float64) float64 {
	return d.promptMed*promptMul*1.35 + d.genMed*0.6
}

// serviceTime is a request's mean time in the engine at a batch size.
func (d *deployment) serviceTime(promptMul, running float64) float64 {
	return d.promptMed*promptMul*1.35/d.prefill + d.genMed*1.25*d.itl(running)
}

func (d *deployment) itl(running float64) float64 { return d.itl0 * (1 + 0.8*running/d.maxSeqs) }

// concurrency is how many requests a replica runs at once: max_num_seqs,
// or fewer when the KV cache fills first.
func (d *deployment) concurrency(promptMul float64) float64 {
	return math.Min(d.maxSeqs, 0.985*d.kvTokens/d.kvPerReq(promptMul))
}

// capacityPerReplica is the request rate one replica sustains.
func (d *deployment) capacityPerReplica() float64 {
	c := d.concurrency(1)
	return c / d.serviceTime(1, c)
}

// diurnal is the daily shape of the inference load, peaking mid-afternoon
// UTC, in [0.25, 1].
func diurnal(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60
	return 0.625 + 0.375*math.Cos(2*math.Pi*(h-15)/24)
}

// serving tells whether a replica's API server answers (and gets traffic).
func (r *replica) serving(t time.Time) bool {
	p := r.pod
	return !p.st.deleted && p.st.running && !p.node.down && !t.Before(r.loadedAt)
}

// step advances the deployment by dt at t: demand, each replica's
// scheduler, the requests it finished, and its GPUs' demand.
func (d *deployment) step(t time.Time, dt time.Duration) {
	lambda := d.peak * diurnal(t) * (1 + d.burst.step(d.rng, dt)) * d.demandMul
	shares := 0.0
	for _, r := range d.replicas {
		if r.serving(t) {
			shares += r.share
		}
	}
	for _, r := range d.replicas {
		r.lambda = 0
		if r.serving(t) && shares > 0 {
			r.lambda = lambda * r.share / shares
		}
		r.step(t, dt)
	}
}

func (r *replica) step(t time.Time, dt time.Duration) {
	d, rn, sec := r.d, r.rng, dt.Seconds()
	if p := r.pod; p.st.restarts != r.restarts {
		// A new process: counters from 0, the model loaded again.
		r.restarts = p.st.restarts
		r.resetCounters()
		r.loadedAt = p.st.backAt.Add(rn.duration(70*time.Second, 150*time.Second))
	}
	if !r.serving(t) {
		r.running, r.waiting, r.kv, r.throughput, r.backlog = 0, 0, 0, 0, 0
		r.gpuDemand(t)
		return
	}
	conc := math.Floor(d.concurrency(r.promptMul))
	s := d.serviceTime(r.promptMul, math.Min(conc, r.running))
	offered := r.lambda * s
	var mu float64
	if r.backlog > 0.5 || offered > conc {
		// Saturated: the batch is full and the rest queues.
		r.running = conc
		mu = conc / d.serviceTime(r.promptMul, conc)
		r.backlog = math.Max(0, r.backlog+(r.lambda-mu)*sec)
		// Clients give up after their timeout: the queue holds no more
		// than a timeout's worth of service, the rest is aborted.
		if most := mu * d.timeout.Seconds(); r.backlog > most {
			r.aborted += r.backlog - most
			r.backlog = most
		}
		r.waiting = r.backlog
	} else {
		r.running = clamp(math.Round(offered+rn.normal(0, math.Sqrt(offered+1)*0.5)), 0, conc)
		mu = r.lambda
		r.backlog, r.waiting = 0, 0
		if rn.chance(0.03) {
			// A burst of arrivals waits a scheduler step or two.
			r.waiting = float64(rn.between(1, 3))
		}
	}
	r.kv = clamp(r.running*d.kvPerReq(r.promptMul)/d.kvTokens+rn.normal(0, 0.01), 0, 1)
	if r.backlog > 0.5 && conc < d.maxSeqs {
		// Out of blocks: the scheduler admits partial prefills and
		// preempts until the cache is all but full.
		r.kv = rn.uniform(0.965, 1)
	}
	if r.kv > 0.97 {
		r.preempt += float64(rn.poisson((0.2 + r.waiting/50) * sec))
	}
	r.throughput = mu
	wait := 0.0
	if mu > 0 {
		wait = r.waiting / mu
	}
	itl := d.itl(r.running)
	for range rn.poisson(mu * sec) {
		prompt := math.Min(32768, rn.lognormal(d.promptMed*r.promptMul, 0.8))
		gen := math.Round(math.Min(4096, rn.lognormal(d.genMed, 0.7)))
		q := wait * rn.uniform(0.5, 1.5)
		ttft := q + prompt/d.prefill*rn.uniform(0.8, 1.3) + 0.015
		tok := itl * rn.uniform(0.85, 1.2)
		r.ttft.observe(ttft)
		r.e2e.observe(ttft + gen*tok)
		r.queue.observe(q)
		r.itl.observe(tok)
		r.promptTok += math.Round(prompt)
		r.genTok += gen
		if rn.chance(0.85) {
			r.success[0]++
		} else {
			r.success[1]++
		}
	}
	if n := math.Floor(r.aborted); n > 0 {
		r.success[2] += n
		r.aborted -= n
	}
	r.gpuDemand(t)
}

// gpuDemand sets the replica's GPUs' demand: a decode loop keeps them
// busy once a few requests run; the KV cache is preallocated
// (gpu_memory_utilization) whatever the load.
func (r *replica) gpuDemand(t time.Time) {
	d, m := r.d, r.d.c.model
	p := r.pod
	for _, g := range p.gpus {
		switch {
		case p.st.deleted || !p.st.container:
			g.st.d = demand{}
		case t.Before(r.loadedAt):
			// Loading the weights from the host: PCIe busy, memory filling.
			g.st.d = demand{active: true, util: 8, compute: 0.05, pcieRx: 0.3 * m.pcie, fb: 0.5 * d.gmu * m.fbTotal}
		default:
			load := r.running / d.maxSeqs
			util := 0.0
			if r.running > 0 {
				util = 100 * (1 - math.Exp(-r.running/5))
			}
			nv := 0.0
			if d.tp > 1 {
				nv = 0.04 * m.nvlink * math.Min(1, 0.1+load)
			}
			g.st.d = demand{active: r.running > 0, util: util, compute: 0.22 + 0.6*math.Pow(load, 0.6),
				memCopy: 15 + 55*load, nvlink: nv, pcieTx: 2000 + 4000*load, pcieRx: 2500 + 5000*load,
				fb: d.gmu*m.fbTotal - m.fbReserved}
		}
	}
}

// notebook is a Jupyter server holding one GPU: bursts of work between
// quiet spells, now and then a kernel that dies of its own bug.
type notebook struct {
	pod      *pod
	g        *gpu
	rng      *rng
	next     time.Time // when the current spell ends
	busy     bool
	kernelUp bool
	fb, util float64
	crashes  []time.Time // kernel crashes (an application XID each)
	crashXID []int
}

func newNotebook(c *cluster, r *rng, n *node) *notebook {
	user := pick(r, []string{"alice", "bob", "chen", "dana", "eli"})
	ss := "jupyter-" + user
	p := c.newPod(r, pick(r, []string{"research", "notebooks", "ds-team"}), ss+"-0", "notebook", n, "StatefulSet", ss, 8, 64<<30)
	p.hold(n, 1)
	nb := &notebook{pod: p, g: p.gpus[0], rng: newRNG(c.cfg.Seed, "notebook"), kernelUp: true, fb: r.uniform(6000, 30000)}
	nb.next = c.cfg.Start.Add(r.duration(0, 5*time.Minute))
	return nb
}

// step sets the notebook GPU's demand at t.
func (nb *notebook) step(t time.Time) {
	r := nb.rng
	for len(nb.crashes) > 0 && !t.Before(nb.crashes[0]) {
		// The user's kernel dies on an illegal address or an engine
		// exception: the driver logs an application XID and frees its
		// memory; the user restarts the kernel a few minutes later.
		nb.g.setXID(nb.crashXID[0])
		nb.crashes, nb.crashXID = nb.crashes[1:], nb.crashXID[1:]
		nb.kernelUp, nb.busy = false, false
		nb.next = t.Add(r.duration(90*time.Second, 6*time.Minute))
	}
	if !t.Before(nb.next) {
		switch {
		case !nb.kernelUp:
			nb.kernelUp, nb.busy = true, true
			nb.fb = r.uniform(6000, 30000)
			nb.next = t.Add(r.duration(time.Minute, 6*time.Minute))
		case nb.busy:
			nb.busy = false
			nb.next = t.Add(r.duration(2*time.Minute, 11*time.Minute))
		default:
			nb.busy = true
			nb.util = r.uniform(40, 100)
			nb.next = t.Add(r.duration(time.Minute, 6*time.Minute))
		}
	}
	switch {
	case !nb.kernelUp:
		nb.g.st.d = demand{}
	case nb.busy:
		nb.g.st.d = demand{active: true, util: nb.util, compute: nb.util / 130, memCopy: nb.util / 3,
			pcieTx: 5e4, pcieRx: 1e5, fb: nb.fb}
	default:
		nb.g.st.d = demand{fb: nb.fb}
	}
}
