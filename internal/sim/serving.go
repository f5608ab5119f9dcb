package sim

import (
	"fmt"
	"math"
	"time"
)

// The healthy shape of one vLLM replica's work.
const (
	replicaCapacity = 4.5     // requests per second a replica completes at most
	maxNumSeqs      = 256     // vLLM's max_num_seqs
	kvCapacity      = 120_000 // KV-cache tokens of a replica
	promptLen       = 1500    // mean prompt tokens
	genLen          = 240     // mean generated tokens
	baseITL         = 0.028   // seconds per output token, idle
	basePrefill     = 0.09    // seconds of prefill for a mean prompt
)

// finishReasons are vLLM v1's FinishReason values with their healthy shares.
var finishReasons = [...]struct {
	name  string
	share float64
}{{"stop", 0.9}, {"length", 0.09}, {"abort", 0.01}}

// serving is the vLLM deployment.
type serving struct {
	name, rs, model string
	// generation is the Deployment's observed generation; specGeneration
	// its metadata.generation, emitted where a rollout is planned.
	generation, specGeneration float64
	// rollout is the bad rollout of the run, if any.
	rollout  *rolloutPlan
	replicas []*replica
	rng      *rng
	// trafficMul multiplies the offered load this tick (1 healthy).
	trafficMul float64
	// rate is the deployment's offered request rate this tick.
	rate float64
	// accuracyDrop lowers the model's measured accuracy this tick.
	accuracyDrop float64
}

// replica is one vLLM server: a pod of GPUsPerReplica GPUs.
type replica struct {
	pod                       *pod
	rng                       *rng
	waiting, running, kv      float64
	load                      float64 // share of capacity used this tick
	promptTokens, genTokens   float64
	preemptions               float64
	success                   [len(finishReasons)]float64
	prefixQueries, prefixHits float64
	ttft, itl, e2e, queue     hist
	promptHist, genHist       hist
	// per-tick conditions
	capacity float64 // multiplies replicaCapacity (1 healthy)
	kvExtra  float64 // KV cache held by long contexts, a fraction
	// promptMul and genMul scale the requests' prompt and output lengths
	// (1 healthy; model_drift moves them).
	promptMul, genMul float64
	// ttftMul and itlMul multiply its time to first token and inter-token
	// latency, abortExtra is the added share of aborted requests (1, 1
	// and 0 healthy; a bad rollout's new version moves them).
	ttftMul, itlMul, abortExtra float64
}

func (c *cluster) newServing(r *rng) *serving {
	s := &serving{
		name:       workloadName(c.cfg.ServedModel),
		model:      c.cfg.ServedModel,
		generation: float64(3 + r.IntN(5)),
		rng:        newRand(c.cfg, "serving"),
	}
	s.rs = s.name + "-" + podSuffix(r, 10)
	perNode := c.cfg.GPUsPerNode / c.cfg.GPUsPerReplica
	for i := range c.cfg.Replicas {
		n := c.nodes[c.cfg.TrainingNodes+i/perNode]
		first := (i % perNode) * c.cfg.GPUsPerReplica
		p := &pod{
			name:       s.rs + "-" + podSuffix(r, 5),
			namespace:  InferenceNamespace,
			uid:        uuid(r),
			container:  "vllm",
			ownerKind:  "ReplicaSet",
			ownerName:  s.rs,
			cpuRequest: 16,
			memRequest: 256 * (1 << 30),
			created:    c.cfg.Start.Add(-time.Duration(30+r.IntN(60)) * time.Hour),
		}
		c.addPod(p, n, n.gpus[first:first+c.cfg.GPUsPerReplica])
		rep := &replica{
			pod: p, rng: newRand(c.cfg, "replica", fmt.Sprint(i)),
			ttft: newHist(vllmTTFTBuckets), itl: newHist(vllmITLBuckets),
			e2e: newHist(vllmRequestLatencyBuckets), queue: newHist(vllmRequestLatencyBuckets),
			promptHist: newHist(vllmTokenBuckets), genHist: newHist(vllmTokenBuckets),
		}
		p.rep = rep
		s.replicas = append(s.replicas, rep)
	}
	return s
}

// placeNotebook puts the research notebook on the first free GPU after the
// replicas.
func (c *cluster) placeNotebook(r *rng) *pod {
	for _, n := range c.nodes[c.cfg.TrainingNodes:] {
		for _, g := range n.gpus {
			if g.pod != nil {
				continue
			}
			p := &pod{
				name: NotebookPod, namespace: NotebookNamespace, uid: uuid(r), container: "notebook",
				ownerKind: "StatefulSet", ownerName: "notebook", cpuRequest: 8, memRequest: 64 * (1 << 30),
				created: c.cfg.Start.Add(-time.Duration(2+r.IntN(5)) * 24 * time.Hour),
			}
			c.addPod(p, n, []*gpu{g})
			return p
		}
	}
	return nil // Validate leaves room for it
}

// diurnal is the share of the peak request rate at t: lowest at 03:00 UTC,
// highest at 15:00.
func diurnal(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
	return 0.7 + 0.3*math.Cos(2*math.Pi*(h-15)/24)
}

// replicaServes reports whether a replica's server answers requests.
func replicaServes(r *replica) bool {
	return r.pod.st.phase == "Running" && r.pod.st.ready && !r.pod.node.cond.down
}

// step advances the deployment by dt seconds at t.
func (s *serving) step(t time.Time, dt float64, peak float64) {
	s.rate = peak * diurnal(t) * s.trafficMul * (1 + gauss(s.rng, 0.04))
	var up []*replica
	for _, r := range s.replicas {
		if replicaServes(r) {
			up = append(up, r)
		} else {
			r.load, r.running = 0, 0
		}
	}
	for _, r := range up {
		r.step(s.rate/float64(len(up))*(1+gauss(r.rng, 0.05)), dt)
	}
}

// step advances one replica offered rate requests per second.
func (r *replica) step(rate, dt float64) {
	speed := 1.0
	for _, g := range r.pod.gpus {
		speed = min(speed, g.cond.speed*g.cond.clock)
	}
	mu := replicaCapacity * r.capacity * speed
	kvBase := r.kvExtra
	if kvBase > 0.9 {
		// Long contexts crowd the cache: fewer sequences fit, vLLM
		// preempts and recomputes.
		mu *= clamp(1-0.85*(kvBase-0.9)/0.08, 0.15, 1)
	}
	arrivals := float64(poisson(r.rng, rate*dt))
	backlog := r.waiting + arrivals
	served := math.Min(backlog, math.Max(0, mu*dt*(1+gauss(r.rng, 0.03))))
	r.waiting = backlog - served
	r.load = clamp(served/(replicaCapacity*dt), 0, 1)
	pl, gl := promptLen*r.promptMul, genLen*r.genMul
	itl := baseITL * (1 + 0.7*r.load) / speed * r.itlMul
	queueWait := r.waiting / math.Max(mu, 0.01)
	// Prompt lengths vary from one tick's requests to the next; prefill
	// grows with them.
	ttft := basePrefill*(pl/promptLen)*(1+2*r.load*r.load)*(1+gauss(r.rng, 0.05))/speed*r.ttftMul + queueWait
	e2e := ttft + gl*itl
	r.running = math.Min(maxNumSeqs, math.Round(served/dt*e2e))
	r.kv = clamp(r.running*(pl+gl/2)/kvCapacity*(1+gauss(r.rng, 0.03))+kvBase, 0, 1)
	if r.kv >= 0.97 {
		r.preemptions += float64(poisson(r.rng, 0.4*dt))
	}
	r.ttft.observe(served, ttft, 0.45)
	r.e2e.observe(served, e2e, 0.5)
	r.queue.observe(served, queueWait+0.002, 0.8)
	r.itl.observe(served*gl, itl, 0.25)
	r.promptHist.observe(served, pl*0.8, 0.7)
	r.genHist.observe(served, gl*0.85, 0.55)
	prompt := served * pl * (1 + gauss(r.rng, 0.05))
	r.promptTokens += math.Round(prompt)
	r.genTokens += math.Round(served * gl * (1 + gauss(r.rng, 0.05)))
	r.prefixQueries += math.Round(prompt)
	r.prefixHits += math.Round(prompt * (0.35 + gauss(r.rng, 0.02)))
	left := served
	for i, f := range finishReasons[:len(finishReasons)-1] {
		share := f.share
		if r.abortExtra > 0 {
			share *= 1 - r.abortExtra
		}
		n := math.Min(left, math.Round(served*share+gauss(r.rng, 0.5)))
		n = math.Max(n, 0)
		r.success[i] += n
		left -= n
	}
	r.success[len(finishReasons)-1] += left
}

// restart zeroes the replica's counters and queues: a restarted vLLM
// process starts its metrics from scratch.
func (r *replica) restart() {
	r.waiting, r.running, r.kv, r.load = 0, 0, 0, 0
	r.promptTokens, r.genTokens, r.preemptions, r.prefixQueries, r.prefixHits = 0, 0, 0, 0, 0
	r.success = [len(finishReasons)]float64{}
	for _, h := range []*hist{&r.ttft, &r.itl, &r.e2e, &r.queue, &r.promptHist, &r.genHist} {
		h.reset()
	}
}

// servingActivity is a replica's GPU activity.
func (w *world) servingActivity(g *gpu, r *replica) activity {
	spec := w.c.spec
	if !replicaServes(r) {
		return idleActivity(g)
	}
	l := r.load
	return activity{
		util:   clamp(35+60*l+gauss(g.rng, 2), 0, 100),
		tensor: clamp((0.05+0.28*l)*(1+gauss(g.rng, 0.04)), 0, 1),
		sm:     clamp((0.25+0.5*l)*(1+gauss(g.rng, 0.03)), 0, 1),
		dram:   clamp((0.2+0.5*l)*(1+gauss(g.rng, 0.03)), 0, 1),
		nvlink: math.Max(0, 0.18*spec.NVLinkTrain*(0.2+l)*(1+gauss(g.rng, 0.04))),
		pcieTx: 4e7 * (1 + gauss(g.rng, 0.1)), pcieRx: 6e7 * (1 + gauss(g.rng, 0.1)),
		fbUsed: spec.FBTotal * 0.9,
		busy:   true,
	}
}

// notebookState is the research notebook's usage: bursts of work with
// think time between them.
type notebookState struct {
	active bool
	// idle: the notebook stopped using its GPU (gpu_idle); poll: it polls
	// with tiny kernels (the subtle variant).
	idle, poll bool
}

// notebookActivity is the notebook GPU's activity.
func (w *world) notebookActivity(g *gpu) activity {
	nb := &w.notebook
	if nb.idle {
		a := activity{fbUsed: 21_500 + gauss(g.rng, 40)}
		if nb.poll {
			a.util, a.tensor, a.sm, a.dram, a.busy = clamp(5+gauss(g.rng, 2), 1, 100), 0.0005, 0.01, 0.005, true
		}
		return a
	}
	if nb.active && g.rng.Float64() < 0.08 {
		nb.active = false
	} else if !nb.active && g.rng.Float64() < 0.2 {
		nb.active = true
	}
	a := activity{fbUsed: 21_500 + gauss(g.rng, 40)}
	if nb.active {
		a.util = clamp(55+gauss(g.rng, 20), 5, 100)
		a.tensor = clamp(0.15+gauss(g.rng, 0.06), 0.01, 0.6)
		a.sm = clamp(a.util/100*0.7, 0, 1)
		a.dram = clamp(0.2+gauss(g.rng, 0.05), 0, 1)
		a.pcieRx = 3e8
		a.busy = true
	}
	return a
}
