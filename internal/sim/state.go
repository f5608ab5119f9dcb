package sim

import "time"

// gpuCond is what faults and decoys do to one GPU during one tick; reset to
// healthy before every tick.
type gpuCond struct {
	// link multiplies the GPU's NVLink capacity (1 healthy).
	link float64
	// speed multiplies its compute speed (1 healthy; a straggler or a
	// throttled GPU is below 1).
	speed float64
	// clock multiplies its SM clock (1 healthy).
	clock float64
	// tempAdd raises its temperature target, °C.
	tempAdd float64
	// powerCap caps its power draw in watts (0: the TDP).
	powerCap float64
	// reasons are clock-event reason bits to report.
	reasons uint64
	// lost: the GPU fell off the bus; dcgm-exporter no longer reports it
	// and its process died.
	lost bool
	// hidden: dcgm-exporter does not report it, although it works.
	hidden bool
	// nvlinkErrs are NVLink CRC flit, CRC data, replay and recovery errors
	// per second.
	nvlinkErrs [4]float64
	// dead: the process on it died (the training rank is gone).
	dead bool
	// idle: its pod holds it but runs nothing.
	idle bool
	// pcieReplays is the PCIe replay rate per second.
	pcieReplays float64
	// pcieWidth overrides the link width (0: nominal).
	pcieWidth float64
	// pcieSpeed multiplies PCIe throughput (1 healthy).
	pcieSpeed float64
	// sbeRate and dbeRate are ECC errors per second.
	sbeRate, dbeRate float64
}

func healthyGPUCond() gpuCond {
	return gpuCond{link: 1, speed: 1, clock: 1, pcieSpeed: 1}
}

// nodeCond is what faults do to one node during one tick.
type nodeCond struct {
	// down: the node is off; nothing on it answers.
	down bool
	// notReady: the kubelet stopped posting status (Ready=Unknown).
	notReady bool
	// dcgmDown and nodeExpDown: that exporter does not answer.
	dcgmDown, nodeExpDown bool
	// ib multiplies InfiniBand capacity (1 healthy).
	ib float64
	// cpuBusy is extra CPU utilization in [0, 1].
	cpuBusy float64
	// memUsed is extra memory in use, as a fraction of the total.
	memUsed float64
	// dataWait is extra seconds per training step the rank on this node
	// waits for input.
	dataWait float64
	// ioWait is extra I/O pressure (PSI some) in [0, 1].
	ioWait float64
	// ibDownPort is 1 + the index of an InfiniBand port that is down (0:
	// none); ibErrors is its symbol-error rate per second.
	ibDownPort int
	ibErrors   float64
	// diskPressure: the kubelet reports DiskPressure.
	diskPressure bool
	// netRx multiplies the node's front-end network receive rate (1
	// healthy): the data a slow storage delivers.
	netRx float64
}

func healthyNodeCond() nodeCond { return nodeCond{ib: 1, netRx: 1} }

// gpuState is a GPU's readings and counters.
type gpuState struct {
	util, memCopy, gr, sm, tensor, dram float64
	power, temp, memTemp                float64
	smClock                             float64
	nvlink                              float64
	pcieTx, pcieRx                      float64
	fbUsed                              float64
	reasons                             uint64
	// counters
	energy                 float64 // mJ since the driver loaded
	pcieReplays            float64
	sbe, dbe               float64
	rowsCorr, rowsUncorr   float64
	powerViol, thermalViol float64 // ns
	xid                    float64 // sticky: the last XID
	// xids are the XIDs raised since dcgm-exporter last read them.
	xids []float64
	// kernelXIDs are the XIDs raised since the kernel log was last
	// written (logs.go); at most maxKernelXIDs when no one writes it.
	kernelXIDs []float64
	// nvlinkErrs are the NVLink CRC flit, CRC data, replay and recovery
	// error counts over all links.
	nvlinkErrs      [4]float64
	rowRemapFailure float64
	// tempInit marks the temperature as set (it follows its target with a
	// lag).
	tempInit bool
}

// nodeRun is a node's liveness.
type nodeRun struct {
	// downSince is when it went down; zero when up.
	downSince time.Time
	// readyUnknown: kube-state-metrics reports Ready=Unknown.
	readyUnknown bool
}
