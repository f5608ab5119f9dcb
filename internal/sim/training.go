package sim

import (
	"fmt"
	"time"
)

// Healthy step of the training job: seconds of compute and of
// communication (intra-node NVLink and inter-node InfiniBand halves).
const (
	stepCompute   = 1.2
	stepCommIntra = 0.15
	stepCommInter = 0.15
	stepHealthy   = stepCompute + stepCommIntra + stepCommInter
	// tensorPerBusy is the tensor-pipe activity of a GPU that computes all
	// the time: a healthy rank (busy 80%) shows about 0.58.
	tensorPerBusy = 0.72
)

// Job phases.
const (
	phaseRunning    = iota
	phaseHung       // a rank is gone: the others wait in a collective
	phaseFailed     // the NCCL watchdog killed the processes; waiting for every rank
	phaseRestarting // every rank is back: rendezvous and checkpoint load
)

// Job restart timing: PyTorch's NCCL watchdog timeout and the time a
// restart takes (rendezvous, loading the last checkpoint).
const (
	ncclTimeout = 10 * time.Minute
	restartFor  = 3 * time.Minute
)

// trainJob is the synchronous data-parallel training job: one rank (pod)
// per node, every rank waiting for the slowest at each step.
type trainJob struct {
	name, namespace string
	ranks           []*pod
	rng             *rng
	// lag is how many ticks a rank's trouble takes to show in its peers
	// (one DCGM interval: the collectives back up).
	lag int
	// hist holds the raw step of recent ticks, newest last.
	hist []jobStep
	// cur is the step as the peers see it this tick (lagged).
	cur jobStep
	// phase and since: the job's phase and when it began.
	phase int
	since time.Time
	// checkpointAt is the offset of the first checkpoint from the start.
	checkpointAt time.Duration
	checkpoint   bool
}

// jobStep is the job's step in one tick.
type jobStep struct {
	// t is the step time in seconds.
	t float64
	// phase is the job's phase.
	phase int
}

// rankStep is what one GPU of one rank does in a tick.
type rankStep struct {
	busy     float64 // fraction of the step computing
	dataIdle float64 // fraction of the step waiting for input
	hung     bool    // waiting in a collective that never ends
	stopped  bool    // no process runs on it
	loading  bool    // restarting: loading the checkpoint
}

func (c *cluster) newTrainJob(r *rng) *trainJob {
	j := &trainJob{
		name:         TrainingJob,
		namespace:    TrainingNamespace,
		rng:          newRand(c.cfg, "train"),
		lag:          int(c.cfg.DCGMInterval / c.cfg.ScrapeInterval),
		checkpointAt: time.Duration(r.Int64N(int64(c.cfg.CheckpointEvery/time.Second))) * time.Second,
	}
	for i := range c.cfg.TrainingNodes {
		n := c.nodes[i]
		p := &pod{
			name:       fmt.Sprintf("%s-worker-%d", TrainingJob, i),
			namespace:  TrainingNamespace,
			uid:        uuid(r),
			container:  "pytorch",
			ownerKind:  "PyTorchJob",
			ownerName:  TrainingJob,
			cpuRequest: 96,
			memRequest: 1.5 * (1 << 40),
			created:    c.cfg.Start.Add(-time.Duration(20+r.IntN(30)) * time.Hour),
			training:   true,
		}
		c.addPod(p, n, n.gpus)
		j.ranks = append(j.ranks, p)
	}
	return j
}

// rankAlive reports whether a rank's process can run.
func rankAlive(p *pod) bool {
	if p.node.cond.down || p.st.phase != "Running" {
		return false
	}
	for _, g := range p.gpus {
		if g.cond.lost || g.cond.dead {
			return false
		}
	}
	return true
}

// computeOf is a GPU's compute seconds per step.
func computeOf(g *gpu, noise float64) float64 {
	return stepCompute * noise / max(0.01, g.cond.speed*g.cond.clock)
}

// step advances the job by one tick at t, since the start.
func (j *trainJob) step(t time.Time, since time.Duration, cfg Config) {
	slowest, link, ib, alive := 0.0, 1.0, 1.0, true
	for _, p := range j.ranks {
		if !rankAlive(p) {
			alive = false
			continue
		}
		for _, g := range p.gpus {
			slowest = max(slowest, computeOf(g, 1)+p.node.cond.dataWait)
			link = min(link, g.cond.link)
		}
		ib = min(ib, p.node.cond.ib)
	}
	j.advance(t, alive)
	raw := jobStep{t: slowest + stepCommIntra/max(link, 0.005) + stepCommInter/max(ib, 0.005), phase: j.phase}
	if raw.phase != phaseRunning {
		raw.t = stepHealthy
	}
	j.hist = append(j.hist, raw)
	if len(j.hist) > j.lag+1 {
		j.hist = j.hist[1:]
	}
	// The peers see the job's trouble a DCGM interval late; a recovery
	// they see at once (they are the ones restarting).
	j.cur = j.hist[0]
	if raw.phase != phaseHung {
		j.cur.phase = raw.phase
	}
	off := since - j.checkpointAt
	j.checkpoint = j.phase == phaseRunning && off >= 0 && off%cfg.CheckpointEvery < cfg.CheckpointFor
}

// advance moves the job through its phases: a lost rank hangs the others
// until the NCCL watchdog kills them (their containers restart); once every
// rank is back the job restarts from its checkpoint.
func (j *trainJob) advance(t time.Time, alive bool) {
	set := func(p int) { j.phase, j.since = p, t }
	switch j.phase {
	case phaseRunning:
		if !alive {
			set(phaseHung)
		}
	case phaseHung:
		if t.Sub(j.since) >= ncclTimeout {
			// The watchdog kills the processes stuck in the collective:
			// not those restarted since the hang began.
			for _, p := range j.ranks {
				if rankAlive(p) && p.st.lastTerminated.Before(j.since) {
					p.st.restarts++
					p.st.lastReason, p.st.lastTerminated = "Error", t
				}
			}
			set(phaseFailed)
		}
	case phaseFailed:
		if alive {
			set(phaseRestarting)
		}
	case phaseRestarting:
		switch {
		case !alive:
			set(phaseFailed)
		case t.Sub(j.since) >= restartFor:
			set(phaseRunning)
		}
	}
}

// rankOf says what GPU g of rank p does this tick.
func (j *trainJob) rankOf(p *pod, g *gpu) rankStep {
	if !rankAlive(p) {
		return rankStep{stopped: true}
	}
	switch j.cur.phase {
	case phaseHung:
		return rankStep{hung: true}
	case phaseFailed:
		return rankStep{stopped: true}
	case phaseRestarting:
		return rankStep{loading: true}
	}
	noise := 1 + gauss(g.rng, 0.01)
	t := j.cur.t
	c := computeOf(g, noise)
	return rankStep{
		busy:     clamp(c/t, 0, 1),
		dataIdle: clamp(p.node.cond.dataWait/t, 0, 1),
	}
}
