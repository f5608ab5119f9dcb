package sim

import (
	"fmt"
	"math"
)

// nodeExporter is the node-exporter DaemonSet pod of one node.
type nodeExporter struct {
	n                                 *node
	instance                          string
	uname, load1, memTotal, memAvail  *series
	fsAvail, fsSize                   *series
	cpu                               [][len(cpuModes)]*series
	psi                               [5]*series
	net                               [6]*series
	disk                              [3]*series
	ibRx, ibTx, ibState, ibRate       []*series
	ibDowned, ibSymbol, ibRcv, ibWait []*series
}

func newNodeExporter(reg *registry, n *node, l Labels) *nodeExporter {
	e := &nodeExporter{n: n, instance: n.ip + ":9100"}
	if l.NodeInstance == InstanceName {
		e.instance = n.name + ":9100"
	}
	t := []string{"instance", e.instance, "job", jobNodeExporter}
	g := func(name, help string, kv ...string) *series {
		return reg.family(name, typeGauge, help).newSeries(name, with(kv, t...)...)
	}
	c := func(name, help string, kv ...string) *series {
		return reg.family(name, typeCounter, help).newSeries(name+"_total", with(kv, t...)...)
	}
	e.uname = g("node_uname_info", "Labeled system information as provided by the uname system call.",
		"domainname", "(none)", "machine", "x86_64", "nodename", n.name, "release", n.kernel, "sysname", "Linux",
		"version", "#134-Ubuntu SMP Fri Sep 27 20:20:17 UTC 2024")
	for i := range n.host.cpu {
		var row [len(cpuModes)]*series
		for m, mode := range cpuModes {
			row[m] = c("node_cpu_seconds", "Seconds the CPUs spent in each mode.", "cpu", fmt.Sprint(i), "mode", mode)
		}
		e.cpu = append(e.cpu, row)
	}
	e.load1 = g("node_load1", "1m load average.")
	e.memTotal = g("node_memory_MemTotal_bytes", "Memory information field MemTotal_bytes.")
	e.memAvail = g("node_memory_MemAvailable_bytes", "Memory information field MemAvailable_bytes.")
	e.psi = [5]*series{
		c("node_pressure_cpu_waiting_seconds", "Total time in seconds that processes have waited for CPU time"),
		c("node_pressure_memory_waiting_seconds", "Total time in seconds that processes have waited for memory"),
		c("node_pressure_memory_stalled_seconds", "Total time in seconds no process could make progress due to memory congestion"),
		c("node_pressure_io_waiting_seconds", "Total time in seconds that processes have waited due to IO congestion"),
		c("node_pressure_io_stalled_seconds", "Total time in seconds no process could make progress due to IO congestion"),
	}
	dev := []string{"device", "eth0"}
	e.net = [6]*series{
		c("node_network_receive_bytes", "Network device statistic receive_bytes.", dev...),
		c("node_network_transmit_bytes", "Network device statistic transmit_bytes.", dev...),
		c("node_network_receive_errs", "Network device statistic receive_errs.", dev...),
		c("node_network_transmit_errs", "Network device statistic transmit_errs.", dev...),
		c("node_network_receive_drop", "Network device statistic receive_drop.", dev...),
		c("node_network_transmit_drop", "Network device statistic transmit_drop.", dev...),
	}
	disk := []string{"device", "nvme0n1"}
	e.disk = [3]*series{
		c("node_disk_read_bytes", "The total number of bytes read successfully.", disk...),
		c("node_disk_written_bytes", "The total number of bytes written successfully.", disk...),
		c("node_disk_io_time_seconds", "Total seconds spent doing I/Os.", disk...),
	}
	fs := []string{"device", "/dev/nvme0n1p1", "fstype", "ext4", "mountpoint", "/"}
	e.fsAvail = g("node_filesystem_avail_bytes", "Filesystem space available to non-root users in bytes.", fs...)
	e.fsSize = g("node_filesystem_size_bytes", "Filesystem size in bytes.", fs...)
	for i := range n.hcas {
		ib := []string{"device", fmt.Sprintf("mlx5_%d", i), "port", "1"}
		e.ibRx = append(e.ibRx, c("node_infiniband_port_data_received_bytes", "Number of data octets received on all links", ib...))
		e.ibTx = append(e.ibTx, c("node_infiniband_port_data_transmitted_bytes", "Number of data octets transmitted on all links", ib...))
		e.ibState = append(e.ibState, g("node_infiniband_state_id", "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)", ib...))
		e.ibRate = append(e.ibRate, g("node_infiniband_rate_bytes_per_second", "Maximum signal transfer rate", ib...))
		e.ibDowned = append(e.ibDowned, c("node_infiniband_link_downed", "Number of times the link failed to recover from an error state and went down", ib...))
		e.ibSymbol = append(e.ibSymbol, c("node_infiniband_symbol_error", "Number of minor link errors detected on one or more physical lanes.", ib...))
		e.ibRcv = append(e.ibRcv, c("node_infiniband_port_errors_received", "Number of packets containing an error that were received on this port", ib...))
		e.ibWait = append(e.ibWait, c("node_infiniband_port_transmit_wait", "Number of ticks during which the port had data to transmit but no data was sent during the entire tick", ib...))
	}
	return e
}

// scrape emits the node's host metrics.
func (e *nodeExporter) scrape(o *scrapeOut) {
	h := &e.n.host
	o.add(e.uname, 1)
	for i, row := range e.cpu {
		for m := range cpuModes {
			o.add(row[m], round(h.cpu[i][m], 2))
		}
	}
	o.add(e.load1, round(h.load1, 2))
	o.add(e.memTotal, memTotal)
	o.add(e.memAvail, h.memAvail)
	for i, v := range []float64{h.psiCPU, h.psiMemSome, h.psiMemFull, h.psiIOSome, h.psiIOFull} {
		o.add(e.psi[i], round(v, 6))
	}
	for i, v := range []float64{h.netRx, h.netTx, h.netRxErr, h.netTxErr, h.netRxDrop, h.netTxDrop} {
		o.add(e.net[i], v)
	}
	for i, v := range []float64{h.diskRead, h.diskWritten, round(h.diskIO, 3)} {
		o.add(e.disk[i], v)
	}
	o.add(e.fsAvail, math.Round(h.fsAvail))
	o.add(e.fsSize, fsSize)
	for i := range e.ibRx {
		o.add(e.ibRx[i], h.ibRx[i])
		o.add(e.ibTx[i], h.ibTx[i])
		state := 4.0
		if e.n.cond.ibDownPort == i+1 {
			state = 1
		}
		o.add(e.ibState[i], state)
		o.add(e.ibRate[i], ibRate)
		o.add(e.ibDowned[i], h.ibDowned[i])
		o.add(e.ibSymbol[i], h.ibSymbol[i])
		o.add(e.ibRcv[i], h.ibRcvErr[i])
		o.add(e.ibWait[i], h.ibXmitWait[i])
	}
}
