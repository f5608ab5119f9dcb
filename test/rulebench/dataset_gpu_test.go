package rulebench

import (
	"fmt"
	"math"
	"time"
)

// The faults on the GPUs, relative to the end of the data.
const (
	// nvlinkDegradedFor: GPU 3 of degradedNode moves 1% of its peers'
	// NVLink bandwidth for the last 40 minutes (nvlink-bandwidth pages).
	nvlinkDegradedFor = 40 * time.Minute
	degradedGPU       = 3
	// checkpointEvery: each training job checkpoints for a minute every
	// half hour; all its GPUs drop together (no NVLink alert).
	checkpointEvery = 30 * time.Minute
	checkpointFor   = time.Minute
)

// degradedNode is the node whose GPU degrades: gpu-node-006, or the last
// training node of a small cluster.
func (d *dataset) degradedNode() int { return min(5, max(0, d.nodes*4/5-1)) }

// dcgm-exporter's fields in the data set.
const (
	dcgmSMActive = "DCGM_FI_PROF_SM_ACTIVE"
	dcgmGRActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	dcgmNVLink   = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
	dcgmGPUUtil  = "DCGM_FI_DEV_GPU_UTIL"
)

// dcgmTarget is node n's dcgm-exporter.
func dcgmTarget(n int) target { return target{offset: time.Duration(n*7%30) * time.Second, gpu: true} }

// gpuLabels are what dcgm-exporter 3.3 / 4.x exports for a GPU with the
// Kubernetes pod mapping on, as a Prometheus scraping the GPU operator's
// ServiceMonitor without honor_labels stores it: the pod's namespace, pod
// and container become exported_*, and namespace, pod, container,
// instance and job are the exporter's own.
func gpuLabels(g gpuInfo) []string {
	id := uint64(g.node*gpusPerNode + g.idx)
	uuid := fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(unit(noiseID, id, 1)*(1<<32)),
		uint16(unit(noiseID, id, 2)*(1<<16)), uint16(unit(noiseID, id, 3)*(1<<16)),
		uint16(unit(noiseID, id, 4)*(1<<16)), uint64(unit(noiseID, id, 5)*(1<<48)))
	kv := []string{
		"gpu", fmt.Sprint(g.idx), "UUID", uuid, "pci_bus_id", fmt.Sprintf("00000000:%02X:00.0", 0x18+g.idx*0x10),
		"device", fmt.Sprintf("nvidia%d", g.idx), "modelName", "NVIDIA H100 80GB HBM3", "Hostname", hostname(g.node),
		"DCGM_FI_DRIVER_VERSION", "550.90.07",
	}
	if g.role != roleIdle {
		kv = append(kv, "exported_container", g.container, "exported_namespace", g.namespace, "exported_pod", g.pod)
	}
	return append(kv, "container", "nvidia-dcgm-exporter", "namespace", "gpu-operator",
		"pod", fmt.Sprintf("nvidia-dcgm-exporter-%05x", uint32(unit(noiseID, uint64(g.node), 9)*(1<<20))),
		"instance", fmt.Sprintf("10.0.%d.%d:9400", g.node/250, g.node%250+1), "job", "nvidia-dcgm-exporter")
}

// checkpointing reports whether training job j is checkpointing at ms.
func (d *dataset) checkpointing(j int, ms int64) bool {
	since := time.UnixMilli(ms).Sub(d.start) + time.Duration(j)*3*time.Minute
	return since%checkpointEvery < checkpointFor
}

// inferLoad is a model's load in [0, 1] at ms: a slow wave per model.
func (d *dataset) inferLoad(model int, ms int64) float64 {
	phase := unit(noiseLoad, uint64(model), 0) * 2 * math.Pi
	hours := time.UnixMilli(ms).Sub(d.start).Hours()
	return 0.5 + 0.35*math.Sin(phase+hours*2*math.Pi/3) + 0.05*jitter(noiseLoad, uint64(model), uint64(ms))
}

// smActive is the SM activity of g at ms.
func (d *dataset) smActive(g gpuInfo, ms int64) float64 {
	id := uint64(g.node*gpusPerNode + g.idx)
	switch g.role {
	case roleTrain:
		if d.checkpointing(g.job, ms) {
			return 0.05
		}
		return clamp(smBase[g.namespace]+0.03*jitter(noiseSM, id, uint64(ms)), 0, 1)
	case roleInfer:
		return clamp(0.2+0.5*d.inferLoad(g.model, ms), 0, 1)
	}
	return 0
}

func (d *dataset) writeDCGM(o *omWriter) {
	fields := []struct {
		name  string
		value func(g gpuInfo, ms int64) float64
	}{
		{dcgmSMActive, func(g gpuInfo, ms int64) float64 { return round(d.smActive(g, ms), 6) }},
		{dcgmGRActive, func(g gpuInfo, ms int64) float64 {
			if g.role == roleIdle {
				return 0
			}
			return round(math.Min(1, d.smActive(g, ms)+0.06), 6)
		}},
		{dcgmNVLink, d.nvlink},
		{dcgmGPUUtil, d.gpuUtil},
	}
	times := make([][]int64, d.nodes)
	for n := range times {
		times[n] = d.times(dcgmTarget(n))
	}
	for _, f := range fields {
		o.family(f.name, "gauge")
		for _, g := range d.gpus {
			ts := times[g.node]
			o.series(f.name, gpuLabels(g), ts, func(k int) float64 { return f.value(g, ts[k]) })
		}
	}
}

// nvlink is g's NVLink bandwidth (MiB/s) at ms.
func (d *dataset) nvlink(g gpuInfo, ms int64) float64 {
	id := uint64(g.node*gpusPerNode + g.idx)
	switch g.role {
	case roleTrain:
		if d.checkpointing(g.job, ms) {
			return math.Round(10 + 2*jitter(noiseNVLink, id, uint64(ms)))
		}
		bw := 18000 * (1 + 0.02*jitter(noiseNVLink, id, uint64(ms)))
		if g.node == d.degradedNode() && g.idx == degradedGPU && d.ago(ms) < nvlinkDegradedFor {
			bw *= 0.01
		}
		return math.Round(bw)
	case roleInfer:
		return math.Round(300 * (1 + 0.05*jitter(noiseNVLink, id, uint64(ms))) * (0.5 + d.inferLoad(g.model, ms)))
	}
	return 0
}

// gpuUtil is DCGM_FI_DEV_GPU_UTIL (kernel-active time, %) of g at ms.
func (d *dataset) gpuUtil(g gpuInfo, ms int64) float64 {
	id := uint64(g.node*gpusPerNode + g.idx)
	switch g.role {
	case roleTrain:
		if d.checkpointing(g.job, ms) {
			return 3
		}
		return math.Min(100, math.Round(98+3*jitter(noiseUtil, id, uint64(ms))))
	case roleInfer:
		return math.Round(30 + 60*d.inferLoad(g.model, ms))
	}
	return 0
}
