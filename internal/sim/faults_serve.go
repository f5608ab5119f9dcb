package sim

import (
	"fmt"
	"slices"
	"time"
)

// buildCapacity floods the vLLM deployment: over three minutes the offered
// load climbs to 1.5 times what the replicas complete, queues grow and time
// to first token climbs. Subtle: it climbs to 55% of capacity: no queue,
// time to first token a few tens of percent up.
func buildCapacity(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	s, cfg := b.w.c.serve, b.w.cfg
	to := 1.5
	if spec.Variant == Subtle {
		to = 0.55
		// From the load of the quietest hour (about 0.3 of capacity).
		to = b.toward(0.3, to, 0.32, 0.95)
	} else {
		// Past capacity whatever the scale.
		to = b.toward(1, to, 1.12, 3)
	}
	f := &activeFault{truth: Fault{
		Entity:   map[string]string{"namespace": InferenceNamespace, "workload": s.name},
		Severity: clamp(to-0.5, 0, 1),
		Summary:  fmt.Sprintf("requests to %s climb to %.0f%% of what its replicas serve", s.name, 100*to),
	}}
	capacity := replicaCapacity * float64(len(s.replicas))
	f.apply = func(w *world, since time.Duration) {
		base := cfg.PeakRequestRate * diurnal(w.at(w.k))
		mul := to * capacity / base
		s.trafficMul *= 1 + (mul-1)*ramp(since, 3*time.Minute)
	}
	return f, nil
}

// kvNoise is the spread of the replicas' KV-cache usage.
const kvNoise = 0.03

// buildKVCache fills one replica's KV cache with long contexts: it preempts,
// completes fewer requests and its queue grows. Subtle: its cache sits two
// spreads above its peers'.
func buildKVCache(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	r, err := b.replica(spec)
	if err != nil {
		return nil, err
	}
	// Past where vLLM preempts whatever the scale.
	extra := b.toward(0.9, 0.985, 0.93, 1)
	f := &activeFault{truth: Fault{Entity: podEntity(r.pod), Severity: round(b.size(0.7), 4),
		Summary: fmt.Sprintf("long contexts fill the KV cache of %s: it preempts and its queue grows", r.pod.name)}}
	if spec.Variant == Subtle {
		extra = b.size(subtleShift * kvNoise)
		f.truth.Severity = extra
		f.truth.Summary = fmt.Sprintf("long contexts hold %.0f%% more of the KV cache of %s", 100*extra, r.pod.name)
	}
	f.apply = func(_ *world, since time.Duration) {
		r.kvExtra = max(r.kvExtra, extra*ramp(since, 5*time.Minute))
	}
	return f, nil
}

// buildGPUIdle leaves the research notebook's GPU idle while the notebook
// holds it. Subtle: a polling loop keeps GPU_UTIL at a few percent while
// nothing is computed.
func buildGPUIdle(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	p := b.w.c.notebook
	f := &activeFault{truth: Fault{Entity: podEntity(p), Severity: 1,
		Summary: fmt.Sprintf("%s/%s holds a GPU and leaves it idle", p.namespace, p.name)}}
	poll := spec.Variant == Subtle
	if poll {
		f.truth.Severity = 0.95
		f.truth.Summary = fmt.Sprintf("%s/%s holds a GPU that only polls: a few percent GPU_UTIL, no tensor work", p.namespace, p.name)
	}
	f.apply = func(w *world, _ time.Duration) {
		w.notebook.idle, w.notebook.poll = true, poll
	}
	return f, nil
}

// oomReloadFor is how long a restarted vLLM server takes to load its model
// before it answers again.
const oomReloadFor = 100 * time.Second

// oomClimb is how long a leaking container's working set takes to climb
// to its memory limit before the kernel kills it.
const oomClimb = 3 * time.Minute

// buildOOMKilled has the kernel kill one vLLM replica for memory: its
// container restarts (kube-state-metrics: restarts + 1, last terminated
// reason OOMKilled, now), its server is gone while it reloads the model (up
// 0, its series vanish), its counters restart from zero and its peers take
// its traffic. Subtle: the server is back in 20 seconds.
func buildOOMKilled(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	r, err := b.replica(spec)
	if err != nil {
		return nil, err
	}
	reload := b.span(oomReloadFor, 2*b.w.cfg.ScrapeInterval)
	f := &activeFault{truth: Fault{Entity: podEntity(r.pod), Severity: 0.6,
		Summary: fmt.Sprintf("%s is OOMKilled and restarts; it serves nothing while it reloads its model", r.pod.name)}}
	if spec.Variant == Subtle {
		reload = b.span(20*time.Second, b.w.cfg.ScrapeInterval)
		f.truth.Severity = 0.1
		f.truth.Summary = fmt.Sprintf("%s is OOMKilled and is back within %s", r.pod.name, reload)
	}
	var at time.Time
	kill := once(func() {
		r.pod.st.oomKills++
		r.pod.st.restarts++
		r.pod.st.lastReason, r.pod.st.lastTerminated = "OOMKilled", at
		r.restart()
	})
	f.apply = func(w *world, since time.Duration) {
		at = w.at(w.k)
		kill()
		r.pod.st.ready = since >= reload
	}
	// The working set climbs to the limit over the minutes before the kill.
	f.before = func(w *world, until time.Duration) {
		if until < oomClimb {
			r.pod.memLeak = ramp(oomClimb-until, oomClimb-w.cfg.ScrapeInterval)
		}
	}
	return f, nil
}

// replica picks a vLLM replica: one on the pinned node, or on a node no
// other fault uses.
func (b *faultBuilder) replica(spec FaultSpec) (*replica, error) {
	reps := b.w.c.serve.replicas
	var nodes []*node
	for _, r := range reps {
		if !slices.Contains(nodes, r.pod.node) {
			nodes = append(nodes, r.pod.node)
		}
	}
	n, err := b.node(spec, nodes)
	if err != nil {
		return nil, err
	}
	var on []*replica
	for _, r := range reps {
		if r.pod.node == n {
			on = append(on, r)
		}
	}
	return on[b.r.IntN(len(on))], nil
}

// buildDrift shifts what users ask the served model (a new use case): over
// ten minutes prompts grow 2.5 times and answers shorten, time to first
// token and KV-cache use grow with the prompts, and the evaluator's accuracy
// falls by 12 points. Subtle: prompts 15% longer and accuracy two spreads
// lower.
func buildDrift(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	s := b.w.c.serve
	prompt, gen, drop := 2.5, 0.6, 0.12
	f := &activeFault{truth: Fault{Entity: map[string]string{"namespace": InferenceNamespace, "model": s.model}, Severity: drop / healthyAccuracy,
		Summary: fmt.Sprintf("the traffic to %s drifts: prompts 2.5 times longer, answers shorter, accuracy down %.0f points", s.model, 100*drop)}}
	if spec.Variant == Subtle {
		prompt, gen, drop = 1.15, 1, subtleShift*accuracyNoise
		f.truth.Severity = drop / healthyAccuracy
		f.truth.Summary = fmt.Sprintf("the traffic to %s drifts a little: prompts 15%% longer, accuracy down %.1f points", s.model, 100*drop)
	}
	prompt, gen, drop = b.toward(1, prompt, 1.01, 5), b.toward(1, gen, 0.2, 1), b.size(drop)
	f.truth.Severity = round(drop/healthyAccuracy, 4)
	f.truth.Summary = fmt.Sprintf("the traffic to %s drifts: prompts %.0f%% longer, answers %.0f%% shorter, accuracy down %.1f points",
		s.model, 100*(prompt-1), 100*(1-gen), 100*drop)
	f.apply = func(_ *world, since time.Duration) {
		k := ramp(since, 10*time.Minute)
		for _, r := range s.replicas {
			r.promptMul *= 1 + (prompt-1)*k
			r.genMul *= 1 + (gen-1)*k
		}
		s.accuracyDrop += drop * k
	}
	return f, nil
}
