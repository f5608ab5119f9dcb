package robust

import (
	"math"
	"strconv"
)

// dcgmFamilies are dcgm-exporter's default fields
// (etc/default-counters.csv), with the exporter's own types and help.
type dcgmFamilies struct {
	smClock, memClock, memTemp, temp, power, energy *family
	pcieTx, pcieRx, replays                         *family
	util, memCopy, enc, dec, xid, fbFree, fbUsed    *family
	nvlink, vgpu, remapUnc, remapCorr, remapFailure *family
}

func newDCGMFamilies(r *registry, nvlinkGauge bool) *dcgmFamilies {
	g := func(name, help string) *family { return r.family(name, typeGauge, help) }
	c := func(name, help string) *family { return r.family(name, typeCounter, help) }
	nvType := typeCounter
	if nvlinkGauge {
		nvType = typeGauge
	}
	return &dcgmFamilies{
		smClock:  g("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
		memClock: g("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."),
		memTemp:  g("DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C)."),
		temp:     g("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
		power:    g("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
		energy:   c("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ)."),
		// NVML's PCIe throughput is a KB/s reading over a 20 ms window,
		// although the exporter types it a counter.
		pcieTx:       c("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "Total number of bytes transmitted through PCIe TX (in KB) via NVML."),
		pcieRx:       c("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "Total number of bytes received through PCIe RX (in KB) via NVML."),
		replays:      c("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries."),
		util:         g("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
		memCopy:      g("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)."),
		enc:          g("DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %)."),
		dec:          g("DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %)."),
		xid:          g("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."),
		fbFree:       g("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
		fbUsed:       g("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
		nvlink:       r.family("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", nvType, "Total number of NVLink bandwidth counters for all lanes"),
		vgpu:         g("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "vGPU License status"),
		remapUnc:     c("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors"),
		remapCorr:    c("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors"),
		remapFailure: g("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed"),
	}
}

// gatherDCGM writes one node's dcgm-exporter scrape: every field of every
// GPU still on the bus, labelled as the exporter labels them.
func (w *world) gatherDCGM(n *node) func(e *emitter) bool {
	return func(e *emitter) bool {
		if n.down {
			return false
		}
		f := w.dcgm
		host := "Hostname"
		if w.c.style.hostnameLower {
			host = "hostname"
		}
		for _, g := range n.gpus {
			if g.lost {
				continue
			}
			kv := []string{"gpu", strconv.Itoa(g.idx), "UUID", g.uuid, "pci_bus_id", g.bus, "device", "nvidia" + strconv.Itoa(g.idx),
				"modelName", w.c.model.name, host, n.name, "DCGM_FI_DRIVER_VERSION", w.c.driver}
			if p := g.holder; p != nil && !p.st.deleted {
				kv = append(kv, "container", p.container, "namespace", p.namespace, "pod", p.name)
			}
			r := g.st.reading
			e.add(f.smClock, f.smClock.name, r.clock, kv...)
			e.add(f.memClock, f.memClock.name, w.c.model.memClock, kv...)
			e.add(f.memTemp, f.memTemp.name, r.memTemp, kv...)
			e.add(f.temp, f.temp.name, r.temp, kv...)
			e.add(f.power, f.power.name, r.power, kv...)
			e.add(f.energy, f.energy.name, math.Floor(g.st.energy), kv...)
			e.add(f.pcieTx, f.pcieTx.name, r.pcieTx, kv...)
			e.add(f.pcieRx, f.pcieRx.name, r.pcieRx, kv...)
			e.add(f.replays, f.replays.name, math.Floor(g.st.replays), kv...)
			e.add(f.util, f.util.name, r.util, kv...)
			e.add(f.memCopy, f.memCopy.name, r.memCopy, kv...)
			e.add(f.enc, f.enc.name, 0, kv...)
			e.add(f.dec, f.dec.name, 0, kv...)
			e.add(f.xid, f.xid.name, float64(g.st.xid), kv...)
			e.add(f.fbFree, f.fbFree.name, r.fbFree, kv...)
			e.add(f.fbUsed, f.fbUsed.name, r.fbUsed, kv...)
			e.add(f.nvlink, f.nvlink.name, r.nvlink, kv...)
			e.add(f.vgpu, f.vgpu.name, 0, kv...)
			e.add(f.remapUnc, f.remapUnc.name, g.st.remapUnc, kv...)
			e.add(f.remapCorr, f.remapCorr.name, g.st.remapCorr, kv...)
			e.add(f.remapFailure, f.remapFailure.name, g.st.remapFailure, kv...)
		}
		return true
	}
}
