package sim

import (
	"fmt"
	"time"
)

// crashLoad is how long a crash-looping vLLM server runs before it crashes
// again (it never finishes loading its model).
const crashLoad = 25 * time.Second

// crashBackoff is the kubelet's restart back-off after the n-th crash.
func crashBackoff(n int) time.Duration {
	return min(10*time.Second<<n, 5*time.Minute)
}

// buildCrashLoop makes one vLLM replica crash on start over and over: the
// kubelet restarts it with a growing back-off (CrashLoopBackOff), it never
// serves (up 0, its metrics gone), its restarts climb and its peers take its
// traffic. Subtle: it crashes every six minutes while serving and is back
// within 40 seconds.
func buildCrashLoop(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	r, err := b.replica(spec)
	if err != nil {
		return nil, err
	}
	p := r.pod
	f := &activeFault{truth: Fault{Entity: podEntity(p), Severity: 1,
		Summary: fmt.Sprintf("%s crashes on start over and over (CrashLoopBackOff) and serves nothing", p.name)}}
	every, down := time.Duration(0), time.Duration(0)
	if spec.Variant == Subtle {
		every, down = 6*time.Minute, b.span(40*time.Second, 2*b.w.cfg.ScrapeInterval)
		f.truth.Severity = 0.1
		f.truth.Summary = fmt.Sprintf("%s crashes every %s and is back within %s", p.name, every, down)
	}
	var next time.Time
	waiting, crashes := false, 0
	crash := func(t time.Time) {
		p.st.restarts++
		p.st.lastReason, p.st.lastTerminated = "Error", t
		r.restart()
		crashes++
	}
	f.apply = func(w *world, since time.Duration) {
		t := w.at(w.k)
		if spec.Variant == Subtle {
			if since%every == 0 {
				crash(t)
			}
			p.st.ready = since%every >= down
			return
		}
		switch {
		case next.IsZero():
			crash(t)
			waiting, next = true, t.Add(crashBackoff(0))
		case !t.Before(next) && waiting:
			waiting, next = false, t.Add(crashLoad)
		case !t.Before(next):
			crash(t)
			waiting, next = true, t.Add(crashBackoff(crashes-1))
		}
		p.st.ready, p.st.waitingReason = false, ""
		if waiting {
			p.st.waitingReason = "CrashLoopBackOff"
		}
	}
	return f, nil
}

// evictReload is how long an evicted replica's replacement takes to be
// scheduled (evictPending) and to load its model.
const (
	evictPending = 20 * time.Second
	evictReload  = 100 * time.Second
)

// buildEvicted has the kubelet evict one vLLM replica under disk pressure:
// the pod turns Failed with reason Evicted (and stays listed), its
// ReplicaSet creates a replacement with a new name on the same GPUs, which
// serves again once it has loaded its model; its peers take the traffic
// meanwhile. Subtle: the replacement serves within 30 seconds and no
// DiskPressure shows.
func buildEvicted(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	r, err := b.replica(spec)
	if err != nil {
		return nil, err
	}
	old, c := r.pod, b.w.c
	repl := *old
	repl.name = c.serve.rs + "-" + podSuffix(b.r, 5)
	repl.uid = uuid(b.r)
	pending, reload, pressure := evictPending, evictReload, 2*time.Minute
	f := &activeFault{truth: Fault{Entity: podEntity(old), Severity: 0.5,
		Summary: fmt.Sprintf("%s is evicted under disk pressure; its replacement %s serves after it loads its model", old.name, repl.name)}}
	if spec.Variant == Subtle {
		pending, reload, pressure = 10*time.Second, 20*time.Second, 0
		f.truth.Severity = 0.1
	}
	reload = b.span(reload, b.w.cfg.ScrapeInterval)
	if spec.Variant == Subtle {
		f.truth.Summary = fmt.Sprintf("%s is evicted; its replacement %s serves within %s", old.name, repl.name, pending+reload)
	}
	var at time.Time
	evict := once(func() {
		old.st.phase, old.st.reason, old.st.ready = "Failed", "Evicted", false
		old.rep = nil
		repl.created, repl.st = at, podState{}
		c.addPod(&repl, old.node, old.gpus)
		repl.rep, r.pod = r, &repl
		r.restart()
	})
	f.apply = func(w *world, since time.Duration) {
		at = w.at(w.k)
		evict()
		if since < pressure {
			old.node.cond.diskPressure = true
		}
		repl.st.phase, repl.st.ready = "Running", since >= pending+reload
		if since < pending {
			repl.st.phase = "Pending"
		}
	}
	return f, nil
}
