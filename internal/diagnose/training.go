package diagnose

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
	"github.com/vigil-obs/vigil/internal/topology"
)

// Training symptoms: a stall is the job's work collapsing below
// stallRatio of its earlier level and not coming back for longer than the
// job's checkpoints pause it (see checkpointBound); a slowdown is a robust
// drop of slowZ reference scales for slowRun steps while the job still
// works. Only what still holds at the evaluation time is current: a pause
// that ended is a checkpoint, or history (a symptom with its resolved_at).
const (
	stallRatio = 0.35
	stallRun   = 3
	slowZ      = 4.0
	slowRun    = 4
)

// DefaultCheckpointMax is how long a job-wide pause of a training job
// with no earlier pause in the window to learn from may last and still be
// a checkpoint (Options.CheckpointMax): writing the state of a large model
// takes minutes, and PyTorch's NCCL watchdog tears a hung job down after
// its default timeout of 10 minutes, so a pause longer than that is no
// checkpoint.
const DefaultCheckpointMax = 10 * time.Minute

// activitySignals are the GPU work signals, best first: tensor-pipe
// activity collapses in an NCCL hang while GPU_UTIL stays near 100%.
var activitySignals = []string{"gpu.tensor_active", "gpu.sm_active", "gpu.gr_engine_active", "gpu.util"}

// gpuRef is one GPU of a workload.
type gpuRef struct {
	node, gpu string
	pod       string // podKey
}

func (g gpuRef) key() string { return gpuKey(g.node, g.gpu) }

// trainJob is a training workload: its ranks, GPUs and work over time.
type trainJob struct {
	ns, name string
	pods     []string // podKey
	nodes    []string
	gpus     []gpuRef
	// act is the job's median GPU activity per step, from actSignal.
	act       []float64
	actSignal string
	ref       detect.Baseline
	// util is the job's median GPU_UTIL per step when act is read from
	// a profiling signal (nil otherwise): a hang keeps it high.
	util []float64
	// power is the job's median power draw per step when act is GPU_UTIL
	// (dcgm-exporter's default fields): ranks that wait in NCCL keep
	// GPU_UTIL at 100% but draw less, so power shows a slowdown GPU_UTIL
	// hides. powerRef is its reference.
	power    []float64
	powerRef detect.Baseline
	// stalled/slowed: the symptom episode, if any; sym its index;
	// current: it still holds at the evaluation time.
	symptom *episode
	stall   bool
	current bool
	sym     int
}

func (j *trainJob) workload() string { return j.ns + "/" + j.name }

// findJobs reads the training workloads of the topology and their
// symptoms.
func (an *analysis) findJobs(ctx context.Context) error {
	workloads := an.v.topo.Workloads
	if len(workloads) == 0 {
		// No kube-state-metrics: guess workloads from the pods
		// dcgm-exporter attributes GPUs to.
		workloads = guessWorkloads(an.v.topo)
	}
	for _, w := range workloads {
		if w.Role != topology.RoleTraining {
			continue
		}
		j := an.newJob(w)
		if len(j.gpus) < 2 {
			// One GPU has no peers to wait for: a notebook or a single
			// process, not a synchronous job.
			continue
		}
		if err := an.jobActivity(ctx, j); err != nil {
			return err
		}
		if !j.steady() {
			// Bursty work (a notebook, a batch of short kernels) is no
			// synchronous training job: no stall to see in it.
			continue
		}
		an.jobs = append(an.jobs, j)
		an.trainingSymptom(j)
		if err := an.loggedStall(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// Pod name suffixes: an ordinal (StatefulSet, indexed Job, PyTorchJob
// worker-N) or a Job's random suffix names a gang's pods; a ReplicaSet's
// template hash and a pod suffix names a Deployment's (a server, not a
// gang).
var (
	podOrdinal    = regexp.MustCompile(`(-[0-9]+|-[a-z0-9]{5})$`)
	podReplicaSet = regexp.MustCompile(`-[a-z0-9]{8,10}-[a-z0-9]{5}$`)
)

// guessWorkloads groups the pods that hold GPUs by their name without its
// ordinal or hash, when kube-state-metrics does not say whose they are:
// a group of two or more pods is taken as a gang (a training job), to be
// confirmed by steady work.
func guessWorkloads(topo *topology.Topology) []*topology.Workload {
	byKey := map[string]*topology.Workload{}
	var keys []string
	for _, n := range topo.Nodes {
		for _, g := range n.GPUs {
			for _, p := range g.Pods {
				if podReplicaSet.MatchString(p.Pod) {
					continue
				}
				name := podOrdinal.ReplaceAllString(p.Pod, "")
				if name == "" || name == p.Pod {
					continue
				}
				k := p.Namespace + "/" + name
				w := byKey[k]
				if w == nil {
					w = &topology.Workload{Namespace: p.Namespace, Name: name, Kind: "unknown", Role: topology.RoleTraining}
					byKey[k] = w
					keys = append(keys, k)
				}
				if !slices.Contains(w.Pods, p.Pod) {
					w.Pods = append(w.Pods, p.Pod)
				}
			}
		}
	}
	slices.Sort(keys)
	var out []*topology.Workload
	for _, k := range keys {
		if w := byKey[k]; len(w.Pods) >= 2 {
			out = append(out, w)
		}
	}
	return out
}

// newJob collects a workload's pods, nodes and GPUs: the GPUs
// dcgm-exporter (or the resource requests) attribute to its pods.
func (an *analysis) newJob(w *topology.Workload) *trainJob {
	j := &trainJob{ns: w.Namespace, name: w.Name, sym: -1}
	for _, p := range w.Pods {
		j.pods = append(j.pods, podKey(w.Namespace, p))
	}
	for _, n := range an.v.topo.Nodes {
		for _, p := range n.Pods {
			if p.Namespace != w.Namespace || !slices.Contains(w.Pods, p.Pod) {
				continue
			}
			if !slices.Contains(j.nodes, n.Name) {
				j.nodes = append(j.nodes, n.Name)
			}
			pk := podKey(p.Namespace, p.Pod)
			for _, g := range n.GPUs {
				if slices.Contains(p.GPUs, g.Index) {
					j.gpus = append(j.gpus, gpuRef{node: n.Name, gpu: g.Index, pod: pk})
				}
			}
		}
		// The GPUs dcgm-exporter attributes to the workload's pods, whether
		// or not kube-state-metrics lists the pods.
		for _, g := range n.GPUs {
			for _, r := range g.Pods {
				if r.Namespace == w.Namespace && slices.Contains(w.Pods, r.Pod) {
					j.gpus = append(j.gpus, gpuRef{node: n.Name, gpu: g.Index, pod: podKey(r.Namespace, r.Pod)})
					if !slices.Contains(j.nodes, n.Name) {
						j.nodes = append(j.nodes, n.Name)
					}
				}
			}
		}
	}
	slices.SortFunc(j.gpus, func(a, b gpuRef) int { return compareGPU(a.node, a.gpu, b.node, b.gpu) })
	j.gpus = slices.CompactFunc(j.gpus, func(a, b gpuRef) bool { return a.key() == b.key() })
	slices.Sort(j.nodes)
	return j
}

// compareGPU orders GPUs by node, then index numerically.
func compareGPU(an, ag, bn, bg string) int {
	if an != bn {
		if an < bn {
			return -1
		}
		return 1
	}
	ai, aerr := strconv.Atoi(ag)
	bi, berr := strconv.Atoi(bg)
	if aerr == nil && berr == nil {
		return ai - bi
	}
	if ag < bg {
		return -1
	}
	if ag > bg {
		return 1
	}
	return 0
}

// maxJobSpread is the largest relative spread of a training job's work
// before anything happened: a synchronous job runs the same step again and
// again.
const maxJobSpread = 0.25

// steady reports whether the job's work was steady before anything
// happened (or it had none to read).
func (j *trainJob) steady() bool {
	return j.act == nil || j.ref.N > 0 && j.ref.Median > 0 && j.ref.Scale <= maxJobSpread*j.ref.Median
}

// jobRows returns the rows of a GPU table that belong to the job's GPUs,
// in the job's order (nil where a GPU has none).
func (j *trainJob) rows(t *table) []*row {
	idx := t.byEntity()
	out := make([]*row, len(j.gpus))
	for i, g := range j.gpus {
		out[i] = idx[g.key()]
	}
	return out
}

func nonNil(rows []*row) []*row {
	return slices.DeleteFunc(slices.Clone(rows), func(r *row) bool { return r == nil })
}

// jobActivity reads the job's median activity from the best signal its
// GPUs report.
func (an *analysis) jobActivity(ctx context.Context, j *trainJob) error {
	for _, s := range activitySignals {
		t, err := an.v.sig(ctx, s)
		if err != nil {
			return err
		}
		rows := nonNil(j.rows(t))
		if len(rows) == 0 {
			continue
		}
		j.act, j.actSignal = medianAcross(rows, an.v.n), s
		j.ref = workReference(j.act)
		if s == "gpu.util" {
			p, err := an.v.sig(ctx, "gpu.power")
			if err != nil {
				return err
			}
			if prows := nonNil(j.rows(p)); len(prows) > 0 {
				j.power = medianAcross(prows, an.v.n)
				j.powerRef = reference(j.power, detect.Floor{Rel: 0.01, Abs: 1})
			}
		}
		if s != "gpu.util" {
			u, err := an.v.sig(ctx, "gpu.util")
			if err != nil {
				return err
			}
			if urows := nonNil(j.rows(u)); len(urows) > 0 {
				j.util = medianAcross(urows, an.v.n)
			}
		}
		return nil
	}
	return nil
}

// workReference is the robust level of a job's work before whatever
// happened later: the first quarter of its readings (at least ten), less
// the pauses in it (readings under stallRatio of their 90th percentile):
// a checkpoint is no part of the job's working level, and a long one early
// in the window would otherwise make a steady job look bursty.
func workReference(act []float64) detect.Baseline {
	valid := detect.Valid(act)
	var pts, work []float64
	// A long checkpoint can fill the first quarter: then the first half.
	for _, share := range []int{4, 2} {
		pts = firstValues(act, max(10, valid/share))
		top := detect.Quantile(pts, 0.9)
		work = slices.DeleteFunc(slices.Clone(pts), func(x float64) bool { return x < stallRatio*top })
		if len(work) >= 3 && 2*len(work) >= len(pts) {
			return detect.NewBaseline(work, detect.Floor{Rel: 0.01, Abs: 1e-6})
		}
	}
	// Idle more often than working: bursts of work (a notebook), not a
	// job that pauses now and then.
	return detect.NewBaseline(firstValues(act, max(10, valid/4)), detect.Floor{Rel: 0.01, Abs: 1e-6})
}

// firstValues returns the first n values of xs that are not NaN.
func firstValues(xs []float64, n int) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// trainingSymptom finds a stall or a slowdown of the job: its work, as
// the median over its GPUs, collapsing for longer than its checkpoints
// last, or dropping while it still works. What still holds at the last
// step is current; else the latest episode that ended is reported
// resolved. A pause that ended within the checkpoint bound is a
// checkpoint, whatever its length.
func (an *analysis) trainingSymptom(j *trainJob) {
	if j.act == nil || j.ref.N == 0 || j.ref.Median <= 0 {
		return
	}
	n := an.v.n
	_, last := lastValid(j.act)
	if last < 0 {
		return
	}
	paused := func(i int) bool { return j.act[i] < stallRatio*j.ref.Median }
	pauses := episodes(n, paused, 1)
	bound := an.checkpointBound(j, pauses, last)
	stallSteps := max(stallRun, int(bound/an.v.step)+1)
	near := func(i int) bool { // a pause's ramp: dcgm-exporter averages over its interval
		return i > 0 && paused(i-1) || i+1 < n && paused(i+1)
	}
	slows := episodes(n, func(i int) bool { return !paused(i) && !near(i) && j.ref.Z(j.act[i]) <= -slowZ }, slowRun)
	powerSlow := false
	if len(slows) == 0 && j.power != nil && j.powerRef.N > 0 {
		slows = episodes(n, func(i int) bool { return !paused(i) && !near(i) && j.powerRef.Z(j.power[i]) <= -slowZ }, slowRun)
		powerSlow = len(slows) > 0
	}
	type found struct {
		kind string
		e    episode
	}
	var current, resolved *found
	for _, e := range pauses {
		ongoing := e.end >= last
		hung := an.hung(j, e)
		need := stallSteps
		if hung {
			need = stallRun // busy GPUs that do no work are no checkpoint
		}
		if e.len() < need {
			continue // a checkpoint (or one still within its bound)
		}
		f := &found{SymptomTrainingStall, e}
		if ongoing {
			current = f
		} else {
			resolved = f
		}
	}
	for _, e := range slows {
		f := &found{SymptomTrainingSlowdown, e}
		switch {
		case e.end >= last-1 && current == nil:
			current = f
		case e.end < last-1 && (resolved == nil || e.end > resolved.e.end):
			resolved = f
		}
	}
	switch {
	case current != nil:
		j.stall = current.kind == SymptomTrainingStall
		an.addTrainingSymptom(j, current.kind, current.e, powerSlow && current.kind == SymptomTrainingSlowdown)
	case resolved != nil:
		an.addTrainingSymptom(j, resolved.kind, resolved.e, powerSlow && resolved.kind == SymptomTrainingSlowdown)
	}
}

// checkpointBound is how long a job-wide pause of j may last and still be
// a checkpoint: Options.CheckpointMax, or twice the longest pause the job
// took earlier in the window and recovered from (its own checkpoints)
// when that is longer.
// The pause that reaches the last step is not counted: it is the one
// being judged.
func (an *analysis) checkpointBound(j *trainJob, pauses []episode, last int) time.Duration {
	longest := 0
	for _, e := range pauses {
		if e.end < last && e.start > 0 && e.len() > longest {
			longest = e.len()
		}
	}
	// Learning only lengthens the bound: one job's checkpoints vary with
	// the storage's load, and a short one earlier says little of the next.
	return max(an.v.e.opts.CheckpointMax, 2*time.Duration(longest)*an.v.step)
}

// hung reports whether the job's GPUs stayed busy through a pause of its
// work: a checkpoint idles them (GPU_UTIL falls with the tensor
// activity), an NCCL wait keeps a kernel spinning on every GPU (GPU_UTIL,
// the fraction of time a kernel runs, stays high while tensor activity
// collapses). Only a job whose work signal is a profiling one can tell.
func (an *analysis) hung(j *trainJob, e episode) bool {
	if j.util == nil || j.actSignal == "gpu.util" {
		return false
	}
	ref := reference(j.util, detect.Floor{Rel: 0.01, Abs: 1e-6})
	if ref.N == 0 || ref.Median <= 0 {
		return false
	}
	return detect.Median(j.util[e.start:e.end+1]) >= 0.8*ref.Median
}

// earlyStallRun is how many steps confirm a collapse of the job's work
// when hardware evidence on one of its nodes starts with it: a checkpoint
// pauses every rank for about a minute too, but comes with no XID, no GPU
// off the bus and no link collapse. It pages one step (30 s) sooner.
const earlyStallRun = 2

// corroboratedStalls adds the stall (or slowdown) of a job whose work has
// collapsed (or dropped) for earlyStallRun steps up to the evaluation time
// when a fault candidate on one of its nodes (direct evidence, or strong)
// starts within precedenceSlack of it. Run after the hypotheses, before
// link.
func (an *analysis) corroboratedStalls() {
	n := an.v.n
	for _, j := range an.jobs {
		if j.symptom != nil && j.current || j.act == nil || j.ref.N == 0 || j.ref.Median <= 0 {
			continue
		}
		kind := SymptomTrainingStall
		eps := episodes(n, func(i int) bool { return j.act[i] < stallRatio*j.ref.Median }, earlyStallRun)
		if len(eps) == 0 || eps[len(eps)-1].end != n-1 {
			kind = SymptomTrainingSlowdown
			eps = episodes(n, func(i int) bool { return j.ref.Z(j.act[i]) <= -slowZ }, earlyStallRun)
		}
		if len(eps) == 0 || eps[len(eps)-1].end != n-1 {
			continue // a finished two-step dip is a checkpoint
		}
		e := eps[len(eps)-1]
		if an.corroborated(j, an.v.time(e.start)) {
			j.stall = kind == SymptomTrainingStall
			an.addTrainingSymptom(j, kind, e, false)
		}
	}
}

// corroborated reports whether a fault candidate on one of j's nodes —
// direct evidence, or strong — starts within precedenceSlack of start.
func (an *analysis) corroborated(j *trainJob, start time.Time) bool {
	for _, c := range an.cands {
		if (!c.direct && c.strength < 0.8) || c.strength < minExplain || c.onset.IsZero() ||
			c.onset.Before(start.Add(-precedenceSlack)) || c.onset.After(start.Add(precedenceSlack)) {
			continue
		}
		if slices.ContainsFunc(c.nodes, func(nd string) bool { return slices.Contains(j.nodes, nd) }) {
			return true
		}
	}
	return false
}

// addTrainingSymptom records the job's stall or slowdown over episode e.
func (an *analysis) addTrainingSymptom(j *trainJob, kind string, e episode, byPower bool) {
	j.symptom = &e
	low := detect.Median(j.act[e.start : e.end+1])
	summary := fmt.Sprintf("%s/%s stalled: GPU work (%s) fell to %.0f%% of its earlier level", j.ns, j.name, j.actSignal, 100*low/j.ref.Median)
	switch {
	case byPower:
		low := detect.Median(j.power[e.start : e.end+1])
		summary = fmt.Sprintf("%s/%s slowed: its GPUs draw %.1f%% less power (gpu.power) while GPU_UTIL stays at %.0f%% (the ranks wait in NCCL)",
			j.ns, j.name, 100*(1-low/j.powerRef.Median), 100*detect.Median(j.act[e.start:e.end+1]))
	case kind == SymptomTrainingSlowdown:
		summary = fmt.Sprintf("%s/%s slowed: GPU work (%s) fell %.1f%% below its earlier level", j.ns, j.name, j.actSignal, 100*(1-low/j.ref.Median))
	}
	_, last := lastValid(j.act)
	var resolved *time.Time
	if e.end < last-1 || kind == SymptomTrainingStall && e.end < last {
		t := an.v.time(e.end + 1)
		resolved = &t
		summary += fmt.Sprintf(" until %s, then recovered", t.Format("15:04:05"))
	}
	j.current = resolved == nil
	j.sym = an.addSymptom(symptomRec{
		Symptom: Symptom{Kind: kind, Entity: Entity{catalog.KeyNamespace: j.ns, catalog.KeyWorkload: j.name},
			Since: an.v.time(e.start), Summary: summary, ResolvedAt: resolved},
		nodes: j.nodes, pods: j.pods, workload: j.workload(),
	})
}

// deviation is how one entity's signal departs from its peers'.
type deviation struct {
	// onset is the first step of the longest persistent episode.
	onset int
	ep    episode
	// z is the median peer z-score over the episode; ratio the median of
	// value / peer median.
	z, ratio float64
}

// peerRun is how many steps a peer deviation must last: one sample is a
// blip.
const peerRun = 2

// peerDeviations compares each GPU of the job with the job's other GPUs
// at every step and returns the persistent deviations beyond thr (signed:
// thr < 0 looks for low values), by GPU key.
func (an *analysis) peerDeviations(ctx context.Context, j *trainJob, signal string, thr float64) (map[string]deviation, error) {
	key := fmt.Sprintf("%s|%s|%g", j.workload(), signal, thr)
	if d, ok := an.peer[key]; ok {
		return d, nil
	}
	t, err := an.v.sig(ctx, signal)
	if err != nil {
		return nil, err
	}
	rows := j.rows(t)
	out := peerDeviationsOf(rows, j.gpuKeys(), an.v.n, thr, peerFloor)
	an.peer[key] = out
	return out, nil
}

func (j *trainJob) gpuKeys() []string {
	out := make([]string, len(j.gpus))
	for i, g := range j.gpus {
		out[i] = g.key()
	}
	return out
}

// peerFloor is the relative floor of peer comparison: GPUs of one job
// doing the same work differ by a percent or two.
var peerFloor = detect.Floor{Rel: 0.02, Abs: 1e-6}

// peerDeviationsOf is peerDeviations over given rows.
func peerDeviationsOf(rows []*row, keys []string, n int, thr float64, floor detect.Floor) map[string]deviation {
	z := make([][]float64, len(rows))
	ratio := make([][]float64, len(rows))
	for k := range rows {
		z[k] = make([]float64, n)
		ratio[k] = make([]float64, n)
	}
	vals := make([]float64, 0, len(rows))
	for i := range n {
		vals = vals[:0]
		for _, r := range rows {
			if r != nil && !math.IsNaN(r.v[i]) {
				vals = append(vals, r.v[i])
			}
		}
		// The MAD's scale: a node of a four-node job is a quarter of its
		// GPUs, the IQR's breakdown point.
		b := detect.NewBaselineMADInPlace(vals, floor)
		for k, r := range rows {
			z[k][i], ratio[k][i] = math.NaN(), math.NaN()
			if r == nil || len(vals) < 3 || math.IsNaN(r.v[i]) {
				continue
			}
			z[k][i] = b.Z(r.v[i])
			if b.Median != 0 {
				ratio[k][i] = r.v[i] / b.Median
			}
		}
	}
	out := map[string]deviation{}
	for k := range rows {
		bad := func(i int) bool { return thr < 0 && z[k][i] <= thr || thr > 0 && z[k][i] >= thr }
		e, ok := longest(episodes(n, bad, peerRun))
		if !ok {
			continue
		}
		eps := episodes(n, bad, peerRun)
		out[keys[k]] = deviation{onset: eps[0].start, ep: e,
			z: detect.Median(z[k][e.start : e.end+1]), ratio: detect.Median(ratio[k][e.start : e.end+1])}
	}
	return out
}

// jobOf returns the training job a node belongs to, or nil.
func (an *analysis) jobOfNode(node string) *trainJob {
	for _, j := range an.jobs {
		if slices.Contains(j.nodes, node) {
			return j
		}
	}
	return nil
}
