package sim

import (
	"math"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// activity is what a workload makes a GPU do during a tick, before the
// physics (power, temperature, clocks) and the faults' caps apply.
type activity struct {
	util, tensor, sm, dram float64 // util in percent, the others ratios
	nvlink                 float64 // MiB/s
	pcieTx, pcieRx         float64 // bytes/s
	fbUsed                 float64 // MiB
	busy                   bool    // a workload runs kernels on it
}

// trainingActivity is a training rank's GPU activity.
func (w *world) trainingActivity(g *gpu) activity {
	s, spec := w.c.job.rankOf(g.pod, g), w.c.spec
	fb := spec.FBTotal*0.905 + gauss(g.rng, 120)
	switch {
	case s.stopped:
		return idleActivity(g)
	case s.hung:
		// NCCL kernels spin in the collective: the GPU looks 100% busy
		// while nothing is computed or moved.
		return activity{util: 100 - math.Abs(gauss(g.rng, 0.3)), tensor: 0.001 + math.Abs(gauss(g.rng, 0.0005)),
			sm: 0.06 + gauss(g.rng, 0.004), dram: 0.01, nvlink: math.Abs(gauss(g.rng, 40)),
			fbUsed: fb, busy: true}
	case s.loading:
		return activity{util: clamp(12+gauss(g.rng, 6), 0, 100), tensor: 0.002, sm: 0.03, dram: 0.05,
			pcieRx: 8e9 * (1 + gauss(g.rng, 0.05)), fbUsed: fb * 0.6, busy: true}
	case w.c.job.checkpoint:
		return activity{util: clamp(18+gauss(g.rng, 6), 0, 100), tensor: 0.01 + math.Abs(gauss(g.rng, 0.005)),
			sm: 0.05 + math.Abs(gauss(g.rng, 0.01)), dram: 0.04, nvlink: math.Abs(gauss(g.rng, 300)),
			pcieTx: 6e9 * (1 + gauss(g.rng, 0.05)), pcieRx: 1e8, fbUsed: fb, busy: true}
	}
	comm := 1 - s.busy - s.dataIdle
	linkShare := stepHealthy / w.c.job.cur.t
	return activity{
		util:   clamp(100*(1-s.dataIdle)-math.Abs(gauss(g.rng, 0.6)), 0, 100),
		tensor: clamp(tensorPerBusy*s.busy*(1+gauss(g.rng, 0.02)), 0, 1),
		sm:     clamp((0.9*s.busy+0.5*comm)*(1+gauss(g.rng, 0.015)), 0, 1),
		dram:   clamp((0.45*s.busy+0.05)*(1+gauss(g.rng, 0.02)), 0, 1),
		nvlink: math.Max(0, spec.NVLinkTrain*linkShare*g.cond.link*(1+gauss(g.rng, 0.03))),
		pcieTx: 2.2e8 * (1 + gauss(g.rng, 0.08)) * linkShare,
		pcieRx: 1.4e9 * (1 + gauss(g.rng, 0.08)) * linkShare * g.cond.pcieSpeed,
		fbUsed: fb,
		busy:   true,
	}
}

// idleActivity is a GPU nobody uses.
func idleActivity(g *gpu) activity {
	return activity{fbUsed: 1 + math.Abs(gauss(g.rng, 0.5))}
}

// applyGPU turns a tick's activity into readings and advances the GPU's
// counters by dt seconds.
func (w *world) applyGPU(g *gpu, a activity, dt float64) {
	spec, c, st := w.c.spec, &g.cond, &g.st
	if c.idle && a.busy {
		a = activity{fbUsed: a.fbUsed}
	}
	// Power follows the work: tensor and SM activity dominate; a GPU
	// spinning in NCCL kernels (100% GPU_UTIL, no math) draws little.
	load := clamp(0.12*a.util/100+0.88*(0.6*a.tensor/0.58+0.4*a.sm/0.82), 0, 1.08)
	if !a.busy {
		load = 0
	}
	power := (spec.IdlePower + (0.9*spec.TDP-spec.IdlePower)*load) * g.powerScale * (1 + gauss(g.rng, 0.012))
	power *= c.clock // lower clocks draw less
	if c.powerCap > 0 && power > c.powerCap {
		power = c.powerCap * (1 + gauss(g.rng, 0.004))
		st.powerViol += dt * 1e9
		c.reasons |= uint64(catalog.ClockSWPowerCap)
	}
	power = math.Min(power, spec.TDP*1.02)
	// Temperature follows power with a minute's lag.
	target := g.node.ambient + 6 + 0.062*power + g.tempOffset + c.tempAdd
	if !st.tempInit {
		st.temp, st.tempInit = target, true
	}
	st.temp += (target - st.temp) * (1 - math.Exp(-dt/60))
	clock := spec.IdleSMClock
	if a.busy {
		clock = spec.MaxSMClock*c.clock - 15*math.Floor(math.Abs(gauss(g.rng, 1)))
	} else {
		c.reasons |= uint64(catalog.ClockIdle)
	}
	st.util, st.tensor, st.sm, st.dram = math.Round(a.util), a.tensor, a.sm, a.dram
	st.gr = clamp(a.util/100+gauss(g.rng, 0.003), 0, 1)
	if !a.busy {
		st.gr = 0
	}
	st.memCopy = math.Round(clamp(a.dram*100*0.8, 0, 100))
	st.power, st.smClock, st.nvlink = power, math.Round(clock/15)*15, a.nvlink
	st.memTemp = st.temp + 7 + 0.4*g.tempOffset
	st.pcieTx, st.pcieRx, st.fbUsed = a.pcieTx, a.pcieRx*c.pcieSpeed, math.Round(a.fbUsed)
	st.reasons = c.reasons
	st.energy += power * dt * 1000
	st.pcieReplays += float64(poisson(g.rng, c.pcieReplays*dt))
	st.sbe += float64(poisson(g.rng, c.sbeRate*dt))
	st.dbe += float64(poisson(g.rng, c.dbeRate*dt))
	for i, rate := range c.nvlinkErrs {
		if rate > 0 {
			st.nvlinkErrs[i] += float64(poisson(g.rng, rate*dt))
		}
	}
}

// raiseXID records an XID: the sticky gauge keeps it, dcgm-exporter's
// XID counter counts it and the driver logs it.
func (g *gpu) raiseXID(code float64) {
	g.st.xid = code
	g.st.xids = append(g.st.xids, code)
	if len(g.st.kernelXIDs) < maxKernelXIDs {
		g.st.kernelXIDs = append(g.st.kernelXIDs, code)
	}
}
