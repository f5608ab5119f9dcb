package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
	"github.com/vigil-obs/vigil/internal/topology"
)

// What the diagnosis reads from the log-derived counters besides XIDs
// (logs.go, hyp_xid.go):
//
//   - NCCL watchdog timeouts in a training job's ranks: the collective
//     hung. They are the job's stall when its GPUs hide it (NCCL's kernels
//     spin and keep the GPUs busy; without DCGM's profiling fields the
//     activity the engine reads stays high), and the stall's summary names
//     the first error logged in the job before them (a CUDA error, an
//     out-of-memory, an XID, an NCCL error) — the rank that likely broke
//     it. The causes themselves come from their hypotheses: an XID the
//     kernel logged is an XID (hyp_xid.go), an OOM kill is below.
//   - OOM kills: a pod's is pod_oom_killed, sooner than kube-state-
//     metrics' restart and without its stale last reason; the kernel's
//     killer acting for the whole host (system_oom) is node_memory_pressure
//     on its node.
//   - HTTP 5xx lines of a service the request path (span metrics) does
//     not cover: error_rate_high when their count per step rises well
//     above its earlier level.

// log5xxMin is the fewest 5xx lines per step a service must log before
// their rise is a symptom: a handful is a bad client.
const log5xxMin = 10

// loggedStall reads the NCCL timeouts of a training job's ranks: the
// job's stall when its GPU activity shows none, more words for the stall
// it shows.
func (an *analysis) loggedStall(ctx context.Context, j *trainJob) error {
	rs, err := an.logRises(ctx)
	if err != nil || len(rs) == 0 {
		return err
	}
	var timeouts []logRise
	for _, r := range risesOf(rs, logNCCLTimeout) {
		if an.inJob(j, r) {
			timeouts = append(timeouts, r)
		}
	}
	if len(timeouts) == 0 {
		return nil
	}
	first := timeouts[0].first
	ranks := map[string]bool{}
	for _, r := range timeouts {
		ranks[cmp.Or(r.pod, r.node)] = true
	}
	words := fmt.Sprintf("NCCL watchdog timeouts in %d of %d pods from %s", len(ranks), max(len(j.pods), len(ranks)), an.v.time(first).Format(time.TimeOnly))
	if culprit, ok := an.firstJobError(rs, j, first); ok {
		where := culprit.node
		if culprit.pod != "" {
			where = culprit.ns + "/" + culprit.pod + " on " + culprit.node
		}
		what := strings.ReplaceAll(culprit.event, "_", " ")
		if culprit.event == logXID {
			what = fmt.Sprintf("XID %d", culprit.xid)
		}
		words += fmt.Sprintf("; first error before them: %s in %s at %s", what, where, an.v.time(culprit.first).Format(time.TimeOnly))
	}
	if j.symptom != nil && (j.current || first <= j.symptom.end+1) {
		// The stall the metrics show, current or over: the timeouts are
		// its ranks giving up on it.
		an.syms[j.sym].Summary += "; " + words
		return nil
	}
	j.symptom, j.stall, j.current = &episode{start: first, end: an.v.n - 1}, true, true
	j.sym = an.addSymptom(symptomRec{
		Symptom: Symptom{Kind: SymptomTrainingStall, Entity: Entity{catalog.KeyNamespace: j.ns, catalog.KeyWorkload: j.name},
			Since: an.v.time(first), Summary: fmt.Sprintf("%s/%s stalled: %s", j.ns, j.name, words)},
		nodes: j.nodes, pods: j.pods, workload: j.workload(),
	})
	return nil
}

// loggedOrphanStalls reads the NCCL timeouts of pods no training job the
// metrics show holds (no GPU metrics at all, a job whose work was not
// steady, logs shipped to Vigil while the metrics live elsewhere): their
// workload — kube-state-metrics' owner, else the pod's name without its
// ordinal — stalled, with the first error its pods or nodes logged.
func (an *analysis) loggedOrphanStalls(ctx context.Context) error {
	rs, err := an.logRises(ctx)
	if err != nil || len(rs) == 0 {
		return err
	}
	byKey := map[string]*trainJob{}
	for _, r := range risesOf(rs, logNCCLTimeout) {
		if r.pod == "" || slices.ContainsFunc(an.jobs, func(j *trainJob) bool { return an.inJob(j, r) }) {
			continue
		}
		w := an.workloadOfPod(r.ns, r.pod)
		k := r.ns + "/" + w.Name
		j := byKey[k]
		if j == nil {
			j = &trainJob{ns: r.ns, name: w.Name, sym: -1, nodes: slices.Clone(w.Nodes)}
			for _, p := range w.Pods {
				j.pods = append(j.pods, podKey(r.ns, p))
			}
			byKey[k] = j
		}
		if pk := podKey(r.ns, r.pod); !slices.Contains(j.pods, pk) {
			j.pods = append(j.pods, pk)
		}
		if r.node != "" && !slices.Contains(j.nodes, r.node) {
			j.nodes = append(j.nodes, r.node)
		}
	}
	for _, k := range sortedKeys(byKey) {
		if err := an.loggedStall(ctx, byKey[k]); err != nil {
			return err
		}
	}
	return nil
}

// workloadOfPod is the workload kube-state-metrics says owns a pod, else
// one named by the pod's name without the ordinal or hash of a gang's
// pods, holding that pod.
func (an *analysis) workloadOfPod(ns, pod string) topology.Workload {
	for _, w := range an.v.topo.Workloads {
		if w.Namespace == ns && slices.Contains(w.Pods, pod) {
			return *w
		}
	}
	name := podOrdinal.ReplaceAllString(pod, "")
	if name == "" {
		name = pod
	}
	return topology.Workload{Namespace: ns, Name: name, Pods: []string{pod}}
}

// inJob reports whether a log counter is one of the job's: its pod, or
// its node where the record named no pod.
func (an *analysis) inJob(j *trainJob, r logRise) bool {
	if r.pod != "" {
		return slices.Contains(j.pods, podKey(r.ns, r.pod))
	}
	return r.node != "" && slices.Contains(j.nodes, r.node)
}

// firstJobError is the earliest error the job's ranks or nodes logged in
// the ncclErrorLookback before the first timeout, up to it: the rank whose
// failure the others waited for. Of errors logged in the same step, the
// one that says most wins (an XID over the CUDA error it causes). An XID
// that is an event rather than a fault (63, a row remapped) is no such
// error.
func (an *analysis) firstJobError(rs []logRise, j *trainJob, upto int) (logRise, bool) {
	from := upto - int(ncclErrorLookback/an.v.step)
	var best logRise
	found := false
	for _, r := range rs { // ordered by first step
		if r.first > upto || found && r.first > best.first {
			break
		}
		p := errorPriority[r.event]
		if r.first < from || p == 0 {
			continue
		}
		if r.event == logXID {
			if x, ok := an.v.e.opts.Catalog.XID(r.xid); ok && xidStrength(x.Severity) < 0.5 {
				continue
			}
		}
		// An XID line is the node's: the kernel's log names no pod.
		if !an.inJob(j, r) && (r.pod != "" || !slices.Contains(j.nodes, r.node)) {
			continue
		}
		if !found || p > errorPriority[best.event] {
			best, found = r, true
		}
	}
	return best, found
}

// errorPriority ranks the errors that can break a collective by how much
// they say (0: not one).
var errorPriority = map[string]int{
	logXID: 5, logFellOffTheBus: 4, logOOMKilled: 3, logCUDAOOM: 2, logCUDAError: 2, logNCCLError: 1,
}

// ncclErrorLookback is how long before the first NCCL timeout an error
// can have caused it: the watchdog's timeout (PyTorch's default is ten
// minutes) and some.
const ncclErrorLookback = 15 * time.Minute

// hypLoggedOOM: the OOM kills logs report. One in a pod's own records
// (a Kubernetes event, the runtime's) is pod_oom_killed: direct, the
// kernel or the kubelet says so. The kernel's killer acting for the whole
// host (system_oom) is memory pressure on its node; a container's memory
// limit ("Memory cgroup out of memory") names no pod in the kernel's line
// and is left to the restart it causes (hyp_pod.go).
func hypLoggedOOM(ctx context.Context, an *analysis) ([]*candidate, error) {
	rs, err := an.logRises(ctx)
	if err != nil {
		return nil, err
	}
	var out []*candidate
	for _, r := range rs {
		var c *candidate
		switch {
		case r.event == logOOMKilled && r.pod != "":
			c = an.podCandidate(KindPodOOMKilled, r.ns, r.pod)
			if r.node != "" && !slices.Contains(c.nodes, r.node) {
				c.nodes = append(c.nodes, r.node)
			}
			c.strength, c.direct = 0.85, true
			c.headline = fmt.Sprintf("%s/%s OOMKilled", r.ns, r.pod)
			c.action = fmt.Sprintf("raise the memory limit of %s/%s or lower its batch/context size (--max-num-seqs, --max-model-len)", r.ns, r.pod)
		case r.event == logSystemOOM && r.node != "":
			c = an.nodeCandidate(KindNodeMemoryPressure, r.node)
			c.strength, c.direct = 0.7, true
			c.headline = fmt.Sprintf("%s memory pressure (OOM killer)", r.node)
			c.action = fmt.Sprintf("find what fills %s's memory; the kernel is killing processes (dmesg | grep -i 'killed process')", r.node)
		default:
			continue
		}
		c.onset = an.v.time(r.first)
		c.evidence = append(c.evidence, an.logEvidence(r, fmt.Sprintf("%.0f OOM kills logged from %s", r.total, an.v.time(r.first).Format(time.TimeOnly))))
		out = append(out, c)
	}
	return out, nil
}

// loggedErrorSymptoms finds the services whose logged 5xx responses rose
// for slowRun steps to log5xxMin a step and well above their earlier
// level, where span metrics do not measure the service's errors.
func (an *analysis) loggedErrorSymptoms(ctx context.Context) error {
	if an.v.e.opts.EntityLabel != "" {
		return nil
	}
	rs, err := an.logRises(ctx)
	if err != nil {
		return err
	}
	type svc struct {
		ns, name    string
		per         []float64
		nodes, pods []string
	}
	bySvc := map[string]*svc{}
	for _, r := range risesOf(rs, logHTTP5xx) {
		if r.service == "" || an.rp != nil && slices.Contains(an.rp.g.services, r.service) {
			continue
		}
		k := r.ns + "/" + r.service
		s := bySvc[k]
		if s == nil {
			s = &svc{ns: r.ns, name: r.service, per: make([]float64, an.v.n)}
			bySvc[k] = s
		}
		for i, x := range r.per {
			s.per[i] += x
		}
		if r.node != "" && !slices.Contains(s.nodes, r.node) {
			s.nodes = append(s.nodes, r.node)
		}
		if r.pod != "" {
			s.pods = append(s.pods, podKey(r.ns, r.pod))
		}
	}
	for _, k := range sortedKeys(bySvc) {
		s := bySvc[k]
		ref := reference(s.per, detect.Floor{Rel: 0.1, Abs: 1})
		bad := func(i int) bool { return s.per[i] >= log5xxMin && s.per[i] >= 3*ref.Median && ref.Z(s.per[i]) >= slowZ }
		es := episodes(an.v.n, bad, slowRun)
		if len(es) == 0 {
			continue
		}
		e, resolved := an.latest(es, nil)
		ent := Entity{catalog.KeyService: s.name}
		if s.ns != "" {
			ent[catalog.KeyNamespace] = s.ns
		}
		an.addSymptom(symptomRec{
			Symptom: Symptom{Kind: SymptomErrorRateHigh, Entity: ent, Since: an.v.time(e.start), ResolvedAt: resolved,
				Summary: fmt.Sprintf("%s logged %.0f HTTP 5xx responses per %s from %s (earlier %.0f)", s.name,
					maxOf(s.per[e.start:e.end+1]), an.v.step, an.v.time(e.start).Format(time.TimeOnly), ref.Median)},
			nodes: s.nodes, pods: s.pods,
		})
	}
	return nil
}
