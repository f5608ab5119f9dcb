package robust

import (
	"math"
	"strconv"
	"time"
)

// cpuModes are node-exporter's CPU modes, in its order.
var cpuModes = []string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}

// hostState is a node's operating system as node-exporter reads it.
type hostState struct {
	cpuSec               [][8]float64 // seconds per CPU and mode
	cpuMul               []float64    // how busy each CPU is relative to the node
	memUsed, memBase     float64
	memExtra             float64 // a fault's growth
	cached               float64
	load1, load5, load5b float64
	nic                  string
	net                  [2]netCounters // the NIC, lo
	psi                  [5]float64     // cpu some, memory some, memory full, io some, io full (s)
	dropRate             float64
	// load this tick, as fractions of all CPUs and bytes/s on the NIC
	user, system, iowait, rx, tx float64
	blocked                      float64
	evictAt                      float64 // kubelet's hard eviction threshold (bytes available)
}

type netCounters struct{ rxB, txB, rxP, txP, rxDrop, txDrop, rxErr, txErr float64 }

// initHost draws a node's OS state; its boot time fixes the counters'
// starting values.
func (n *node) initHost(role string, start time.Time) {
	r := n.rng
	h := &n.host
	h.cpuSec = make([][8]float64, n.cpus)
	h.cpuMul = make([]float64, n.cpus)
	up := float64(start.Unix()) - n.bootTime
	for i := range h.cpuSec {
		h.cpuMul[i] = r.uniform(0.5, 1.5)
		h.cpuSec[i][0] = up * r.uniform(0.6, 0.8)
		for m := 1; m < 8; m++ {
			h.cpuSec[i][m] = up * r.uniform(0.001, 0.05)
		}
	}
	switch role {
	case "train":
		h.memBase = n.memTotal * r.uniform(0.16, 0.34)
	case "serve":
		h.memBase = n.memTotal * r.uniform(0.08, 0.16)
	default:
		h.memBase = n.memTotal * r.uniform(0.02, 0.05)
	}
	h.memUsed = h.memBase
	h.cached = n.memTotal * r.uniform(0.2, 0.4)
	h.nic = pick(r, []string{"eth0", "ens5", "enp86s0f0np0", "bond0"})
	h.net[0] = netCounters{rxB: up * 2e8 * r.float(), txB: up * 5e7 * r.float(), rxP: up * 1e5, txP: up * 4e4}
	h.net[1] = netCounters{rxB: up * 1e6, txB: up * 1e6, rxP: up * 900, txP: up * 900}
	if r.chance(0.25) {
		// A busy NIC drops a packet now and then: no fault.
		h.dropRate = r.uniform(0.01, 0.2)
	}
	for i := range h.psi {
		h.psi[i] = up * r.uniform(0.0001, 0.003)
	}
	h.evictAt = 100 << 20 // kubelet's default memory.available<100Mi
	if r.chance(0.5) {
		h.evictAt = 0.05 * n.memTotal
	}
}

// stepHost advances a node's OS counters by dt under this tick's load.
func (n *node) stepHost(dt time.Duration) {
	h, r, sec := &n.host, n.rng, dt.Seconds()
	target := h.memBase + h.memExtra + n.memTotal*0.004*r.normal(0, 1)
	h.memUsed = lag(h.memUsed, math.Min(target, n.memTotal*0.999), dt, 90*time.Second)
	avail := n.memTotal - h.memUsed
	// Memory pressure: reclaim stalls tasks once little is left.
	memPSI := clamp((0.08-avail/n.memTotal)/0.08, 0, 1) * 0.6
	ioPSI := clamp(h.iowait*4, 0, 0.8)
	cpuPSI := clamp((h.user+h.system-0.7)*2, 0, 0.9) + 0.002
	if memPSI > 0 {
		h.system += 0.05 * memPSI
		h.iowait += 0.04 * memPSI
		h.blocked += 6 * memPSI
	}
	for i := range h.cpuSec {
		m := h.cpuMul[i]
		user := clamp(h.user*m*(1+r.normal(0, 0.05)), 0, 0.97)
		sys := clamp(h.system*m, 0, 0.97-user)
		io := clamp(h.iowait*m, 0, 0.97-user-sys)
		irq, soft := 0.002*m, 0.008*m
		busy := user + sys + io + irq + soft
		c := &h.cpuSec[i]
		c[0] += sec * math.Max(0, 1-busy)
		c[1] += sec * io
		c[2] += sec * irq
		c[4] += sec * soft
		c[6] += sec * sys
		c[7] += sec * user
	}
	run := (h.user+h.system+h.iowait)*float64(n.cpus) + h.blocked
	h.load1 = lag(h.load1, run, dt, time.Minute)
	h.load5 = lag(h.load5, run, dt, 5*time.Minute)
	h.load5b = lag(h.load5b, run, dt, 15*time.Minute)
	nic := &h.net[0]
	rx, tx := h.rx*(1+r.normal(0, 0.08)), h.tx*(1+r.normal(0, 0.08))
	nic.rxB += math.Max(0, rx) * sec
	nic.txB += math.Max(0, tx) * sec
	nic.rxP += math.Max(0, rx) * sec / 1400
	nic.txP += math.Max(0, tx) * sec / 1400
	nic.rxDrop += float64(r.poisson(h.dropRate * sec))
	h.net[1].rxB += 4e4 * sec
	h.net[1].txB += 4e4 * sec
	h.net[1].rxP += 60 * sec
	h.net[1].txP += 60 * sec
	h.psi[0] += cpuPSI * sec
	h.psi[1] += memPSI * sec
	h.psi[2] += memPSI * 0.4 * sec
	h.psi[3] += ioPSI * sec
	h.psi[4] += ioPSI * 0.3 * sec
}

// available is MemAvailable.
func (n *node) available() float64 { return n.memTotal - n.host.memUsed }

// nodeFamilies are node-exporter's families this generator writes.
type nodeFamilies struct {
	cpu, memTotal, memAvail, memFree, cached, load1, load5, load15 *family
	rxB, txB, rxP, txP, rxDrop, txDrop, rxErr, txErr, netUp        *family
	psi                                                            [5]*family
	boot, uname                                                    *family
}

func newNodeFamilies(r *registry) *nodeFamilies {
	g := func(name, help string) *family { return r.family(name, typeGauge, help) }
	c := func(name, help string) *family { return r.family(name, typeCounter, help) }
	return &nodeFamilies{
		cpu:      c("node_cpu_seconds_total", "Seconds the CPUs spent in each mode."),
		memTotal: g("node_memory_MemTotal_bytes", "Memory information field MemTotal_bytes."),
		memAvail: g("node_memory_MemAvailable_bytes", "Memory information field MemAvailable_bytes."),
		memFree:  g("node_memory_MemFree_bytes", "Memory information field MemFree_bytes."),
		cached:   g("node_memory_Cached_bytes", "Memory information field Cached_bytes."),
		load1:    g("node_load1", "1m load average."),
		load5:    g("node_load5", "5m load average."),
		load15:   g("node_load15", "15m load average."),
		rxB:      c("node_network_receive_bytes_total", "Network device statistic receive_bytes."),
		txB:      c("node_network_transmit_bytes_total", "Network device statistic transmit_bytes."),
		rxP:      c("node_network_receive_packets_total", "Network device statistic receive_packets."),
		txP:      c("node_network_transmit_packets_total", "Network device statistic transmit_packets."),
		rxDrop:   c("node_network_receive_drop_total", "Network device statistic receive_drop."),
		txDrop:   c("node_network_transmit_drop_total", "Network device statistic transmit_drop."),
		rxErr:    c("node_network_receive_errs_total", "Network device statistic receive_errs."),
		txErr:    c("node_network_transmit_errs_total", "Network device statistic transmit_errs."),
		netUp:    g("node_network_up", "Value is 1 if operstate is 'up', 0 otherwise."),
		psi: [5]*family{
			c("node_pressure_cpu_waiting_seconds_total", "Total time in seconds that processes have waited for CPU time"),
			c("node_pressure_memory_waiting_seconds_total", "Total time in seconds that processes have waited for memory"),
			c("node_pressure_memory_stalled_seconds_total", "Total time in seconds no process could make progress due to memory congestion"),
			c("node_pressure_io_waiting_seconds_total", "Total time in seconds that processes have waited due to IO congestion"),
			c("node_pressure_io_stalled_seconds_total", "Total time in seconds no process could make progress due to IO congestion"),
		},
		boot:  g("node_boot_time_seconds", "Node boot time, in unixtime."),
		uname: g("node_uname_info", "Labeled system information as provided by the uname system call."),
	}
}

// gatherNode writes one node-exporter scrape.
func (w *world) gatherNode(n *node) func(e *emitter) bool {
	return func(e *emitter) bool {
		if n.down {
			return false
		}
		f, h := w.node, &n.host
		for i, c := range h.cpuSec {
			cpu := strconv.Itoa(i)
			for m, mode := range cpuModes {
				e.add(f.cpu, f.cpu.name, round(c[m], 2), "cpu", cpu, "mode", mode)
			}
		}
		avail := n.available()
		e.add(f.memTotal, f.memTotal.name, math.Round(n.memTotal))
		e.add(f.memAvail, f.memAvail.name, math.Round(avail))
		e.add(f.memFree, f.memFree.name, math.Round(math.Max(avail-h.cached, avail*0.08)))
		e.add(f.cached, f.cached.name, math.Round(math.Min(h.cached, avail*0.9)))
		e.add(f.load1, f.load1.name, round(h.load1, 2))
		e.add(f.load5, f.load5.name, round(h.load5, 2))
		e.add(f.load15, f.load15.name, round(h.load5b, 2))
		for i, dev := range []string{h.nic, "lo"} {
			c := h.net[i]
			e.add(f.rxB, f.rxB.name, math.Round(c.rxB), "device", dev)
			e.add(f.txB, f.txB.name, math.Round(c.txB), "device", dev)
			e.add(f.rxP, f.rxP.name, math.Round(c.rxP), "device", dev)
			e.add(f.txP, f.txP.name, math.Round(c.txP), "device", dev)
			e.add(f.rxDrop, f.rxDrop.name, c.rxDrop, "device", dev)
			e.add(f.txDrop, f.txDrop.name, c.txDrop, "device", dev)
			e.add(f.rxErr, f.rxErr.name, c.rxErr, "device", dev)
			e.add(f.txErr, f.txErr.name, c.txErr, "device", dev)
			e.add(f.netUp, f.netUp.name, b2f(i == 0), "device", dev)
		}
		for i, pf := range f.psi {
			e.add(pf, pf.name, round(h.psi[i], 6))
		}
		e.add(f.boot, f.boot.name, math.Round(n.bootTime))
		e.add(f.uname, f.uname.name, 1, "domainname", "(none)", "machine", "x86_64", "nodename", n.name,
			"release", n.kernel, "sysname", "Linux", "version", "#1 SMP")
		return true
	}
}
