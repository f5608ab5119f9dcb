package sim

import (
	"fmt"
	"time"
)

// A rolling update of the vLLM deployment (maxSurge 1, maxUnavailable 0):
// each new pod loads its model for rolloutLoad plus up to
// rolloutLoadSpread before it is ready, and the next one is created as the
// old pod it replaces terminates.
const (
	rolloutLoad       = 60 * time.Second
	rolloutLoadSpread = 40 * time.Second
)

// rolloutVersion is the version a bad rollout brings: the next patch
// release of what the deployment runs.
func rolloutVersion(l Labels) string {
	if l.VLLM == VLLMOld {
		return "v0.9.3"
	}
	return "v0.11.1"
}

// rolloutStep is one replica's replacement, its times since the onset.
type rolloutStep struct {
	name, uid      string
	created, ready time.Duration
}

// rolloutPlan is a bad rollout of the vLLM deployment: the new ReplicaSet
// and the replicas' replacements in order.
type rolloutPlan struct {
	rs, version string
	steps       []rolloutStep
}

// planRollout draws the rollout of c's deployment from its own stream, so
// that the metrics and the request path share it and no other run's draws
// move.
func planRollout(cfg Config, c *cluster) rolloutPlan {
	r := newRand(cfg, "rollout", c.serve.name)
	p := rolloutPlan{rs: c.serve.name + "-" + podSuffix(r, 10), version: rolloutVersion(cfg.Labels)}
	at := time.Duration(0)
	for range c.serve.replicas {
		load := rolloutLoad + time.Duration(r.Float64()*float64(rolloutLoadSpread))
		load = max(load.Round(cfg.ScrapeInterval), cfg.ScrapeInterval)
		st := rolloutStep{name: p.rs + "-" + podSuffix(r, 5), uid: uuid(r), created: at, ready: at + load}
		p.steps = append(p.steps, st)
		at = st.ready
	}
	return p
}

// rolloutEffect is how much worse the new version serves.
type rolloutEffect struct {
	ttft, itl, aborts float64
}

// rolloutEffectOf is the effect of a bad rollout of variant at the run's
// fault scale: time to first token 2.2 times the old version's, inter-token
// latency 1.4 times, 8% more requests aborted; subtle: time to first token
// 15% longer, inter-token latency 5%, no more aborts.
func rolloutEffectOf(cfg Config, variant string) rolloutEffect {
	b := &faultBuilder{w: &world{cfg: cfg}}
	if variant == Subtle {
		return rolloutEffect{ttft: b.toward(1, 1.15, 1.05, 1.3), itl: b.toward(1, 1.05, 1, 1.1)}
	}
	return rolloutEffect{ttft: b.toward(1, 2.2, 1.5, 5), itl: b.toward(1, 1.4, 1.15, 3), aborts: b.toward(0, 0.08, 0.03, 0.5)}
}

// buildBadRollout rolls a bad version of the vLLM deployment out: the
// Deployment's generation goes up by one, a new ReplicaSet replaces the
// replicas one at a time (each new pod, on its predecessor's GPUs, loads
// its model before the old one terminates), and the replicas of the new
// version answer slower and abort more requests. The request path shows
// the same rollout (RequestPath).
func buildBadRollout(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	w, s := b.w, b.w.c.serve
	plan := planRollout(w.cfg, w.c)
	eff := rolloutEffectOf(w.cfg, spec.Variant)
	f := &activeFault{truth: Fault{
		Entity:   map[string]string{"namespace": InferenceNamespace, "workload": s.name},
		Severity: round(1-1/eff.ttft, 4),
		Summary: fmt.Sprintf("%s rolls out %s (ReplicaSet %s): its replicas take %s as long to the first token and abort %.0f%% more requests",
			s.name, plan.version, plan.rs, fmtFactor(eff.ttft), 100*eff.aborts),
	}}
	s.rollout, s.specGeneration = &plan, s.generation
	olds := make([]*pod, len(s.replicas))
	news := make([]*pod, len(s.replicas))
	for i, r := range s.replicas {
		olds[i] = r.pod
	}
	var onset time.Time
	begin := once(func() { s.specGeneration++ })
	f.apply = func(w *world, since time.Duration) {
		t := w.at(w.k)
		onset = t.Add(-since)
		begin()
		if since >= w.cfg.ScrapeInterval {
			s.generation = s.specGeneration
		}
		for i, st := range plan.steps {
			r, old := s.replicas[i], olds[i]
			if news[i] == nil && since >= st.created {
				news[i] = w.c.startRolloutPod(old, st, onset.Add(st.created), i, plan)
			}
			np := news[i]
			if np != nil && np.rep == nil && since >= st.ready {
				w.c.replacePod(old, np)
				np.rep, r.pod = r, np
				old.rep = nil
				r.restart()
			}
			if np != nil && np.rep != nil {
				r.ttftMul, r.itlMul, r.abortExtra = eff.ttft, eff.itl, eff.aborts
			}
		}
	}
	return f, nil
}

// startRolloutPod creates the new pod of a rollout step next to old: it
// runs and loads its model, not ready, while old still serves on the GPUs.
func (c *cluster) startRolloutPod(old *pod, st rolloutStep, at time.Time, i int, plan rolloutPlan) *pod {
	p := *old
	p.name, p.uid, p.ownerName, p.image = st.name, st.uid, plan.rs, "docker.io/vllm/vllm-openai:"+plan.version
	p.created, p.rep, p.memLeak = at, nil, 0
	p.ip = fmt.Sprintf("10.244.%d.%d", old.node.idx, 200+i)
	p.st = podState{phase: "Running", started: at}
	old.node.pods = append(old.node.pods, &p)
	c.pods = append(c.pods, &p)
	return &p
}

// replacePod hands old's GPUs to np, which is ready, and terminates old:
// its series vanish.
func (c *cluster) replacePod(old, np *pod) {
	for _, g := range old.gpus {
		g.pod = np
	}
	np.st.ready = true
	drop := func(ps []*pod) []*pod {
		out := ps[:0]
		for _, p := range ps {
			if p != old {
				out = append(out, p)
			}
		}
		return out
	}
	old.node.pods = drop(old.node.pods)
	c.pods = drop(c.pods)
}
