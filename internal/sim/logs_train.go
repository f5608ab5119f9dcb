package sim

import (
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
)

// Training log constants.
const (
	// trainProgressEvery is how often rank 0 logs its progress.
	trainProgressEvery = time.Minute
	// tokensPerStep is the job's global batch in tokens (1024 sequences of
	// 4096).
	tokensPerStep = 1024 * 4096
	// ncclVersion is the NCCL the job's PyTorch ships.
	ncclVersion = "2.21.5"
	// checkpointDir is where the job checkpoints.
	checkpointDir = "/checkpoints/" + TrainingJob
)

// trainLog is what the training ranks' logs keep between rounds.
type trainLog struct {
	// pids are the first worker process of each rank's pod (local rank i
	// is pid+i).
	pids map[*pod]int
	// steps counts the job's steps; seq0 is the collectives' sequence
	// number at step 0, numel an all-reduce's element count.
	steps      float64
	seq0       int
	numel      int
	lastReport time.Time
	// phase and checkpoint are the job's last seen.
	phase      int
	checkpoint bool
	hang       hangLog
}

// hangLog is the job's current hang: when the job turned hung, when its
// collective stopped (death) and whether the watchdog's lines are out.
type hangLog struct {
	since, death time.Time
	done         bool
}

func newTrainLog(w *world, r *rng) trainLog {
	t := trainLog{pids: map[*pod]int{}, seq0: 40000 + r.IntN(20000), numel: 131072000 * (1 + r.IntN(4))}
	for _, p := range w.c.job.ranks {
		t.pids[p] = 1000 + r.IntN(60000)
	}
	t.steps = float64(r.IntN(5000))
	return t
}

// pid is the process of local rank i of a rank's pod.
func (t *trainLog) pid(p *pod, i int) int { return t.pids[p] + i }

// seq is the sequence number of the job's current collective.
func (t *trainLog) seq() int { return t.seq0 + int(t.steps)*4 }

// globalRank is the rank of local rank i of the job's pod p.
func (lw *logWriter) globalRank(p *pod, i int) int {
	return slices.Index(lw.w.c.job.ranks, p)*lw.w.cfg.GPUsPerNode + i
}

// trainRound writes the training ranks' lines of the round.
func (lw *logWriter) trainRound() {
	j, t := lw.w.c.job, &lw.train
	running := j.phase == phaseRunning
	if running && !j.checkpoint {
		t.steps += lw.w.dt / j.cur.t
	}
	lw.watchdog(j)
	if j.phase != t.phase {
		switch j.phase {
		case phaseRestarting:
			lw.restartLines(j)
		case phaseRunning:
			lw.add(lw.podSource(j.ranks[0]), lw.within(lw.r, 0), plog.SeverityNumberInfo,
				pyLine(lw.hi, "INFO", "trainer.py:163", fmt.Sprintf("resumed training at step %d", int(t.steps))))
		}
	}
	if running && j.checkpoint != t.checkpoint {
		msg := fmt.Sprintf("saving checkpoint step_%08d to %s", int(t.steps), checkpointDir)
		if !j.checkpoint {
			msg = fmt.Sprintf("saved checkpoint step_%08d in %.1f s", int(t.steps), lw.w.cfg.CheckpointFor.Seconds()-lw.r.Float64())
		}
		at := lw.within(lw.r, 0)
		lw.add(lw.podSource(j.ranks[0]), at, plog.SeverityNumberInfo, pyLine(at, "INFO", "checkpoint.py:141", msg))
	}
	if running && !j.checkpoint && lw.hi.Sub(t.lastReport) >= trainProgressEvery {
		t.lastReport = lw.hi
		loss := 1.95 - 2e-5*t.steps + gauss(lw.r, 0.01)
		msg := fmt.Sprintf("step %d | loss %.3f | lr 3.00e-04 | %.1fk tokens/s | step time %.2fs",
			int(t.steps), loss, tokensPerStep/j.cur.t/1000, j.cur.t)
		lw.add(lw.podSource(j.ranks[0]), lw.hi, plog.SeverityNumberInfo, pyLine(lw.hi, "INFO", "trainer.py:412", msg))
	}
	t.phase, t.checkpoint = j.phase, j.checkpoint
}

// watchdog writes PyTorch's NCCL watchdog lines of every surviving rank
// once the job has hung for Config.NCCLTimeout: each local rank's
// collective timed out. A rank restarted since the hang began (its node
// rebooted) waits in its rendezvous instead and logs nothing.
func (lw *logWriter) watchdog(j *trainJob) {
	h := &lw.train.hang
	if j.phase == phaseHung && !j.since.Equal(h.since) {
		*h = hangLog{since: j.since, death: lw.within(lw.r, time.Second)}
	}
	if h.since.IsZero() || h.done {
		return
	}
	timeout := lw.w.cfg.NCCLTimeout
	due := h.death.Add(timeout)
	if due.After(lw.hi) {
		return
	}
	h.done = true
	seq := lw.train.seq()
	for _, p := range j.ranks {
		if !rankAlive(p) || p.st.lastTerminated.After(h.since) && p.st.lastTerminated.Before(due) {
			continue
		}
		src := lw.podSource(p)
		for i := range p.gpus {
			rank := lw.globalRank(p, i)
			at := due.Add(time.Duration(30+lw.r.IntN(900)) * time.Millisecond)
			ran := at.Sub(h.death).Milliseconds()
			lw.add(src, at, plog.SeverityNumberError, fmt.Sprintf(
				"[rank%d]:[%s ProcessGroupNCCL.cpp:632] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d) ran for %d milliseconds before timing out.",
				rank, glogTime('E', at), rank, seq, lw.train.numel, lw.train.numel, timeout.Milliseconds(), ran))
			at = at.Add(time.Millisecond)
			lw.add(src, at, plog.SeverityNumberError, fmt.Sprintf(
				"[rank%d]:[%s ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) Rank %d] Exception (either an error or timeout) detected by watchdog at work: %d, last enqueued NCCL work: %d, last completed NCCL work: %d.",
				rank, glogTime('E', at), rank, seq, seq+1, seq-1))
			lw.add(src, at, plog.SeverityNumberError, fmt.Sprintf(
				"[rank%d]:[%s ProcessGroupNCCL.cpp:1709] [PG ID 0 PG GUID 0(default_pg) Rank %d] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
				rank, glogTime('E', at), rank))
		}
	}
}

// rankFailure writes what the training rank on g logs when an XID at at
// breaks the GPU: the CUDA error NCCL and PyTorch see, then torchrun
// stopping the pod's other workers.
func (lw *logWriter) rankFailure(g *gpu, code int, at time.Time) {
	p := g.pod
	if !slices.Contains(lw.w.c.job.ranks, p) {
		return
	}
	what := "uncorrectable ECC error encountered"
	if code == 79 {
		what = "unspecified launch failure"
	}
	src, rank, pid := lw.podSource(p), lw.globalRank(p, g.idx), lw.train.pid(p, g.idx)
	at = at.Add(time.Duration(300+lw.r.IntN(1200)) * time.Millisecond)
	lw.add(src, at, plog.SeverityNumberWarn, fmt.Sprintf("%s:%d:%d [%d] NCCL WARN Cuda failure '%s'", p.node.name, pid, pid+112, g.idx, what))
	at = at.Add(4 * time.Millisecond)
	lw.add(src, at, plog.SeverityNumberError, fmt.Sprintf(
		"[rank%d]:[%s ProcessGroupNCCL.cpp:1617] [PG ID 0 PG GUID 0(default_pg) Rank %d] Process group watchdog thread terminated with exception: CUDA error: %s",
		rank, glogTime('E', at), rank, what))
	lw.add(src, at, plog.SeverityNumberError, fmt.Sprintf(
		"[rank%d]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version %s",
		rank, ncclVersion))
	at = at.Add(200 * time.Millisecond)
	for i := range p.gpus {
		if i != g.idx {
			lw.add(src, at, plog.SeverityNumberWarn, fmt.Sprintf(
				"[%s torch/distributed/elastic/multiprocessing/api.py:897] Sending process %d closing signal SIGTERM", glogTime('W', at), lw.train.pid(p, i)))
		}
	}
}

// restartLines writes what every rank logs as the job restarts: NCCL's
// and ProcessGroupNCCL's start-up lines (which name the timeout without
// being one) and the checkpoint it loads.
func (lw *logWriter) restartLines(j *trainJob) {
	t := &lw.train
	for _, p := range j.ranks {
		if !rankAlive(p) {
			continue
		}
		t.pids[p] = 1000 + lw.r.IntN(60000)
		src, at := lw.podSource(p), lw.within(lw.r, time.Second)
		lw.add(src, at, plog.SeverityNumberInfo, pyLine(at, "INFO", "trainer.py:141",
			fmt.Sprintf("loading checkpoint %s/step_%08d", checkpointDir, int(t.steps))))
		lw.add(src, at, plog.SeverityNumberInfo, fmt.Sprintf("%s:%d:%d [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:%s<0>",
			p.node.name, t.pid(p, 0), t.pid(p, 0), p.ip))
		for i := range p.gpus {
			rank := lw.globalRank(p, i)
			lw.add(src, at, plog.SeverityNumberInfo, fmt.Sprintf(
				"[rank%d]:[%s ProcessGroupNCCL.cpp:914] [PG ID 0 PG GUID 0(default_pg) Rank %d] ProcessGroupNCCL initialization options: size: %d, global rank: %d, TIMEOUT(ms): %d, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0",
				rank, glogTime('I', at), rank, len(j.ranks)*lw.w.cfg.GPUsPerNode, rank, lw.w.cfg.NCCLTimeout.Milliseconds()))
		}
	}
}

// glogTime is the prefix c10's logging writes: level, month, day, time to
// the nanosecond.
func glogTime(level byte, t time.Time) string {
	return fmt.Sprintf("%c%02d%02d %s.%09d", level, int(t.Month()), t.Day(), t.Format("15:04:05"), t.Nanosecond())
}

// pyLine is a line of the trainer's Python logging.
func pyLine(at time.Time, level, where, msg string) string {
	return fmt.Sprintf("%s %s %s -- %s", at.Format("2006-01-02 15:04:05,000"), level, where, msg)
}
