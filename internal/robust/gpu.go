package robust

import (
	"math"
	"time"
)

// demand is what a GPU's workload asks of it during one tick.
type demand struct {
	// active: a process runs kernels, so the clocks are up.
	active bool
	// util is GPU_UTIL (percent of time a kernel ran, NCCL's spinning
	// kernels included), memCopy MEM_COPY_UTIL (percent).
	util, memCopy float64
	// compute is the fraction of the dynamic power range the work draws
	// at full clock, in [0, 1].
	compute float64
	// nvlink is the NVLink traffic (MiB/s), pcieTx and pcieRx the mean
	// PCIe traffic (KB/s).
	nvlink, pcieTx, pcieRx float64
	// fb is the framebuffer the processes hold (MiB).
	fb float64
}

// gpuState is a GPU's physical state and its counters.
type gpuState struct {
	d                    demand
	power, clock         float64 // W, MHz
	temp, memTemp        float64 // °C
	energy               float64 // mJ since the driver loaded
	replays              float64 // PCIe replays since the driver loaded
	xid                  int     // the last XID (sticky)
	remapCorr, remapUnc  float64
	remapFailure         float64
	fault                gpuFault
	reading              reading // what the last tick reads as
	activeFor, idleFor   time.Duration
	fbJitter, utilJitter float64
}

// gpuFault are the modifiers a fault puts on a GPU's physics.
type gpuFault struct {
	capW       float64 // power cap below the TDP (0: none)
	clockMul   float64 // thermal clock ceiling as a fraction of boost (0: none)
	tempAdd    float64 // °C above what its power makes it
	pcieMul    float64 // PCIe throughput left (0: untouched)
	replayRate float64 // PCIe replays per second
	nvlinkMul  float64 // NVLink traffic left (0: untouched)
	pinned     bool    // power pinned at the cap: almost no noise
}

// reading is one tick's values as the exporter would print them.
type reading struct {
	power, clock, temp, memTemp, util, memCopy float64
	nvlink, pcieTx, pcieRx, fbUsed, fbFree     float64
}

// electrical sets the GPU's power and clock from its demand over dt.
func (g *gpu) electrical(m gpuModel, dt time.Duration) {
	s := &g.st
	d := s.d
	if d.active {
		s.activeFor += dt
		s.idleFor = 0
	} else {
		s.idleFor += dt
		s.activeFor = 0
	}
	dyn := m.tdp - m.idle
	f := 1.0
	if s.fault.clockMul > 0 {
		f = s.fault.clockMul
	}
	// Dynamic power goes with f·V², and the voltage with the clock: f².
	p := m.idle + dyn*d.compute*f*f
	if s.fault.capW > 0 && p > s.fault.capW && d.compute > 0 {
		f = math.Min(f, math.Sqrt(math.Max(0.01, (s.fault.capW-m.idle)/(dyn*d.compute))))
		p = math.Min(p, s.fault.capW)
	}
	// GPU Boost gives back a few bins near the board limit.
	if p > 0.92*m.tdp {
		f *= 1 - 0.5*(p/m.tdp-0.92)
	}
	s.power = p
	switch {
	case d.active || s.idleFor < 10*time.Second:
		bins := math.Round(g.boost*f/m.step) + float64(g.rng.between(-1, 1))
		s.clock = math.Max(m.idleSM, math.Min(g.boost, bins*m.step))
	default:
		s.clock = m.idleSM
	}
	s.energy += p * dt.Seconds() * 1000
	s.replays += s.fault.replayRate * dt.Seconds()
}

// thermal moves the temperatures toward what the power makes them, with
// the GPU's own lag (about a minute).
func (g *gpu) thermal(m gpuModel, inlet float64, dt time.Duration) {
	s := &g.st
	target := inlet + g.offset + m.rth*g.rthMul*s.power + s.fault.tempAdd
	target = math.Min(target, m.slowdown+3)
	if s.temp == 0 {
		s.temp, s.memTemp = target, target+m.hbm
	}
	s.temp = lag(s.temp, target, dt, g.tau)
	s.memTemp = lag(s.memTemp, target+m.hbm, dt, g.tau*3/2)
}

// read draws the tick's readings: the driver's averaging leaves a few
// percent of noise on power, PCIe throughput is a 20 ms window of a bursty
// stream, the temperatures print in whole degrees.
func (g *gpu) read(m gpuModel) {
	s := &g.st
	r := g.rng
	d := s.d
	noise := clamp(r.normal(0, 0.02), -0.05, 0.05)
	if s.fault.pinned && s.fault.capW > 0 && s.power >= s.fault.capW-0.5 {
		noise = clamp(r.normal(0, 0.003), -0.008, 0.008)
	}
	pcieMul, nvMul := 1.0, 1.0
	if s.fault.pcieMul > 0 {
		pcieMul = s.fault.pcieMul
	}
	if s.fault.nvlinkMul > 0 {
		nvMul = s.fault.nvlinkMul
	}
	s.utilJitter = 0.6*s.utilJitter + r.normal(0, 1)
	s.fbJitter = clamp(s.fbJitter+r.normal(0, 12), -120, 120)
	util := d.util
	if util > 0 {
		util = clamp(math.Round(util+s.utilJitter), 0, 100)
	}
	fb := 0.0
	if d.fb > 0 {
		fb = math.Round(d.fb + s.fbJitter)
	}
	burst := func(mean float64) float64 {
		if mean <= 0 {
			return math.Round(r.uniform(0, 40))
		}
		return math.Round(mean * pcieMul * r.lognormal(1, 0.45) / math.Exp(0.45*0.45/2))
	}
	s.reading = reading{
		power: round(s.power*(1+noise), 3), clock: s.clock,
		temp: math.Round(s.temp), memTemp: math.Round(s.memTemp),
		util: util, memCopy: clamp(math.Round(d.memCopy+r.normal(0, 1.5)*b2f(d.memCopy > 0)), 0, 100),
		nvlink: math.Round(math.Max(0, d.nvlink*nvMul*(1+r.normal(0, 0.06)))),
		pcieTx: burst(d.pcieTx), pcieRx: burst(d.pcieRx),
		fbUsed: fb, fbFree: m.fbTotal - m.fbReserved - fb,
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// setXID records an XID: DCGM_FI_DEV_XID_ERRORS keeps the last one.
func (g *gpu) setXID(code int) { g.st.xid = code }
