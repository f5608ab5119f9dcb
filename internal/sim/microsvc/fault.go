package microsvc

import (
	"fmt"
	"math"
	"time"
)

// Sizes of the faults. A subtle fault moves its metric by subtleSpreads
// times the faulty service's healthy spread (its robust scale before the
// onset, measured on the healthy run of the same seed).
const (
	hogMin, hogMax     = 1.0, 2.0 // cores a CPU hog adds
	leakMin, leakMax   = 3.0, 6.0 // working set after the leak, × its base
	rampMin, rampMax   = 4.0, 8.0 // minutes the leak takes to reach it
	delayMin, delayMax = 0.2, 0.8 // seconds of injected delay
	failMin, failMax   = 0.2, 0.6 // share of requests an availability fault fails
	subtleSpreads      = 1.8
)

// fault is the run's fault, in steps and service indices. Its methods are
// safe on a nil fault (a healthy run): they add nothing.
type fault struct {
	kind      string
	svc       int
	onset     int
	hogCores  float64
	leakBytes float64
	rampSteps float64
	delayS    float64
	failP     float64
	truth     Fault
}

func (f *fault) active(k, i int, kind string) bool {
	return f != nil && f.kind == kind && i == f.svc && k >= f.onset
}

// hog is the CPU (cores) the fault adds to service i at step k.
func (f *fault) hog(k, i int) float64 {
	if !f.active(k, i, FaultCPU) {
		return 0
	}
	return f.hogCores
}

// leak is the memory (bytes) the fault has leaked in service i by step k.
func (f *fault) leak(k, i int) float64 {
	if !f.active(k, i, FaultMemory) {
		return 0
	}
	return f.leakBytes * math.Min(1, float64(k-f.onset+1)/f.rampSteps)
}

// delay is the delay (seconds) the fault adds to service i's responses.
func (f *fault) delay(k, i int) float64 {
	if !f.active(k, i, FaultLatency) {
		return 0
	}
	return f.delayS
}

// fails is the share of service i's requests the fault fails at step k.
func (f *fault) fails(k, i int) float64 {
	if !f.active(k, i, FaultAvailability) {
		return 0
	}
	return f.failP
}

// newFault checks spec and draws what it leaves open; nil for a healthy
// run. Every draw happens whatever spec pins, so pinning one field does
// not change the others.
func newFault(cfg Config, g *graph, dec decoyPlan, spec FaultSpec) (*fault, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidFault, fmt.Sprintf(format, args...))
	}
	switch spec.Kind {
	case "":
		if spec.Subtle || spec.Service != "" || spec.After != 0 {
			return nil, bad("a healthy run (no kind) takes no subtle, service or onset")
		}
		return nil, nil
	case FaultCPU, FaultMemory, FaultLatency, FaultAvailability:
	default:
		return nil, bad("unknown kind %q (want %q, %q, %q or %q)", spec.Kind, FaultCPU, FaultMemory, FaultLatency, FaultAvailability)
	}
	ticks := int(cfg.Duration / cfg.Step)
	r := newRand(cfg.Seed, "fault")
	uSvc, uOnset, uSize, uRamp := r.Float64(), r.Float64(), r.Float64(), r.Float64()

	// Drawn, the faulty service is neither the entry nor the noisy decoy:
	// the decoy's noise fills its callers' latency too, and a subtle fault
	// on it would be one among equals.
	f := &fault{kind: spec.Kind, svc: 1 + int(uSvc*float64(len(g.app.services)-2))}
	if f.svc >= dec.noisy {
		f.svc++
	}
	if spec.Service != "" {
		i, ok := g.idx[spec.Service]
		if !ok {
			return nil, bad("app %s has no service %q (it has %s)", g.app.name, spec.Service, serviceList(g))
		}
		f.svc = i
	}
	after := spec.After
	switch {
	case after < 0 || after >= cfg.Duration:
		return nil, bad("onset %s is outside [step, duration=%s)", after, cfg.Duration)
	case after == 0:
		after = time.Duration((0.4 + 0.25*uOnset) * float64(cfg.Duration))
	}
	f.onset = int(after / cfg.Step)
	if f.onset < 1 {
		return nil, bad("onset %s is before the second scrape (step %s): nothing would precede it", spec.After, cfg.Step)
	}
	f.onset = min(f.onset, ticks)
	f.rampSteps = math.Max(1, math.Min((rampMin+(rampMax-rampMin)*uRamp)*60/cfg.Step.Seconds(), float64(ticks-f.onset+1)/3))

	d := &g.app.services[f.svc]
	fs := cfg.FaultScale
	if spec.Subtle {
		size := subtleSpreads * healthySpread(cfg, g, dec, f.svc, f.onset, spec.Kind) * fs
		f.hogCores, f.leakBytes, f.delayS, f.failP = size, size, size, math.Min(1, size)
	} else {
		f.hogCores = (hogMin + (hogMax-hogMin)*uSize) * fs
		f.leakBytes = (leakMin - 1 + (leakMax-leakMin)*uSize) * fs * d.memBase
		f.delayS = (delayMin + (delayMax-delayMin)*uSize) * fs
		f.failP = math.Min(1, (failMin+(failMax-failMin)*uSize)*fs)
	}
	f.truth = Fault{
		Kind: KindMetricAnomaly, Variant: spec.Kind, Subtle: spec.Subtle,
		Entity:   map[string]string{"service": d.name},
		Onset:    cfg.Start.Add(time.Duration(f.onset) * cfg.Step),
		Severity: f.severity(d),
		Summary:  f.summary(d, cfg.Step, spec.Subtle),
	}
	return f, nil
}

// healthySpread runs the healthy model up to the onset and returns the
// robust scale of service i's metric of kind.
func healthySpread(cfg Config, g *graph, dec decoyPlan, i, onset int, kind string) float64 {
	w := newWorld(cfg, g, nil, dec)
	xs := make([]float64, 0, onset)
	for w.k < onset && w.step() {
		xs = append(xs, w.svcs[i].metricOf(kind))
	}
	return robustScale(xs)
}

func (f *fault) severity(d *svcDef) float64 {
	var s float64
	switch f.kind {
	case FaultCPU:
		s = f.hogCores / hogMax
	case FaultMemory:
		s = f.leakBytes / ((leakMax - 1) * d.memBase)
	case FaultLatency:
		s = f.delayS / 1
	case FaultAvailability:
		s = f.failP
	}
	return round(math.Max(0.01, math.Min(1, s)), 3)
}

func (f *fault) summary(d *svcDef, step time.Duration, subtle bool) string {
	var s string
	switch f.kind {
	case FaultCPU:
		s = fmt.Sprintf("CPU hog in %s: %.3g more cores (limit %g); its latency and its callers' grow", d.name, f.hogCores, d.cpuLimit)
	case FaultMemory:
		s = fmt.Sprintf("memory leak in %s: working set grows by %.0f MiB over %s (base %.0f MiB)", d.name,
			f.leakBytes/mib, time.Duration(f.rampSteps)*step, d.memBase/mib)
	case FaultLatency:
		s = fmt.Sprintf("%.3g ms delay injected into %s's responses; its callers wait for it", f.delayS*1000, d.name)
	case FaultAvailability:
		s = fmt.Sprintf("%.3g%% of %s's requests fail; its callers' requests that call it fail with them", 100*f.failP, d.name)
	}
	if subtle {
		s = "subtle " + s
	}
	return s
}

func serviceList(g *graph) string {
	out := ""
	for i, s := range g.app.services {
		if i > 0 {
			out += ", "
		}
		out += s.name
	}
	return out
}
