package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// podCandidate starts a candidate on a pod, touching its node and
// workload.
func (an *analysis) podCandidate(kind, ns, pod string) *candidate {
	c := &candidate{kind: kind, ent: Entity{catalog.KeyNamespace: ns, catalog.KeyPod: pod}, pods: []string{podKey(ns, pod)}}
	for _, n := range an.v.topo.Nodes {
		for _, p := range n.Pods {
			if p.Namespace == ns && p.Pod == pod {
				c.nodes = append(c.nodes, n.Name)
				if p.Workload != "" {
					c.workload = ns + "/" + p.Workload
				}
			}
		}
	}
	return c
}

// reasonAt returns the reasons (rows of a table kept apart by reason)
// that hold for a container in [from, to].
func reasonsIn(t *table, ent Entity, from, to int) []string {
	var out []string
	for _, r := range t.rows {
		if r.ent[catalog.KeyNamespace] != ent[catalog.KeyNamespace] || r.ent[catalog.KeyPod] != ent[catalog.KeyPod] ||
			ent[catalog.KeyContainer] != "" && r.ent[catalog.KeyContainer] != ent[catalog.KeyContainer] {
			continue
		}
		for i := max(from, 0); i <= to && i < len(r.v); i++ {
			if r.v[i] == 1 {
				out = append(out, r.extra["reason"])
				break
			}
		}
	}
	return out
}

// hypPodRestarts: a container that restarted inside the window. OOMKilled
// as the reason of that restart is pod_oom_killed; CrashLoopBackOff, or
// restarts again and again, is pod_crash_loop. The last terminated reason
// alone is history: only a restart inside the window is news.
func hypPodRestarts(ctx context.Context, an *analysis) ([]*candidate, error) {
	rt, err := an.v.sig(ctx, "k8s.container_restarts")
	if err != nil {
		return nil, err
	}
	last, err := an.v.sig(ctx, "k8s.container_last_terminated_reason", "reason")
	if err != nil {
		return nil, err
	}
	waiting, err := an.v.sig(ctx, "k8s.container_waiting_reason", "reason")
	if err != nil {
		return nil, err
	}
	var out []*candidate
	for _, r := range rt.rows {
		a := activityOf(r.v, 0)
		if a.steps == 0 {
			continue
		}
		ns, pod, ctr := r.ent[catalog.KeyNamespace], r.ent[catalog.KeyPod], r.ent[catalog.KeyContainer]
		if an.inTrainingJob(ns, pod) && a.total < 2 {
			// One restart of a training rank is the job failing (the NCCL
			// watchdog, a lost peer): a symptom, not a cause of its own.
			continue
		}
		reasons := reasonsIn(last, r.ent, a.first, min(a.first+2, an.v.n-1))
		waits := reasonsIn(waiting, r.ent, a.first, an.v.n-1)
		var c *candidate
		switch {
		case contains(reasons, "OOMKilled"):
			c = an.podCandidate(KindPodOOMKilled, ns, pod)
			c.strength, c.direct = 0.9, true
			c.headline = fmt.Sprintf("%s/%s OOMKilled", ns, pod)
			c.action = fmt.Sprintf("raise the memory limit of %s/%s or lower its batch/context size (--max-num-seqs, --max-model-len)", ns, pod)
		case contains(waits, "CrashLoopBackOff") || a.total >= 2:
			c = an.podCandidate(KindPodCrashLoop, ns, pod)
			c.strength, c.direct = 0.6, true
			if contains(waits, "CrashLoopBackOff") {
				c.strength = 0.9
			}
			c.headline = fmt.Sprintf("%s/%s crash loop", ns, pod)
			c.action = fmt.Sprintf("read the logs of the last crash (kubectl logs -p -n %s %s); roll back its last change", ns, pod)
		default:
			continue
		}
		c.onset = an.v.time(a.first)
		c.evidence = append(c.evidence, Evidence{Signal: "kube_pod_container_status_restarts_total",
			Query:   fmt.Sprintf(`increase(kube_pod_container_status_restarts_total{namespace=%q, pod=%q}[%s])`, ns, pod, an.v.e.opts.Window),
			Summary: fmt.Sprintf("container %s restarted %.0f times from %s (last reason %s)", ctr, a.total, an.v.time(a.first).Format(time.TimeOnly), joinOr(reasons, "unknown"))})
		if len(waits) > 0 {
			c.evidence = append(c.evidence, Evidence{Signal: "kube_pod_container_status_waiting_reason",
				Query: fmt.Sprintf(`kube_pod_container_status_waiting_reason{namespace=%q, pod=%q}`, ns, pod), Summary: "waiting: " + joinOr(waits, "")})
		}
		out = append(out, c)
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func joinOr(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	out := xs[0]
	for _, x := range xs[1:] {
		if x != out {
			out += ", " + x
		}
	}
	return out
}

// inTrainingJob reports whether a pod is a rank of a training job.
func (an *analysis) inTrainingJob(ns, pod string) bool {
	k := podKey(ns, pod)
	for _, j := range an.jobs {
		if contains(j.pods, k) {
			return true
		}
	}
	return false
}

// hypPodEvicted: kube-state-metrics turns a pod's status reason to Evicted
// inside the window.
func hypPodEvicted(ctx context.Context, an *analysis) ([]*candidate, error) {
	t, err := an.v.sig(ctx, "k8s.pod_status_reason", "reason")
	if err != nil {
		return nil, err
	}
	var out []*candidate
	for _, r := range t.rows {
		if r.extra["reason"] != "Evicted" {
			continue
		}
		first := firstValid(r.v)
		at := firstAbove(r.v, 0, 0.5)
		if at < 0 || at == first && first == 0 {
			continue // evicted before the window: history
		}
		ns, pod := r.ent[catalog.KeyNamespace], r.ent[catalog.KeyPod]
		c := an.podCandidate(KindPodEvicted, ns, pod)
		c.onset, c.strength, c.direct = an.v.time(at), 0.9, true
		c.headline = fmt.Sprintf("%s/%s evicted", ns, pod)
		c.action = fmt.Sprintf("see why the kubelet evicted it (kubectl describe pod -n %s %s: disk or memory pressure on its node); free the resource or move the workload", ns, pod)
		c.evidence = append(c.evidence, Evidence{Signal: "kube_pod_status_reason",
			Query:   fmt.Sprintf(`kube_pod_status_reason{namespace=%q, pod=%q, reason="Evicted"}`, ns, pod),
			Summary: fmt.Sprintf("evicted at %s", an.v.time(at).Format(time.TimeOnly))})
		out = append(out, c)
	}
	return out, nil
}

// idleFor is how long a GPU a pod holds must do nothing before Vigil calls
// it idle; idleFull-idleFor past that bound the finding is as sure as it
// gets.
const (
	idleFor  = 10 * time.Minute
	idleFull = 20 * time.Minute
)

// longestIdleGap returns the longest run of steps without work in v
// between two of work (a pause the pod came back from; the idle steps
// before its first work in the window are a start, not a pause).
func longestIdleGap(v []float64) int {
	longest, run, worked := 0, 0, false
	for _, x := range v {
		switch {
		case math.IsNaN(x):
		case x < 0.01:
			run++
		default:
			if worked {
				longest = max(longest, run)
			}
			run, worked = 0, true
		}
	}
	return longest
}

// hypGPUIdle: a pod holds a GPU that has done no work (no tensor or SM
// activity, or with the default fields no kernel at all) for at least
// idleFor, up to now, and for longer than the pod's own pauses: twice the
// longest idle gap it came back from earlier in the window (a notebook's
// user reads, thinks and runs the next cell at her own pace). Ranks of a
// training job that stopped are the job's trouble, not waste.
func hypGPUIdle(ctx context.Context, an *analysis) ([]*candidate, error) {
	var work *table
	signal := ""
	// GPU_UTIL last, for dcgm-exporter's default fields: a polling loop
	// keeps it above zero, so at zero the GPU ran no kernel at all.
	for _, s := range []string{"gpu.tensor_active", "gpu.sm_active", "gpu.gr_engine_active", "gpu.util"} {
		t, err := an.v.sig(ctx, s)
		if err != nil {
			return nil, err
		}
		if len(t.rows) > 0 {
			work, signal = t, s
			break
		}
	}
	if work == nil {
		return nil, nil
	}
	rows := work.byEntity()
	var out []*candidate
	need := int(idleFor / an.v.step)
	for _, n := range an.v.topo.Nodes {
		for _, g := range n.GPUs {
			r := rows[gpuKey(n.Name, g.Index)]
			if r == nil || len(g.Pods) == 0 {
				continue
			}
			p := g.Pods[0]
			if an.inTrainingJob(p.Namespace, p.Pod) {
				continue
			}
			run := 0
			for i := an.v.n - 1; i >= 0 && !math.IsNaN(r.v[i]) && r.v[i] < 0.01; i-- {
				run++
			}
			// run readings span run-1 steps: the GPU fell idle after the
			// reading before them, no one knows how long before the first.
			bound := max(need, 2*longestIdleGap(r.v[:an.v.n-run]))
			if run-1 < bound {
				continue
			}
			c := an.podCandidate(KindGPUIdle, p.Namespace, p.Pod)
			c.onset = an.v.time(an.v.n - run)
			dur := time.Duration(run-1) * an.v.step
			from := time.Duration(bound) * an.v.step
			c.strength = 0.6 + 0.3*math.Min(1, float64(dur-from)/float64(idleFull-idleFor))
			c.headline = fmt.Sprintf("%s/%s holds GPU %s of %s idle", p.Namespace, p.Pod, g.Index, n.Name)
			c.action = fmt.Sprintf("ask the owner of %s/%s to release the GPU (scale it to zero or stop the kernel); consider an idle-GPU reaper", p.Namespace, p.Pod)
			c.evidence = append(c.evidence, Evidence{Signal: work.metric, Query: an.v.query(signal, gpuMatchers(an.v, n.Name, g.Index)),
				Summary: fmt.Sprintf("no GPU work for %s (median %.3f) while %s/%s holds it", dur, detect.Median(r.v[an.v.n-run:]), p.Namespace, p.Pod)})
			out = append(out, c)
		}
	}
	return out, nil
}
