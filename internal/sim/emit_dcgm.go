package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
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
	memTemp := st(func(s *gpuState) float64 { return math.Round(s.memTemp) })
	if l.DCGMBlank == BlankSentinel {
		// The GPU does not report its memory temperature: DCGM's int64
		// NOT_SUPPORTED blank, printed as the number it is.
		memTemp = func(*gpu, GPUSpec) float64 { return float64(catalog.DCGMInt64Blank + 2) }
	}
	fields := []dcgmField{
		{"DCGM_FI_DEV_SM_CLOCK", typeGauge, "SM clock frequency (in MHz).", st(func(s *gpuState) float64 { return s.smClock })},
		{"DCGM_FI_DEV_MEM_CLOCK", typeGauge, "Memory clock frequency (in MHz).", func(_ *gpu, spec GPUSpec) float64 { return spec.MemClock }},
		{"DCGM_FI_DEV_MEMORY_TEMP", typeGauge, "Memory temperature (in C).", memTemp},
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
	if l.XIDField == Off {
		// A counters CSV without the XID field.
		fields = slices.DeleteFunc(fields, func(f dcgmField) bool { return f.name == "DCGM_FI_DEV_XID_ERRORS" })
	}
	if l.NVLinkErrors == On {
		errs := func(i int) func(*gpu, GPUSpec) float64 {
			return func(g *gpu, _ GPUSpec) float64 { return g.st.nvlinkErrs[i] }
		}
		fields = append(fields,
			dcgmField{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", typeCounter, "Total number of NVLink flow-control CRC errors.", errs(0)},
			dcgmField{"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", typeCounter, "Total number of NVLink data CRC errors.", errs(1)},
			dcgmField{"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", typeCounter, "Total number of NVLink retries.", errs(2)},
			dcgmField{"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", typeCounter, "Total number of NVLink recovery errors.", errs(3)},
		)
	}
	return fields
}

// xidWindow is dcgm-exporter's --xid-count-window-size default.
const xidWindow = 5 * time.Minute

// xidEvent is one XID dcgm-exporter saw, at the scrape that saw it.
type xidEvent struct {
	t    int64 // milliseconds
	code float64
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
	// xidFam, xids and xidSeries are DCGM_EXP_XID_ERRORS_COUNT's family,
	// each GPU's XIDs inside the window and its series per pod and code.
	xidFam    *family
	xids      map[*gpu][]xidEvent
	xidSeries map[*gpu]map[*pod]map[float64]*series
}

func newDCGMExporter(reg *registry, n *node, spec GPUSpec, l Labels) *dcgmExporter {
	e := &dcgmExporter{n: n, spec: spec, labels: l, fields: dcgmFields(l), bySeries: map[*gpu]map[*pod][]*series{}}
	for _, f := range e.fields {
		e.fams = append(e.fams, reg.family(f.name, f.typ, f.help))
	}
	e.xids, e.xidSeries = map[*gpu][]xidEvent{}, map[*gpu]map[*pod]map[float64]*series{}
	if l.XIDCount == On && l.XIDField == On {
		e.xidFam = reg.family("DCGM_EXP_XID_ERRORS_COUNT", typeGauge, "Count of XID Errors within user-specified time window (see xid-count-window-size param).")
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
		e.scrapeXIDs(o, g)
	}
}

// scrapeXIDs counts the GPU's XIDs inside the window, one series per code
// seen in it, as dcgm-exporter's XID collector does.
func (e *dcgmExporter) scrapeXIDs(o *scrapeOut, g *gpu) {
	ev := e.xids[g]
	for _, code := range g.st.xids {
		ev = append(ev, xidEvent{o.t, code})
	}
	g.st.xids = g.st.xids[:0]
	for len(ev) > 0 && o.t-ev[0].t >= xidWindow.Milliseconds() {
		ev = ev[1:]
	}
	e.xids[g] = ev
	if e.xidFam == nil || len(ev) == 0 {
		return
	}
	counts := map[float64]float64{}
	var codes []float64
	for _, x := range ev {
		if counts[x.code] == 0 {
			codes = append(codes, x.code)
		}
		counts[x.code]++
	}
	slices.Sort(codes)
	byPod := e.xidSeries[g]
	if byPod == nil {
		byPod = map[*pod]map[float64]*series{}
		e.xidSeries[g] = byPod
	}
	byCode := byPod[g.pod]
	if byCode == nil {
		byCode = map[float64]*series{}
		byPod[g.pod] = byCode
	}
	for _, c := range codes {
		s := byCode[c]
		if s == nil {
			kv := with(e.gpuLabels(g), "window_size_in_ms", fmt.Sprint(xidWindow.Milliseconds()), "xid", fmt.Sprint(c))
			s = e.xidFam.newSeries("DCGM_EXP_XID_ERRORS_COUNT", kv...)
			byCode[c] = s
		}
		o.add(s, counts[c])
	}
}
