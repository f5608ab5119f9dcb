package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// Relative per-sample noise of the readings the subtle variants hide in.
const (
	nvlinkNoise = 0.03 // NVLink bandwidth, relative
	stepNoise   = 0.02 // a rank's compute time and tensor activity, relative
)

// subtleShift is a subtle variant's effect, in healthy spreads.
const subtleShift = 2.0

// buildNVLink degrades NVLink on a training node. Default: GPU N's links
// fail with XID 74 and the node's NVLink traffic collapses (NCCL's
// intra-node rings all cross it); node: the NVSwitch fabric fails, XID 74 on
// every GPU; no_xid: as default without the XID; subtle: one GPU's links
// run two spreads slow.
func buildNVLink(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	g, err := b.trainingGPU(spec)
	if err != nil {
		return nil, err
	}
	n := g.node
	f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 0.99}}
	factor, others, xids := 0.01, 0.03, []*gpu{g}
	switch spec.Variant {
	case "":
		f.truth.Summary = fmt.Sprintf("NVLink on %s GPU %d fails (XID 74); the node's NVLink traffic collapses and the job stalls", n.name, g.idx)
	case "node":
		f.truth.Entity, others, xids = nodeEntity(n), factor, n.gpus
		f.truth.Summary = fmt.Sprintf("the NVLink fabric of %s fails (XID 74 on every GPU); the job stalls", n.name)
	case "no_xid":
		xids = nil
		f.truth.Summary = fmt.Sprintf("NVLink on %s GPU %d degrades without an XID; the node's NVLink traffic collapses", n.name, g.idx)
	case Subtle:
		factor, others, xids = 1-subtleShift*nvlinkNoise, 1, nil
	}
	setXID := once(func() {
		for _, x := range xids {
			x.raiseXID(74)
		}
	})
	factor, others = b.toward(1, factor, 0.002, 1), b.toward(1, others, 0.002, 1)
	f.truth.Severity = round(1-factor, 4)
	if spec.Variant == Subtle {
		f.truth.Summary = fmt.Sprintf("NVLink on %s GPU %d runs %.1f%% slow", n.name, g.idx, 100*(1-factor))
	}
	// The bad links log CRC errors and replay; a failing one retrains
	// (recovery) now and then. The subtle variant trickles.
	errs := [4]float64{b.size(40), b.size(4), b.size(12), b.size(0.02)}
	if spec.Variant == Subtle {
		errs = [4]float64{b.size(0.02), 0, b.size(0.005), 0}
	}
	bad := []*gpu{g}
	if spec.Variant == "node" {
		bad = n.gpus
	}
	f.apply = func(_ *world, since time.Duration) {
		setXID()
		if since > 0 && since%xid74Every == 0 && len(xids) > 0 {
			// The links keep failing: XID 74 again, which the sticky
			// gauge cannot show.
			for _, x := range xids {
				x.raiseXID(74)
			}
		}
		for _, o := range n.gpus {
			o.cond.link = min(o.cond.link, others)
		}
		g.cond.link = min(g.cond.link, factor)
		for _, x := range bad {
			x.cond.nvlinkErrs = errs
		}
	}
	return f, nil
}

// xid74Every is how often a failing NVLink logs XID 74 again.
const xid74Every = 2 * time.Minute

// buildXID makes a training GPU raise a critical XID. Default: XID 119 (GSP
// RPC timeout), the GPU stops and the job hangs; 109: a context-switch
// timeout, same effect; subtle: a GSP timeout the GPU recovers from after
// half a minute.
func buildXID(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	g, err := b.trainingGPU(spec)
	if err != nil {
		return nil, err
	}
	code := 119.0
	if spec.Variant == "109" {
		code = 109
	}
	f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 1,
		Summary: fmt.Sprintf("%s GPU %d raises XID %.0f and stops; the job hangs", g.node.name, g.idx, code)}}
	set := once(func() { g.raiseXID(code) })
	if spec.Variant == Subtle {
		stall := b.span(30*time.Second, b.w.cfg.ScrapeInterval)
		f.truth.Severity = round(0.05*b.w.cfg.FaultScale, 4)
		f.truth.Summary = fmt.Sprintf("%s GPU %d raises XID 119 and stalls for %s", g.node.name, g.idx, stall)
		f.apply = func(_ *world, since time.Duration) {
			set()
			if since < stall {
				g.cond.speed = min(g.cond.speed, 0.3)
			}
		}
		return f, nil
	}
	f.apply = func(*world, time.Duration) {
		set()
		g.cond.dead = true
	}
	return f, nil
}

// buildGPULost makes a GPU fall off the bus: XID 79, then the exporter no
// longer sees it and the node's allocatable GPUs drop. Default: a training
// GPU (the job hangs); subtle: a GPU no pod uses.
func buildGPULost(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	var g *gpu
	var err error
	if spec.Variant == Subtle {
		var cands []*node
		for _, n := range b.w.c.nodes {
			for _, x := range n.gpus {
				if x.pod == nil && !slices.Contains(cands, n) {
					cands = append(cands, n)
				}
			}
		}
		n, nerr := b.node(spec, cands)
		if nerr != nil {
			return nil, nerr
		}
		g, err = b.gpuOf(spec, n, func(x *gpu) bool { return x.pod == nil })
	} else {
		g, err = b.trainingGPU(spec)
	}
	if err != nil {
		return nil, err
	}
	f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 1,
		Summary: fmt.Sprintf("%s GPU %d falls off the bus (XID 79) and disappears", g.node.name, g.idx)}}
	if g.pod == nil {
		f.truth.Severity = 0.1
		f.truth.Summary += "; no pod used it"
	}
	set := once(func() { g.raiseXID(79) })
	gone := b.w.cfg.DCGMInterval
	f.apply = func(_ *world, since time.Duration) {
		set()
		g.cond.dead = true
		if since >= gone {
			g.cond.lost = true
		}
	}
	return f, nil
}

// healthyTemp is the temperature a busy training GPU settles at.
func healthyTemp(g *gpu, spec GPUSpec) float64 {
	power := (spec.IdlePower + (0.9*spec.TDP-spec.IdlePower)*1.0) * g.powerScale
	return g.node.ambient + 6 + 0.062*power + g.tempOffset
}

// buildThermal overheats a training GPU (a failed fan): its temperature
// climbs past the slowdown temperature over four minutes and the GPU
// throttles, slowing the whole job. Subtle: it settles just under the
// slowdown temperature and clips its clocks by about 1% (sw_thermal now
// and then): about two of its peers' spreads.
func buildThermal(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	g, err := b.trainingGPU(spec)
	if err != nil {
		return nil, err
	}
	sp := b.w.c.spec
	f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 0.35,
		Summary: fmt.Sprintf("%s GPU %d overheats past %.0f°C and throttles its clocks", g.node.name, g.idx, sp.SlowdownTemp)}}
	if spec.Variant == Subtle {
		// It stays under the slowdown temperature whatever the scale.
		add := (sp.SlowdownTemp - 0.8 - healthyTemp(g, sp)) * min(1, b.w.cfg.FaultScale)
		f.truth.Severity = round(b.size(0.01), 4)
		f.truth.Summary = fmt.Sprintf("%s GPU %d runs at its slowdown temperature and clips its clocks by about 1%%", g.node.name, g.idx)
		f.apply = func(_ *world, since time.Duration) {
			g.cond.tempAdd += add * ramp(since, time.Minute)
			if since >= time.Minute {
				g.cond.clock *= 1 - f.truth.Severity
				if g.rng.Float64() < 0.5 {
					g.cond.reasons |= uint64(catalog.ClockSWThermal)
				}
			}
		}
		return f, nil
	}
	// At least 5°C past the slowdown temperature: an overheating GPU.
	add := max(b.size(32), sp.SlowdownTemp+5-healthyTemp(g, sp))
	f.truth.Severity = round(clamp(0.35*add/32, 0.05, 1), 4)
	f.apply = func(_ *world, since time.Duration) {
		g.cond.tempAdd += add * ramp(since, 4*time.Minute)
	}
	return f, nil
}

// buildPower caps a training GPU's power (a power brake from a failing
// supply): clocks drop and the job slows. node: every GPU of the node;
// subtle: a cap a few percent under its draw.
func buildPower(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	g, err := b.trainingGPU(spec)
	if err != nil {
		return nil, err
	}
	sp := b.w.c.spec
	gpus := []*gpu{g}
	limit, clock, reasons := 0.5*sp.TDP, 0.72, uint64(catalog.ClockHWPowerBrake)
	f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 0.28,
		Summary: fmt.Sprintf("%s GPU %d is held at %.0f W by a power brake and slows the job", g.node.name, g.idx, limit)}}
	switch spec.Variant {
	case "node":
		gpus = g.node.gpus
		f.truth.Entity = nodeEntity(g.node)
		f.truth.Summary = fmt.Sprintf("every GPU of %s is held at %.0f W by a power brake", g.node.name, limit)
	case Subtle:
		// Two spreads of the peers' draw (about 2.4% of it) under the
		// nominal draw of a busy GPU.
		limit = 0.9 * sp.TDP * (1 - subtleShift*0.024)
		clock, reasons = 0.985, 0
		f.truth.Severity = 0.03
		f.truth.Summary = fmt.Sprintf("%s GPU %d is power-capped a few percent under its draw", g.node.name, g.idx)
	}
	// The cap and the clock move from a busy GPU's draw and full clocks.
	limit = b.toward(0.9*sp.TDP, limit, 0.25*sp.TDP, sp.TDP)
	clock = b.toward(1, clock, 0.3, 1)
	f.truth.Severity = round(b.size(f.truth.Severity), 4)
	f.apply = func(*world, time.Duration) {
		for _, x := range gpus {
			x.cond.powerCap, x.cond.clock = limit, x.cond.clock*clock
			x.cond.reasons |= reasons
		}
	}
	return f, nil
}

// buildMemory gives a training GPU memory errors. Default: a double-bit
// ECC error (XID 48) remaps a row and kills the rank; 94: a contained ECC
// error (XID 94); 95: an uncontained one (XID 95); subtle: a rising
// corrected-error rate with repeated correctable row remaps and no crash.
func buildMemory(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	g, err := b.trainingGPU(spec)
	if err != nil {
		return nil, err
	}
	f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 1}}
	if spec.Variant == Subtle {
		f.truth.Severity = 0.05
		f.truth.Summary = fmt.Sprintf("%s GPU %d shows a rising corrected ECC error rate and repeated row remaps", g.node.name, g.idx)
		remaps, rate := 0, b.size(0.03)
		f.apply = func(_ *world, since time.Duration) {
			g.cond.sbeRate = rate
			if want := 1 + int(since/(8*time.Minute)); remaps < want && remaps < 4 {
				remaps++
				g.st.rowsCorr++
			}
		}
		return f, nil
	}
	code := map[string]float64{"": 48, "94": 94, "95": 95}[spec.Variant]
	f.truth.Summary = fmt.Sprintf("%s GPU %d hits an uncorrectable ECC error (XID %.0f) and the rank dies", g.node.name, g.idx, code)
	hit := once(func() {
		g.raiseXID(code)
		g.st.dbe += 2
		g.st.rowsUncorr++
	})
	f.apply = func(*world, time.Duration) {
		hit()
		g.cond.dead = true
	}
	return f, nil
}

// buildPCIe degrades a training GPU's PCIe link: it retrains at half width
// and replays packets; host transfers halve and the rank slows a little.
// Subtle: a steady trickle of replays only.
func buildPCIe(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	g, err := b.trainingGPU(spec)
	if err != nil {
		return nil, err
	}
	sp := b.w.c.spec
	f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 0.5,
		Summary: fmt.Sprintf("the PCIe link of %s GPU %d drops to x%.0f and replays packets", g.node.name, g.idx, sp.PCIeWidth/2)}}
	if spec.Variant == Subtle {
		f.truth.Severity = 0.02
		f.truth.Summary = fmt.Sprintf("the PCIe link of %s GPU %d replays a few packets a minute", g.node.name, g.idx)
		rate := b.size(0.05)
		f.apply = func(*world, time.Duration) { g.cond.pcieReplays = rate }
		return f, nil
	}
	replays, xfer, speed := b.size(3), b.toward(1, 0.5, 0.1, 1), b.toward(1, 0.95, 0.5, 1)
	f.truth.Severity = round(1-xfer, 4)
	f.apply = func(*world, time.Duration) {
		g.cond.pcieWidth, g.cond.pcieReplays, g.cond.pcieSpeed = sp.PCIeWidth/2, replays, xfer
		g.cond.speed = min(g.cond.speed, speed)
	}
	return f, nil
}
