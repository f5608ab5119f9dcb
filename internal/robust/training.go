package robust

import (
	"fmt"
	"math"
	"time"
)

// trainJob is a synchronous data-parallel training job: one pod of 8 GPUs
// per node, every rank waiting for the slowest at each step's collective.
type trainJob struct {
	c                    *cluster
	namespace, name      string
	ownerKind, ownerName string
	pods                 []*pod
	// utilLevel is GPU_UTIL while training (NCCL's kernels count as
	// busy), intensity the compute fraction of a GPU that sets the pace.
	utilLevel, intensity, memCopy float64
	// nvlinkFrac is the share of the NVLink bandwidth the job moves at full
	// speed; pcieTx and pcieRx its mean PCIe traffic per GPU (KB/s).
	nvlinkFrac, pcieTx, pcieRx float64
	// fbPerGPU is each GPU's framebuffer use, a little different per rank.
	fbPerGPU    []float64
	checkpoints []span
	ncclTimeout time.Duration
	// rankMul slows a rank (faults: NVLink, PCIe, memory pressure).
	rankMul map[*pod]float64
	// hang is set when a rank's process died or hung: the others wait in
	// their collective until the NCCL timeout.
	hang *jobHang
	// now is this tick's phase, rate the progress rate (1 nominal).
	phase string
	rate  float64
}

// jobHang is a stall of the whole job.
type jobHang struct {
	since    time.Time
	dead     *pod // the rank whose process died (nil: none died, it hangs)
	restart  bool // the NCCL timeout fired and every rank restarted
	deadGPUs func(g *gpu) demand
}

// span is a time interval [from, to).
type span struct{ from, to time.Time }

func (s span) has(t time.Time) bool { return !t.Before(s.from) && t.Before(s.to) }

// Phases of a training job.
const (
	phaseTrain      = "train"
	phaseCheckpoint = "checkpoint"
	phaseHung       = "hung"
	phaseRendezvous = "rendezvous"
)

var jobNames = []string{"llm-pretrain", "llama-70b-sft", "moe-pretrain", "gpt-13b-rlhf", "vit-h-pretrain", "mixtral-ft"}

func newTrainJob(c *cluster, r *rng, nodes []*node) *trainJob {
	j := &trainJob{
		c: c, namespace: pick(r, []string{"ml-train", "research", "llm", "team-nlp"}), name: pick(r, jobNames),
		utilLevel: r.uniform(93, 100), intensity: r.uniform(0.7, 0.92), memCopy: r.uniform(25, 55),
		nvlinkFrac: r.uniform(0.12, 0.4), pcieTx: r.uniform(0.05, 0.2) * c.model.pcie, pcieRx: r.uniform(0.05, 0.25) * c.model.pcie,
		ncclTimeout: pick(r, []time.Duration{10 * time.Minute, 10 * time.Minute, 30 * time.Minute}),
		rankMul:     map[*pod]float64{},
	}
	j.ownerKind, j.ownerName = "PyTorchJob", j.name
	if r.chance(0.3) {
		j.ownerKind = "Job"
	}
	for i, n := range nodes {
		name := fmt.Sprintf("%s-worker-%d", j.name, i)
		p := c.newPod(r, j.namespace, name, "pytorch", n, j.ownerKind, j.ownerName, 96, 900<<30)
		p.start = c.cfg.Start.Add(-time.Duration(r.uniform(1, 40)*3600) * time.Second).Truncate(time.Second)
		p.hold(n, 8)
		j.pods = append(j.pods, p)
	}
	for range len(nodes) * 8 {
		j.fbPerGPU = append(j.fbPerGPU, c.model.trainFB*r.uniform(0.97, 1.02))
	}
	j.checkpoints = drawCheckpoints(r, c.cfg)
	return j
}

// drawCheckpoints draws the checkpoints: irregular gaps, lengths from 30 s
// to 10 minutes (log-uniform), none in the run's last 3 minutes.
func drawCheckpoints(r *rng, cfg Config) []span {
	end := cfg.Start.Add(cfg.Duration)
	var out []span
	t := cfg.Start.Add(r.duration(2*time.Minute, 12*time.Minute))
	for t.Before(end) {
		d := time.Duration(math.Exp(r.uniform(math.Log(30), math.Log(600)))) * time.Second
		if t.Add(d).After(end.Add(-3 * time.Minute)) {
			break
		}
		out = append(out, span{t, t.Add(d)})
		gap := time.Duration(clamp(r.lognormal(11*60, 0.5), 5*60, 35*60)) * time.Second
		t = t.Add(d + gap)
	}
	return out
}

// avoid drops the checkpoints that come within margin of t (a fault's
// onset: a checkpoint there would hide or fake it).
func (j *trainJob) avoid(t time.Time, margin time.Duration) {
	var kept []span
	for _, s := range j.checkpoints {
		if s.to.Add(margin).Before(t) || s.from.After(t.Add(margin)) {
			kept = append(kept, s)
		}
	}
	j.checkpoints = kept
}

// gpuSpeed is how fast g computes relative to an unthrottled GPU of its
// node: its thermal clock ceiling or what its power cap leaves.
func (j *trainJob) gpuSpeed(g *gpu) float64 {
	m, f := j.c.model, 1.0
	if g.st.fault.clockMul > 0 {
		f = g.st.fault.clockMul
	}
	if capW := g.st.fault.capW; capW > 0 {
		dyn := (m.tdp - m.idle) * j.intensity
		if m.idle+dyn*f*f > capW {
			f = math.Sqrt(math.Max(0.01, (capW-m.idle)/dyn))
		}
	}
	return f
}

// step sets the demands of the job's GPUs at t.
func (j *trainJob) step(t time.Time) {
	j.phase, j.rate = phaseTrain, 0
	if h := j.hang; h != nil {
		j.phase = phaseHung
		if !h.restart && !t.Before(h.since.Add(j.ncclTimeout)) {
			h.restart = true
			for _, p := range j.pods {
				if p != h.dead && p.st.container && !p.node.down {
					p.restartContainer(t, "Error")
				}
			}
		}
		if h.restart {
			j.phase = phaseRendezvous
		}
	} else {
		for _, s := range j.checkpoints {
			if s.has(t) {
				j.phase = phaseCheckpoint
				j.stepCheckpoint(t.Sub(s.from))
				return
			}
		}
	}
	if j.phase != phaseTrain {
		j.stepStalled()
		return
	}
	// The job runs at the pace of its slowest GPU; the others wait for it
	// in the step's collective (NCCL spinning: busy to GPU_UTIL, little
	// power).
	j.rate = math.Inf(1)
	for _, p := range j.pods {
		for _, g := range p.gpus {
			j.rate = math.Min(j.rate, j.speedOf(p, g))
		}
	}
	m := j.c.model
	for i, p := range j.pods {
		for k, g := range p.gpus {
			busy := clamp(j.rate/j.speedOf(p, g), 0, 1)
			g.st.d = demand{
				active: true, util: j.utilLevel,
				compute: j.intensity*busy + 0.12*(1-busy), memCopy: j.memCopy * busy,
				nvlink: j.nvlinkFrac * m.nvlink * j.rate, pcieTx: j.pcieTx * j.rate, pcieRx: j.pcieRx * j.rate,
				fb: j.fbPerGPU[i*8+k],
			}
		}
	}
}

// speedOf is how fast one GPU of a rank computes.
func (j *trainJob) speedOf(p *pod, g *gpu) float64 {
	return p.node.speed * j.mul(p) * j.gpuSpeed(g)
}

func (j *trainJob) mul(p *pod) float64 {
	if v, ok := j.rankMul[p]; ok {
		return v
	}
	return 1
}

// stepCheckpoint: every rank copies its state to the host (PCIe burst),
// then waits while rank 0 writes it out.
func (j *trainJob) stepCheckpoint(since time.Duration) {
	for i, p := range j.pods {
		for k, g := range p.gpus {
			d := demand{fb: j.fbPerGPU[i*8+k]}
			if since < 20*time.Second {
				d.active, d.util, d.compute, d.memCopy = true, 35, 0.15, 60
				d.pcieTx = 0.45 * j.c.model.pcie
			}
			g.st.d = d
		}
	}
}

// stepStalled: a hung job's live ranks spin in NCCL (GPU_UTIL 100 at low
// power, nothing moves); after the NCCL timeout they restarted and wait
// for the missing rank at the rendezvous (idle, a CUDA context each).
func (j *trainJob) stepStalled() {
	h := j.hang
	for i, p := range j.pods {
		for k, g := range p.gpus {
			switch {
			case p == h.dead && h.deadGPUs != nil:
				g.st.d = h.deadGPUs(g)
			case p == h.dead || !p.st.container:
				g.st.d = demand{}
			case h.restart:
				g.st.d = demand{fb: 520}
			default:
				g.st.d = demand{active: true, util: 100, compute: 0.1, fb: j.fbPerGPU[i*8+k], nvlink: 12, pcieTx: 30, pcieRx: 30}
			}
		}
	}
}

// stall hangs the job from at; dead is the rank whose process died (nil:
// a hang with every process alive), deadGPUs its GPUs' demand (nil: idle).
func (j *trainJob) stall(at time.Time, dead *pod, deadGPUs func(*gpu) demand) {
	if j.hang == nil {
		j.hang = &jobHang{since: at, dead: dead, deadGPUs: deadGPUs}
	}
}

// rankOn is the job's pod on a node, nil when it has none there.
func (j *trainJob) rankOn(n *node) *pod {
	for _, p := range j.pods {
		if p.node == n {
			return p
		}
	}
	return nil
}

// restartContainer records a container exit at at and its restart (the
// pod stays; kube-state-metrics counts the restart and keeps the reason).
// The kubelet restarts a container at once unless it crashed within the
// last 10 minutes: then it backs off 10 s, 20 s, 40 s ... up to 5 minutes,
// the container waiting in CrashLoopBackOff.
func (p *pod) restartContainer(at time.Time, reason string) {
	st := &p.st
	if st.lastExit.IsZero() || at.Sub(st.lastExit) > 10*time.Minute {
		st.backoff = 0
	}
	st.restarts++
	st.lastTerm = reason
	st.running, st.ready, st.container = false, false, false
	st.waiting = ""
	st.backAt = at.Add(time.Second)
	if st.backoff > 0 {
		st.waiting = "CrashLoopBackOff"
		st.backAt = at.Add(st.backoff)
	}
	st.backoff = min(max(10*time.Second, 2*st.backoff), 5*time.Minute)
	st.lastExit = at
}

// tick brings a restarted container back once its back-off is over.
func (p *pod) tick(t time.Time) {
	if !p.st.running && !p.st.backAt.IsZero() && !t.Before(p.st.backAt) {
		p.st.running, p.st.ready, p.st.container, p.st.waiting = true, true, true, ""
		p.st.backAt = time.Time{}
	}
}
