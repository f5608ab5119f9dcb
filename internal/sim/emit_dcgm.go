package sim

import (
	"fmt"
	"math"
)

// dcgmField is one field dcgm-exporter exposes: its name, declared type,
// help text (from dcgm-exporter's CSVs) and how to read it off a GPU.
type dcgmField struct {
	name, typ, help string
	value           func(g *gpu, spec GPUSpec) float64
}

// dcgmFields are the GPU operator's default fields
// (dcp-metrics-included.csv) plus the error, throttling and profiling
// fields a GPU cluster's operators add.
func dcgmFields(l Labels) []dcgmField {
	nvlinkType, reasons := typeGauge, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	if l.NVLinkType == NVLinkCounter {
		// Older exporters: NVLink typed counter, the old field name.
		nvlinkType, reasons = typeCounter, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	}
	st := func(f func(s *gpuState) float64) func(*gpu, GPUSpec) float64 {
		return func(g *gpu, _ GPUSpec) float64 { return f(&g.st) }
	}
	ratio := func(f func(s *gpuState) float64) func(*gpu, GPUSpec) float64 {
		return func(g *gpu, _ GPUSpec) float64 { return round(f(&g.st), 6) }
	}
	return []dcgmField{
		{"DCGM_FI_DEV_SM_CLOCK", typeGauge, "SM clock frequency (in MHz).", st(func(s *gpuState) float64 { return s.smClock })},
		{"DCGM_FI_DEV_MEM_CLOCK", typeGauge, "Memory clock frequency (in MHz).", func(_ *gpu, spec GPUSpec) float64 { return spec.MemClock }},
		{"DCGM_FI_DEV_MEMORY_TEMP", typeGauge, "Memory temperature (in C).", st(func(s *gpuState) float64 { return math.Round(s.memTemp) })},
		{"DCGM_FI_DEV_GPU_TEMP", typeGauge, "GPU temperature (in C).", st(func(s *gpuState) float64 { return math.Round(s.temp) })},
		{"DCGM_FI_DEV_POWER_USAGE", typeGauge, "Power draw (in W).", st(func(s *gpuState) float64 { return round(s.power, 3) })},
		{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", typeCounter, "Total energy consumption since boot (in mJ).", st(func(s *gpuState) float64 { return math.Floor(s.energy) })},
		{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", typeCounter, "Total number of PCIe retries.", st(func(s *gpuState) float64 { return s.pcieReplays })},
		{"DCGM_FI_DEV_GPU_UTIL", typeGauge, "GPU utilization (in %).", st(func(s *gpuState) float64 { return s.util })},
		{"DCGM_FI_DEV_MEM_COPY_UTIL", typeGauge, "Memory utilization (in %).", st(func(s *gpuState) float64 { return s.memCopy })},
		{"DCGM_FI_DEV_ENC_UTIL", typeGauge, "Encoder utilization (in %).", st(func(*gpuState) float64 { return 0 })},
		{"DCGM_FI_DEV_DEC_UTIL", typeGauge, "Decoder utilization (in %).", st(func(*gpuState) float64 { return 0 })},
		{"DCGM_FI_DEV_XID_ERRORS", typeGauge, "Value of the last XID error encountered.", st(func(s *gpuState) float64 { return s.xid })},
		{"DCGM_FI_DEV_FB_FREE", typeGauge, "Framebuffer memory free (in MiB).", func(g *gpu, spec GPUSpec) float64 {
			return math.Max(0, spec.FBTotal-spec.FBReserved-g.st.fbUsed)
		}},
		{"DCGM_FI_DEV_FB_USED", typeGauge, "Framebuffer memory used (in MiB).", st(func(s *gpuState) float64 { return s.fbUsed })},
		{"DCGM_FI_DEV_FB_RESERVED", typeGauge, "Framebuffer memory reserved (in MiB).", func(_ *gpu, spec GPUSpec) float64 { return spec.FBReserved }},
		{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", nvlinkType, "Total number of NVLink bandwidth counters for all lanes.", st(func(s *gpuState) float64 { return math.Round(s.nvlink) })},
		{"DCGM_FI_DEV_VGPU_LICENSE_STATUS", typeGauge, "vGPU License status", st(func(*gpuState) float64 { return 0 })},
		{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", typeCounter, "Number of remapped rows for uncorrectable errors", st(func(s *gpuState) float64 { return s.rowsUncorr })},
		{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", typeCounter, "Number of remapped rows for correctable errors", st(func(s *gpuState) float64 { return s.rowsCorr })},
		{"DCGM_FI_DEV_ROW_REMAP_FAILURE", typeGauge, "Whether remapping of rows has failed", st(func(s *gpuState) float64 { return s.rowRemapFailure })},
		{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", typeCounter, "Total number of single-bit volatile ECC errors.", st(func(s *gpuState) float64 { return s.sbe })},
		{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", typeCounter, "Total number of double-bit volatile ECC errors.", st(func(s *gpuState) float64 { return s.dbe })},
		{reasons, typeGauge, "Current clock event reasons (bitmask of DCGM_CLOCKS_EVENT_REASON_*).", st(func(s *gpuState) float64 { return float64(s.reasons) })},
		{"DCGM_FI_DEV_POWER_VIOLATION", typeCounter, "Throttling duration due to power constraints (in ns).", st(func(s *gpuState) float64 { return s.powerViol })},
		{"DCGM_FI_DEV_THERMAL_VIOLATION", typeCounter, "Throttling duration due to thermal constraints (in ns).", st(func(s *gpuState) float64 { return s.thermalViol })},
		{"DCGM_FI_DEV_PCIE_LINK_GEN", typeGauge, "PCIe link generation.", func(_ *gpu, spec GPUSpec) float64 { return spec.PCIeGen }},
		{"DCGM_FI_DEV_PCIE_LINK_WIDTH", typeGauge, "PCIe link width.", func(g *gpu, spec GPUSpec) float64 {
			if g.cond.pcieWidth > 0 {
				return g.cond.pcieWidth
			}
			return spec.PCIeWidth
		}},
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", typeGauge, "Ratio of time the graphics engine is active.", ratio(func(s *gpuState) float64 { return s.gr })},
		{"DCGM_FI_PROF_SM_ACTIVE", typeGauge, "The ratio of cycles an SM has at least 1 warp assigned.", ratio(func(s *gpuState) float64 { return s.sm })},
		{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", typeGauge, "Ratio of cycles the tensor (HMMA) pipe is active.", ratio(func(s *gpuState) float64 { return s.tensor })},
		{"DCGM_FI_PROF_DRAM_ACTIVE", typeGauge, "Ratio of cycles the device memory interface is active sending or receiving data.", ratio(func(s *gpuState) float64 { return s.dram })},
		{"DCGM_FI_PROF_PCIE_TX_BYTES", typeGauge, "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", st(func(s *gpuState) float64 { return math.Round(s.pcieTx) })},
		{"DCGM_FI_PROF_PCIE_RX_BYTES", typeGauge, "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", st(func(s *gpuState) float64 { return math.Round(s.pcieRx) })},
	}
}

// dcgmExporter is the dcgm-exporter DaemonSet pod of one node.
type dcgmExporter struct {
	n      *node
	spec   GPUSpec
	labels Labels
	fields []dcgmField
	fams   []*family
	// bySeries caches each GPU's series per attributed pod (a pod that is
	// replaced gives the GPU new series).
	bySeries map[*gpu]map[*pod][]*series
}

func newDCGMExporter(reg *registry, n *node, spec GPUSpec, l Labels) *dcgmExporter {
	e := &dcgmExporter{n: n, spec: spec, labels: l, fields: dcgmFields(l), bySeries: map[*gpu]map[*pod][]*series{}}
	for _, f := range e.fields {
		e.fams = append(e.fams, reg.family(f.name, f.typ, f.help))
	}
	return e
}

// gpuLabels are the labels dcgm-exporter puts on a GPU's series.
func (e *dcgmExporter) gpuLabels(g *gpu) []string {
	uuidLabel, podL, nsL, ctrL := "UUID", "pod", "namespace", "container"
	if e.labels.DCGMPod == PodLabelsOld {
		uuidLabel, podL, nsL, ctrL = "uuid", "pod_name", "pod_namespace", "container_name"
	}
	kv := []string{
		"gpu", fmt.Sprint(g.idx), uuidLabel, g.uuid, "pci_bus_id", g.pci, "device", fmt.Sprintf("nvidia%d", g.idx),
		"modelName", e.spec.Name, e.labels.DCGMHost, e.n.name, "DCGM_FI_DRIVER_VERSION", e.spec.Driver,
	}
	if p := g.pod; p != nil {
		kv = append(kv, ctrL, p.container, nsL, p.namespace, podL, p.name)
	}
	return append(kv, "instance", e.instance(), "job", jobDCGM)
}

func (e *dcgmExporter) instance() string { return e.n.ip + ":9400" }

func (e *dcgmExporter) seriesOf(g *gpu) []*series {
	m := e.bySeries[g]
	if m == nil {
		m = map[*pod][]*series{}
		e.bySeries[g] = m
	}
	if s, ok := m[g.pod]; ok {
		return s
	}
	kv := e.gpuLabels(g)
	s := make([]*series, len(e.fams))
	for i, f := range e.fams {
		s[i] = f.newSeries(f.name, kv...)
	}
	m[g.pod] = s
	return s
}

// scrape emits every GPU the exporter sees.
func (e *dcgmExporter) scrape(o *scrapeOut) {
	for _, g := range e.n.gpus {
		if g.cond.lost || g.cond.hidden {
			continue
		}
		ss := e.seriesOf(g)
		for i, f := range e.fields {
			o.add(ss[i], f.value(g, e.spec))
		}
	}
}
