package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
)

// Kernel log timing.
const (
	// kernelNoiseEvery is how often, on average, a node's kernel logs a
	// benign line.
	kernelNoiseEvery = 4 * time.Minute
	// oomKillEvery is how often the OOM killer kills again while a node's
	// memory stays full (the leaking workers come back and leak again).
	oomKillEvery = 5 * time.Minute
	// aerEvery is the kernel's rate limit of AER lines per device.
	aerEvery = time.Minute
	// memOOMAt is the share of memory in use past which the kernel's OOM
	// killer runs: just past the kubelet's MemoryPressure threshold.
	memOOMAt = memPressureAt + 0.005
)

// kernelLog is what the kernel logs keep between rounds.
type kernelLog struct {
	// noise is each node's stream of benign lines.
	noise map[*node]*rng
	// boot is each node's boot time last seen: a new one is a reboot.
	boot map[*node]time.Time
	// oomAt is the node's last OOM kill while its memory is full (zero:
	// not full).
	oomAt map[*node]time.Time
	// replays and aerAt are each GPU's PCIe replays last seen and its
	// last AER line.
	replays map[*gpu]float64
	aerAt   map[*gpu]time.Time
	// pids are the processes of GPUs that no training rank uses.
	pids map[*gpu]int
}

func newKernelLog(w *world) kernelLog {
	k := kernelLog{noise: map[*node]*rng{}, boot: map[*node]time.Time{}, oomAt: map[*node]time.Time{},
		replays: map[*gpu]float64{}, aerAt: map[*gpu]time.Time{}, pids: map[*gpu]int{}}
	for _, n := range w.c.nodes {
		k.noise[n] = newRand(w.cfg, "logs", "kernel", n.name)
		k.boot[n] = n.boot
		for _, g := range n.gpus {
			k.replays[g] = g.st.pcieReplays
		}
	}
	return k
}

// kernelRound writes every node's kernel lines of the round.
func (lw *logWriter) kernelRound() {
	k := &lw.kernel
	for _, n := range lw.w.c.nodes {
		if !n.boot.Equal(k.boot[n]) {
			k.boot[n] = n.boot
			lw.bootLines(n)
		}
		for _, g := range n.gpus {
			for _, code := range g.st.kernelXIDs {
				lw.xidLines(g, int(code))
			}
			g.st.kernelXIDs = g.st.kernelXIDs[:0]
			lw.aerLines(g)
		}
		lw.oomKiller(n)
		if r := k.noise[n]; r.Float64() < lw.w.dt/kernelNoiseEvery.Seconds() {
			lw.add(lw.kernelSource(n), lw.within(r, 0), plog.SeverityNumberInfo, kernelNoise(n, r, lw.hi))
		}
	}
}

// driverPCI writes dcgm-exporter's PCI bus ID ("00000000:3B:00.0") as the
// NVIDIA driver does in its XID lines ("0000:3b:00").
func driverPCI(busID string) string {
	parts := strings.Split(strings.ToLower(busID), ":")
	if len(parts) != 3 {
		return strings.ToLower(busID)
	}
	dom := parts[0]
	if len(dom) > 4 {
		dom = dom[len(dom)-4:]
	}
	dev, _, _ := strings.Cut(parts[2], ".")
	return dom + ":" + parts[1] + ":" + dev
}

// xidLines writes the driver's line of one XID, what follows it for a GPU
// that fell off the bus, and the errors of the training rank whose GPU it
// broke.
func (lw *logWriter) xidLines(g *gpu, code int) {
	src, pci := lw.kernelSource(g.node), driverPCI(g.pci)
	at := lw.within(lw.r, 2*time.Second)
	sev := plog.SeverityNumberError
	if code == 63 {
		sev = plog.SeverityNumberWarn
	}
	lw.add(src, at, sev, fmt.Sprintf("NVRM: Xid (PCI:%s): %d, %s", pci, code, lw.xidDetail(g, code)))
	if code == 79 {
		lw.add(src, at.Add(time.Millisecond), sev, fmt.Sprintf("NVRM: GPU %s.0: GPU has fallen off the bus.", pci))
		lw.add(src, at.Add(2*time.Millisecond), plog.SeverityNumberInfo, fmt.Sprintf("NVRM: GPU at PCI:%s: %s", pci, g.uuid))
		lw.add(src, at.Add(3*time.Millisecond), plog.SeverityNumberInfo, fmt.Sprintf("NVRM: GPU Board Serial Number: %d", 1650000000000+g.node.idx*100+g.idx))
	}
	switch code {
	case 79, 48, 94, 95:
		if g.pod != nil && g.pod.training {
			lw.rankFailure(g, code, at)
		}
	}
}

// xidDetail is the rest of an XID line after the code: the process and
// what the driver says of the code.
func (lw *logWriter) xidDetail(g *gpu, code int) string {
	proc := "pid='<unknown>', name=<unknown>"
	switch p := g.pod; {
	case p != nil && p.training:
		proc = fmt.Sprintf("pid=%d, name=pt_main_thread", lw.train.pid(p, g.idx))
	case p != nil:
		pid, ok := lw.kernel.pids[g]
		if !ok {
			pid = 1000 + lw.r.IntN(90000)
			lw.kernel.pids[g] = pid
		}
		proc = fmt.Sprintf("pid=%d, name=python3", pid)
	}
	switch code {
	case 74:
		return fmt.Sprintf("%s, NVLink: fatal error detected on link %d(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", proc, lw.r.IntN(18))
	case 79:
		return "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	case 48:
		return fmt.Sprintf("%s, Ch 00000010, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition %d, subpartition 0.", proc, lw.r.IntN(12))
	case 94:
		return proc + ", Contained: SM (0x1). RST: No, D-RST: No"
	case 95:
		return "pid='<unknown>', name=<unknown>, Uncontained: FBHUB. RST: Yes, D-RST: No"
	case 63:
		return fmt.Sprintf("pid='<unknown>', name=<unknown>, Row Remapper: New row (0x%016x) marked for remapping, reset gpu to activate.", lw.r.Int64N(1<<36))
	case 119:
		return fmt.Sprintf("%s, Timeout after 6s of waiting for RPC response from GPU%d GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).", proc, g.idx)
	case 109:
		return fmt.Sprintf("%s, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x%x", proc, 0x1c000+lw.r.IntN(0x1000))
	}
	return proc + ", Ch 00000000"
}

// aerLines writes the kernel's AER report of a GPU's PCIe replays, at most
// once a minute.
func (lw *logWriter) aerLines(g *gpu) {
	k := &lw.kernel
	d := g.st.pcieReplays - k.replays[g]
	k.replays[g] = g.st.pcieReplays
	if d <= 0 || !k.aerAt[g].IsZero() && lw.hi.Sub(k.aerAt[g]) < aerEvery {
		return
	}
	k.aerAt[g] = lw.hi
	dev := strings.ToLower(g.pci[len(g.pci)-12:])
	bus, _ := strconv.ParseUint(dev[5:7], 16, 8)
	port := fmt.Sprintf("%s:%02x:01.0", dev[:4], bus-1)
	src, at := lw.kernelSource(g.node), lw.within(lw.r, time.Second)
	for i, s := range []string{
		fmt.Sprintf("pcieport %s: AER: Corrected error received: %s", port, dev),
		fmt.Sprintf("nvidia %s: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)", dev),
		fmt.Sprintf("nvidia %s:   device [10de:2330] error status/mask=00001000/0000e000", dev),
		fmt.Sprintf("nvidia %s:    [12] Timeout               ", dev),
	} {
		lw.add(src, at.Add(time.Duration(i)*time.Microsecond), plog.SeverityNumberWarn, s)
	}
}

// oomKiller writes the OOM killer's lines while a node's memory is full:
// the kill of a leaking dataloader worker, again every oomKillEvery.
func (lw *logWriter) oomKiller(n *node) {
	k := &lw.kernel
	if n.host.baseMemUsed+n.cond.memUsed < memOOMAt {
		k.oomAt[n] = time.Time{}
		return
	}
	if last := k.oomAt[n]; !last.IsZero() && lw.hi.Sub(last) < oomKillEvery {
		return
	}
	k.oomAt[n] = lw.hi
	memcg := "/system.slice/containerd.service"
	for _, p := range n.pods {
		if p.training {
			memcg = fmt.Sprintf("/kubepods/burstable/pod%s/%s", p.uid, hexID(lw.r, 64))
		}
	}
	pid, task := 2000+lw.r.IntN(400000), "python"
	rss := int64(memTotal/1024*(0.08+0.04*lw.r.Float64())) / 4 * 4
	src, at := lw.kernelSource(n), lw.within(lw.r, time.Second)
	for i, s := range []string{
		fmt.Sprintf("%s invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0", task),
		fmt.Sprintf("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=%s,task=%s,pid=%d,uid=0", memcg, task, pid),
		fmt.Sprintf("Out of memory: Killed process %d (%s) total-vm:%dkB, anon-rss:%dkB, file-rss:%dkB, shmem-rss:0kB, UID:0 pgtables:%dkB oom_score_adj:0",
			pid, task, rss+rss/8, rss, 4096+lw.r.IntN(60000), rss/500),
		fmt.Sprintf("oom_reaper: reaped process %d (%s), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB", pid, task),
	} {
		lw.add(src, at.Add(time.Duration(i)*50*time.Microsecond), plog.SeverityNumberError, s)
	}
}

// bootLines writes what a node's kernel logs as it boots.
func (lw *logWriter) bootLines(n *node) {
	src, spec := lw.kernelSource(n), lw.w.c.spec
	for i, s := range []string{
		fmt.Sprintf("Linux version %s (buildd@lcy02-amd64-059) (x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #134-Ubuntu SMP Fri Sep 27 20:20:17 UTC 2024", n.kernel),
		fmt.Sprintf("Command line: BOOT_IMAGE=/boot/vmlinuz-%s root=PARTUUID=%s ro console=ttyS0 nvme_core.io_timeout=4294967295", n.kernel, uuid(lw.r)),
		"nvidia: loading out-of-tree module taints kernel.",
		"nvidia-nvlink: Nvlink Core is being initialized, major device number 234",
		fmt.Sprintf("NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U22-I3-B10-02-5)", spec.Driver),
		"mlx5_core 0000:0c:00.0: firmware version: 28.39.1002",
	} {
		lw.add(src, lw.hi.Add(-time.Duration(6-i)*time.Millisecond), plog.SeverityNumberInfo, s)
	}
}

// kernelNoise is one benign kernel line, none of which is an event.
func kernelNoise(n *node, r *rng, at time.Time) string {
	switch r.IntN(7) {
	case 0:
		return fmt.Sprintf("IPv6: ADDRCONF(NETDEV_CHANGE): cali%s: link becomes ready", hexID(r, 11))
	case 1:
		return fmt.Sprintf(`audit: type=1400 audit(%d.%03d:%d): apparmor="DENIED" operation="ptrace" class="ptrace" profile="cri-containerd.apparmor.d" pid=%d comm="node_exporter" requested_mask="read" denied_mask="read" peer="unconfined"`,
			at.Unix(), r.IntN(1000), 1000+r.IntN(90000), 1000+r.IntN(90000))
	case 2:
		return "IPVS: rr: TCP 10.96.0.10:53 - no destination available"
	case 3:
		return fmt.Sprintf("kauditd_printk_skb: %d callbacks suppressed", 1+r.IntN(20))
	case 4:
		return fmt.Sprintf("eth0: renamed from tmp%s", hexID(r, 5))
	case 5:
		return fmt.Sprintf("nvidia-nvswitch%d: SXid (PCI:0000:%02x:00.0): 12028, Non-fatal, Link %d egress non-posted PRIV error (First)", r.IntN(4), 5+r.IntN(4), r.IntN(64))
	}
	return fmt.Sprintf("TCP: request_sock_TCP: Possible SYN flooding on port %s:10250. Sending cookies.", n.ip)
}
