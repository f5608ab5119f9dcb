package sim

import (
	"math"
	"time"
)

// cpuModes are node-exporter's CPU modes, in its order.
var cpuModes = [...]string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}

// Host constants.
const (
	memTotal      = 2 << 40      // bytes of host memory
	ibRate        = 50e9         // bytes/s of one 400 Gb/s NDR port
	ibTrainPerHCA = 2.6e9        // bytes/s one HCA moves for a healthy training step
	fsSize        = 3.84e12 * .9 // bytes of the root file system
)

// hostState is what node-exporter reads on a node: counters since boot and
// gauges.
type hostState struct {
	cpu                                [][len(cpuModes)]float64
	memAvail, load1                    float64
	psiCPU, psiMemSome, psiMemFull     float64
	psiIOSome, psiIOFull               float64
	netRx, netTx, netRxErr, netTxErr   float64
	netRxDrop, netTxDrop               float64
	ibRx, ibTx, ibDowned, ibSymbol     []float64
	ibRcvErr, ibXmitWait               []float64
	diskRead, diskWritten, diskIO      float64
	fsAvail                            float64
	baseUser, baseSystem, baseMemUsed  float64
	baseNetRx, baseNetTx, baseDiskRead float64
	ibActive                           float64 // share of ibTrainPerHCA in use
	uptimeAtStart                      float64
}

// newHostState starts a node's counters as if it had run since its boot.
func newHostState(cfg Config, n *node, r *rng) hostState {
	h := hostState{
		cpu:  make([][len(cpuModes)]float64, cfg.NodeCPUs),
		ibRx: make([]float64, n.hcas), ibTx: make([]float64, n.hcas), ibDowned: make([]float64, n.hcas),
		ibSymbol: make([]float64, n.hcas), ibRcvErr: make([]float64, n.hcas), ibXmitWait: make([]float64, n.hcas),
		fsAvail: fsSize * (0.4 + 0.3*r.Float64()),
	}
	h.uptimeAtStart = cfg.Start.Sub(n.boot).Seconds()
	h.setRole(n.idx < cfg.TrainingNodes)
	h.fill(h.uptimeAtStart, r)
	return h
}

// setRole sets the healthy load of a training or a serving node.
func (h *hostState) setRole(training bool) {
	if training {
		h.baseUser, h.baseSystem, h.baseMemUsed = 0.30, 0.06, 0.45
		h.baseNetRx, h.baseNetTx, h.baseDiskRead, h.ibActive = 2.2e8, 3e7, 6e7, 1
		return
	}
	h.baseUser, h.baseSystem, h.baseMemUsed = 0.12, 0.03, 0.25
	h.baseNetRx, h.baseNetTx, h.baseDiskRead, h.ibActive = 4e7, 5e7, 1e6, 0.0004
}

// fill sets every counter to what secs seconds of healthy running give.
func (h *hostState) fill(secs float64, r *rng) {
	for c := range h.cpu {
		fr := h.modeShares(0, r)
		for m := range cpuModes {
			h.cpu[c][m] = math.Round(secs*fr[m]*100) / 100
		}
	}
	h.psiCPU, h.psiMemSome, h.psiMemFull = secs*0.004, secs*0.0002, 0
	h.psiIOSome, h.psiIOFull = secs*0.003, secs*0.001
	h.netRx, h.netTx = secs*h.baseNetRx*0.7, secs*h.baseNetTx*0.7
	h.netRxErr, h.netTxErr, h.netRxDrop, h.netTxDrop = 0, 0, math.Floor(secs/8000), 0
	for i := range h.ibRx {
		h.ibRx[i] = secs * ibTrainPerHCA * h.ibActive * 0.6
		h.ibTx[i] = h.ibRx[i] * (1 + 0.001*r.Float64())
		h.ibDowned[i], h.ibSymbol[i], h.ibRcvErr[i] = 0, math.Floor(r.Float64()*3), 0
		h.ibXmitWait[i] = secs * 1e3
	}
	h.diskRead, h.diskWritten, h.diskIO = secs*h.baseDiskRead*0.5, secs*2e7, secs*0.04
}

// modeShares are one CPU's mode shares this tick, extra busy added.
func (h *hostState) modeShares(extra float64, r *rng) [len(cpuModes)]float64 {
	var fr [len(cpuModes)]float64
	fr[1] = clamp(0.01+gauss(r, 0.003), 0, 1)        // iowait
	fr[2] = 0.002                                    // irq
	fr[4] = clamp(0.01+gauss(r, 0.002), 0, 1)        // softirq
	fr[6] = clamp(h.baseSystem+gauss(r, 0.01), 0, 1) // system
	fr[7] = clamp(h.baseUser+gauss(r, 0.04), 0, 1)   // user
	busy := fr[1] + fr[2] + fr[4] + fr[6] + fr[7]
	fr[7] += extra * math.Max(0, 1-busy)
	fr[0] = math.Max(0, 1-busy-extra*math.Max(0, 1-busy)) // idle
	return fr
}

// step advances a node's host counters by dt seconds; stepShare is the
// training job's step rate relative to healthy (0 when stalled), and
// checkpoint says the job writes a checkpoint.
func (n *node) stepHost(dt, stepShare float64, checkpoint bool) {
	h, c, r := &n.host, &n.cond, n.rng
	var idle float64
	for i := range h.cpu {
		fr := h.modeShares(c.cpuBusy, r)
		for m := range cpuModes {
			h.cpu[i][m] += math.Round(dt*fr[m]*100) / 100
		}
		idle += fr[0]
	}
	busy := 1 - idle/float64(len(h.cpu))
	h.load1 += (busy*float64(len(h.cpu))*1.1 - h.load1) * (1 - math.Exp(-dt/60))
	used := clamp(h.baseMemUsed+gauss(r, 0.004)+c.memUsed, 0, 0.995)
	h.memAvail = math.Round(memTotal * (1 - used))
	h.psiCPU += dt * clamp(0.004+0.6*c.cpuBusy*c.cpuBusy+gauss(r, 0.001), 0, 1)
	memStall := clamp((used-0.9)*4, 0, 0.8)
	h.psiMemSome += dt * clamp(0.0002+memStall, 0, 1)
	h.psiMemFull += dt * memStall * 0.5
	h.psiIOSome += dt * clamp(0.003+c.ioWait+gauss(r, 0.0005), 0, 1)
	h.psiIOFull += dt * clamp(0.001+c.ioWait*0.6, 0, 1)
	tx := h.baseNetTx
	if checkpoint {
		tx += 1.8e9
	}
	h.netRx += math.Round(dt * h.baseNetRx * (0.6 + 0.4*stepShare) * c.netRx * (1 + gauss(r, 0.05)))
	h.netTx += math.Round(dt * tx * (1 + gauss(r, 0.05)))
	// Every node moves the same bytes per step (ring all-reduce); a port
	// that is down moves none and the node's other ports carry its share.
	spread := 1.0
	if c.ibDownPort > 0 {
		spread = float64(len(h.ibRx)) / float64(len(h.ibRx)-1)
	}
	for i := range h.ibRx {
		down := c.ibDownPort == i+1
		if down {
			h.ibSymbol[i] += float64(poisson(r, c.ibErrors*dt))
			continue
		}
		v := math.Round(dt * ibTrainPerHCA * h.ibActive * stepShare * spread * (1 + gauss(r, 0.03)))
		h.ibRx[i] += math.Max(0, v)
		h.ibTx[i] += math.Max(0, v*(1+gauss(r, 0.002)))
		h.ibXmitWait[i] += math.Round(dt * 1e3 * (1 + 30*(1-c.ib)) * (1 + gauss(r, 0.1)))
		if c.ibDownPort == 0 && i == 0 {
			h.ibSymbol[i] += float64(poisson(r, c.ibErrors*dt))
		}
	}
	h.diskRead += math.Round(dt * h.baseDiskRead * (1 + gauss(r, 0.1)))
	h.diskIO += dt * clamp(0.04+c.ioWait+gauss(r, 0.005), 0, 1)
	w := 2e7
	if checkpoint {
		w += 1.5e9
		h.diskIO += dt * 0.5
	}
	h.diskWritten += math.Round(dt * w)
}

// reboot restarts a node's counters from zero, as a rebooted kernel and a
// reloaded GPU driver do; the GPUs' sticky XIDs clear too.
func (n *node) reboot(at time.Time) {
	n.boot = at
	n.host.fill(0, n.rng)
	for _, g := range n.gpus {
		g.st.energy, g.st.pcieReplays, g.st.sbe, g.st.dbe = 0, 0, 0, 0
		g.st.powerViol, g.st.thermalViol, g.st.xid = 0, 0, 0
		g.st.nvlinkErrs = [4]float64{}
	}
}
