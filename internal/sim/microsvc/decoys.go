package microsvc

import (
	"github.com/vigil-obs/vigil/internal/sim"

	"fmt"
	"time"
)

// Decoy kinds: benign events every run holds, healthy or faulty, so that
// an engine that blames them is caught.
const (
	DecoySpike        = "traffic_spike" // two scrapes of 1.8× load at the entry
	DecoyRestart      = "pod_restart"   // a container restart long before any onset: counters reset
	DecoyNoisyLatency = "noisy_latency" // a service whose latency is naturally high-variance, all run long
)

// The decoys' sizes and times.
const (
	decoySpikeSteps   = 2
	decoySpikeMul     = 1.8
	decoyStartupSteps = 2    // steps of start-up CPU after the restart
	decoyStartupCPU   = 0.3  // start-up CPU, share of the limit
	decoyWarmSteps    = 8    // steps until the restarted working set is back
	decoyColdMem      = 0.55 // restarted working set, share of its base
)

// Decoy is one benign event of a run, reported with the truth so that
// tests and `vigil eval` can check that nobody blames it: internal/sim's,
// with Entity {"service": NAME} and Kind one of the Decoy* constants.
type Decoy = sim.Decoy

// decoyPlan is where and when the decoys happen, in steps and service
// indices.
type decoyPlan struct {
	spikeAt               int
	restartSvc, restartAt int
	noisy                 int
}

// newDecoys draws the decoys from the seed. They do not depend on the
// fault: a healthy and a faulty run of one seed hold the same ones. The
// restart falls between 10% and 30% of the run, the spike between 10% and
// 90%; neither hits the entry's own containers but the spike's load does.
func newDecoys(cfg Config, g *graph) decoyPlan {
	r := newRand(cfg.Seed, "decoys")
	ticks := int(cfg.Duration / cfg.Step)
	n := len(g.app.services)
	between := func(lo, hi float64) int { return max(1, int((lo+(hi-lo)*r.Float64())*float64(ticks))) }
	p := decoyPlan{spikeAt: between(0.1, 0.9)}
	p.restartAt = between(0.1, 0.3)
	p.restartSvc = 1 + r.IntN(n-1)
	p.noisy = 1 + r.IntN(n-2)
	if p.noisy >= p.restartSvc {
		p.noisy++
	}
	return p
}

// list returns the plan as Decoys.
func (p decoyPlan) list(cfg Config, g *graph) []Decoy {
	at := func(k int) time.Time { return cfg.Start.Add(time.Duration(k) * cfg.Step) }
	svc := func(i int) map[string]string { return map[string]string{"service": g.app.services[i].name} }
	entry := g.app.services[0].name
	return []Decoy{
		{Kind: DecoySpike, Entity: svc(0), At: at(p.spikeAt),
			Summary: fmt.Sprintf("%d scrapes of %.1f× load at %s, flowing to its callees", decoySpikeSteps, decoySpikeMul, entry)},
		{Kind: DecoyRestart, Entity: svc(p.restartSvc), At: at(p.restartAt),
			Summary: fmt.Sprintf("%s's container restarts: its counters start over, start-up CPU, working set regrows", g.app.services[p.restartSvc].name)},
		{Kind: DecoyNoisyLatency, Entity: svc(p.noisy), At: cfg.Start,
			Summary: fmt.Sprintf("%s's latency is naturally high-variance, the same all run long", g.app.services[p.noisy].name)},
	}
}
