package diagnose

import (
	"math"
	"strings"
)

// Evidence in proportion to its size. A hypothesis measures how far each
// of its signals departs from what is healthy, in robust scales of the
// signal's own healthy spread (the job's peers, the GPU's own history) or
// against a documented limit, and turns the sizes into a strength with one
// rule shared by every kind, so that equal strengths mean equally strong
// evidence.

// noiseZ is how many robust scales of a signal's healthy spread are still
// noise: a departure counts from there on. Two scales is what one in
// twenty healthy readings reaches.
const noiseZ = 2.0

// maxUnits caps what one signal can contribute: beyond it the healthy
// spread's tails, not the fault, decide how large a z-score gets, so one
// signal alone never makes a certain cause; a second, independent signal
// must corroborate it.
const maxUnits = 6.0

// unitsPerE is how many units of evidence raise the strength by a factor
// e of the remaining doubt: 4 units (a signal 6 scales out) give 0.63, two
// signals at the cap 0.95.
const unitsPerE = 4.0

// units returns the evidence of a robust z-score: how far beyond noise it
// is, capped at maxUnits; zero or negative departures are no evidence.
func units(z float64) float64 {
	if math.IsNaN(z) || z <= noiseZ {
		return 0
	}
	return min(maxUnits, z-noiseZ)
}

// strengthOf turns units of evidence into a strength in [0, 1).
func strengthOf(u float64) float64 {
	if !(u > 0) {
		return 0
	}
	return 1 - math.Exp(-u/unitsPerE)
}

// thermalLimits are a GPU's documented temperatures in °C: from
// MaxOperating on its boost clocks give way to heat (NVIDIA's software
// thermal slowdown), at Slowdown the hardware slows down.
type thermalLimits struct {
	MaxOperating, Slowdown float64
}

// documentedLimits are the limits nvidia-smi -q reports (GPU Max Operating
// Temp, GPU Slowdown Temp) for the data-centre GPUs, matched by a part of
// dcgm-exporter's modelName: A100 SXM4 85/89 °C, and the H100's product
// brief 87/89 °C for Hopper. Other models are judged against their peers
// only, or against DCGM_FI_DEV_SLOWDOWN_TEMP when it is exported.
var documentedLimits = []struct {
	model string
	lim   thermalLimits
}{
	{"A100", thermalLimits{85, 89}},
	{"A800", thermalLimits{85, 89}},
	{"H100", thermalLimits{87, 89}},
	{"H800", thermalLimits{87, 89}},
	{"H200", thermalLimits{87, 89}},
	{"GH200", thermalLimits{87, 89}},
}

// limitsOf returns a GPU's thermal limits: its own slowdown temperature
// when dcgm-exporter reports it (NaN when not), else its model's
// documented ones.
func limitsOf(model string, slowdown float64) (thermalLimits, bool) {
	var doc thermalLimits
	known := false
	for _, d := range documentedLimits {
		if strings.Contains(model, d.model) {
			doc, known = d.lim, true
			break
		}
	}
	if !math.IsNaN(slowdown) && slowdown > 0 && slowdown < 200 {
		gap := 4.0 // A100's gap between the two; Hopper's is 2
		if known {
			gap = doc.Slowdown - doc.MaxOperating
		}
		return thermalLimits{MaxOperating: slowdown - gap, Slowdown: slowdown}, true
	}
	return doc, known
}

// headroomUnits returns the evidence of a temperature against the GPU's
// limits: none inside them (up to MaxOperating), in proportion from there
// to maxUnits at Slowdown, where the hardware slows the GPU down.
func headroomUnits(temp float64, lim thermalLimits) float64 {
	if math.IsNaN(temp) || lim.Slowdown <= 0 {
		return 0
	}
	over := temp - lim.MaxOperating
	if over <= 0 {
		return 0
	}
	return min(maxUnits, maxUnits*over/max(1, lim.Slowdown-lim.MaxOperating))
}
