package topology

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// The catalog signals the health hint reads.
const (
	sigTemp         = "gpu.temp"
	sigSlowdownTemp = "gpu.slowdown_temp"
	sigClockReasons = "gpu.clock_event_reasons"
	sigXID          = "gpu.xid"
	sigXIDCount     = "gpu.xid_count"
	sigDBE          = "gpu.ecc_dbe_volatile"
	sigRemapFailure = "gpu.row_remap_failure"
	sigUtil         = "gpu.util"
	sigEngineActive = "gpu.gr_engine_active"
)

// xidLost is the XID of a GPU that fell off the bus.
const xidLost = 79

// idleBelow is the utilization (a ratio) under which a GPU is idle.
const idleBelow = 0.01

// gpuSignals are a GPU's latest health values; NaN means absent.
type gpuSignals struct {
	temp, slowdown, clocks, xid, xidChanges, dbe, remapFailure, util, engine float64
	// xidNew is the code of an XID series (dcgm-exporter 3.3+ labels each
	// code: err_code) that appeared in the window on a GPU that had XID
	// series before it.
	xidNew float64
	// xidCodes are the codes dcgm-exporter's windowed XID count is
	// positive for.
	xidCodes []int
}

func newGPUSignals() gpuSignals {
	n := math.NaN()
	return gpuSignals{temp: n, slowdown: n, clocks: n, xid: n, xidChanges: n, dbe: n, remapFailure: n, util: n, engine: n, xidNew: n}
}

// field returns the value a signal goes in.
func (s *gpuSignals) field(signal string) *float64 {
	switch signal {
	case sigTemp:
		return &s.temp
	case sigSlowdownTemp:
		return &s.slowdown
	case sigClockReasons:
		return &s.clocks
	case sigXID:
		return &s.xid
	case sigDBE:
		return &s.dbe
	case sigRemapFailure:
		return &s.remapFailure
	case sigUtil:
		return &s.util
	case sigEngineActive:
		return &s.engine
	}
	return nil
}

// dcgmSource is one dcgm-exporter metric of a health signal.
type dcgmSource struct {
	signal string
	factor float64
}

// healthSources maps the dcgm-exporter metrics of the health signals the
// catalog knows to their signal.
func healthSources(cat *catalog.Catalog) map[string]dcgmSource {
	out := map[string]dcgmSource{}
	for _, name := range []string{sigTemp, sigSlowdownTemp, sigClockReasons, sigXID, sigDBE, sigRemapFailure, sigUtil, sigEngineActive} {
		sig, ok := cat.Signal(name)
		if !ok {
			continue
		}
		for _, src := range sig.Sources {
			if src.Vocabulary == catalog.DCGMExporter {
				out[src.Metric] = dcgmSource{signal: name, factor: src.Factor()}
			}
		}
	}
	return out
}

// dcgmMetrics returns the dcgm-exporter metric names of a signal and the
// labels that carry meaning on them (the XID's err_code, the count's xid).
func dcgmMetrics(cat *catalog.Catalog, signal string) (names, meaning []string) {
	sig, ok := cat.Signal(signal)
	if !ok {
		return nil, nil
	}
	for _, src := range sig.Sources {
		if src.Vocabulary == catalog.DCGMExporter {
			names = append(names, src.Metric)
			for _, l := range src.Labels {
				if !slices.Contains(meaning, l) {
					meaning = append(meaning, l)
				}
			}
		}
	}
	return names, meaning
}

// blankFloor is the smallest DCGM blank sentinel (2^47) as PromQL reads
// it: every real health value is below it.
var blankFloor = strconv.FormatFloat(catalog.DCGMFP64Blank, 'f', -1, 64)

// readHealth reads what the latest values alone do not tell: whether the
// sticky XID gauge took a new code in the window, and the codes of
// dcgm-exporter's windowed XID count.
func (b *builder) readHealth(ctx context.Context) error {
	if len(b.dcgm.gpus) == 0 {
		return nil
	}
	by := strings.Join(append(slices.Clone(b.dcgm.hostLabels), "gpu"), ", ")
	if err := b.readXIDChanges(ctx, by); err != nil {
		return err
	}
	count, _ := dcgmMetrics(b.cat, sigXIDCount)
	if len(count) == 0 {
		return nil
	}
	qs := fmt.Sprintf(`max by (%s, xid) ({__name__=~"%s"} < %s) > 0`, by, strings.Join(count, "|"), blankFloor)
	return b.each(ctx, qs, func(lset labels.Labels, _ float64) {
		code, err := strconv.Atoi(lset.Get("xid"))
		if g := b.dcgm.gpuOf(lset); g != nil && err == nil && !slices.Contains(g.signals.xidCodes, code) {
			g.signals.xidCodes = append(g.signals.xidCodes, code)
		}
	})
}

// readXIDChanges reads the changes of the sticky XID gauge in the window
// and, where dcgm-exporter labels each code (err_code), the code series
// that appeared in the window on GPUs that had XID series before it. A GPU
// without data before the window (one scrape) shows no change: its XID
// may be old news.
func (b *builder) readXIDChanges(ctx context.Context, by string) error {
	xid, meaning := dcgmMetrics(b.cat, sigXID)
	if len(xid) == 0 {
		return nil
	}
	sel, w := `{__name__=~"`+strings.Join(xid, "|")+`"}`, b.window()
	qs := fmt.Sprintf(`max by (%s) (changes(%s[%s]))`, by, sel, w)
	err := b.each(ctx, qs, func(lset labels.Labels, v float64) {
		if g := b.dcgm.gpuOf(lset); g != nil {
			g.signals.xidChanges = maxKnown(g.signals.xidChanges, v)
		}
	})
	if err != nil || len(meaning) == 0 {
		return err
	}
	on := strings.Join(append([]string{by}, meaning...), ", ")
	qs = fmt.Sprintf(`max by (%[1]s) ((%[3]s > 0) unless on (%[2]s) (%[3]s offset %[4]s) and on (%[1]s) (%[3]s offset %[4]s))`, by, on, sel, w)
	return b.each(ctx, qs, func(lset labels.Labels, v float64) {
		if g := b.dcgm.gpuOf(lset); g != nil {
			g.signals.xidNew = maxKnown(g.signals.xidNew, v)
		}
	})
}

// gpuOf returns the known GPU a health series belongs to.
func (d *dcgmIndex) gpuOf(lset labels.Labels) *dcgmGPU {
	for _, l := range d.hostLabels {
		if v := lset.Get(l); v != "" {
			return d.gpus[gpuKey{l + "=" + v, lset.Get("gpu")}]
		}
	}
	return nil
}

// maxKnown is the larger of a and b, NaN counting as absent.
func maxKnown(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return max(a, b)
}

// hint turns the latest values into one word and a reason, worst first.
func (s gpuSignals) hint(cat *catalog.Catalog, window string) (Health, string) {
	if h, why := s.xidHint(cat, window); h != "" {
		return h, why
	}
	switch {
	case s.dbe > 0:
		return HealthECC, fmt.Sprintf("%g volatile double-bit ECC errors (uncorrectable) since the driver loaded", s.dbe)
	case s.remapFailure > 0:
		return HealthECC, "row remapping failed: the GPU's memory has no spare rows left"
	}
	reasons, _ := catalog.DecodeClockReasons(s.clocks)
	if names := reasonNames(reasons, catalog.ClockHWSlowdown, catalog.ClockHWPowerBrake); names != "" {
		return HealthThrottled, "clocks held down: " + names
	}
	if s.temp >= s.slowdown && s.slowdown > 0 {
		return HealthHot, fmt.Sprintf("%g °C, at or above its slowdown temperature %g °C", s.temp, s.slowdown)
	}
	if names := reasonNames(reasons, catalog.ClockSWThermal, catalog.ClockHWThermal); names != "" {
		return HealthHot, "clocks lowered by a thermal limit: " + names
	}
	switch {
	case !math.IsNaN(s.util):
		if s.util < idleBelow {
			return HealthIdle, fmt.Sprintf("utilization %g%%", math.Round(s.util*1000)/10)
		}
	case !math.IsNaN(s.engine):
		if s.engine < idleBelow {
			return HealthIdle, fmt.Sprintf("graphics engine active %g%% of the time", math.Round(s.engine*1000)/10)
		}
	case reasonNames(reasons, catalog.ClockIdle) != "":
		return HealthIdle, "clocks lowered because nothing runs on it (idle clock event)"
	}
	if s.known() {
		return HealthOK, ""
	}
	return HealthUnknown, "none of its series tells its health (temperature, clock events, XID, ECC, utilization)"
}

// xidHint says whether an XID happened in the window: the windowed count
// is positive, or the sticky gauge changed to a new code. XIDs the catalog
// rates informational (63, 92, ...) are no fault.
func (s gpuSignals) xidHint(cat *catalog.Catalog, window string) (Health, string) {
	codes := slices.Clone(s.xidCodes)
	how := "dcgm-exporter's XID count"
	switch {
	case len(codes) > 0:
	case s.xidNew > 0:
		codes = []int{int(s.xidNew)}
		how = "a new XID series appeared"
	case s.xidChanges > 0 && s.xid > 0:
		codes = []int{int(s.xid)}
		how = "the XID gauge changed"
	}
	slices.Sort(codes)
	var shown []string
	for _, code := range codes {
		x, known := cat.XID(code)
		if known && x.Severity == catalog.SeverityInfo {
			continue
		}
		if code == xidLost {
			return HealthLost, fmt.Sprintf("XID %d in the last %s (%s): the GPU fell off the bus", code, window, how)
		}
		name := strconv.Itoa(code)
		if known {
			name += " " + x.Mnemonic
		}
		shown = append(shown, name)
	}
	if len(shown) == 0 {
		return "", ""
	}
	return HealthXID, fmt.Sprintf("XID %s in the last %s (%s)", strings.Join(shown, ", "), window, how)
}

// known reports whether any health value is present.
func (s gpuSignals) known() bool {
	for _, v := range []float64{s.temp, s.clocks, s.xid, s.dbe, s.remapFailure, s.util, s.engine} {
		if !math.IsNaN(v) {
			return true
		}
	}
	return len(s.xidCodes) > 0
}

// reasonNames joins the names of the reasons among bits.
func reasonNames(reasons []catalog.ClockReasonInfo, bits ...catalog.ClockReason) string {
	var names []string
	for _, r := range reasons {
		if slices.Contains(bits, r.Bit) {
			names = append(names, r.Name)
		}
	}
	return strings.Join(names, "|")
}
