package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/detect"
)

// recentSteps is how many of a GPU's last working readings say where it
// is now: the least departure of two (peerRun) ignores a one-scrape blip.
const recentSteps = peerRun

// recentHorizon bounds how far back those readings may go: older ones are
// no longer "now".
const recentHorizon = 10 * time.Minute

// heatReading is one GPU of a job, as its temperature and clock tell it
// against the job's other GPUs, which do the same work.
type heatReading struct {
	g gpuRef
	// tempNow is the GPU's recent temperature, excessNow its recent excess
	// over the job's median GPU, rise how far that excess grew over its
	// usual one, in the job's spread of temperatures across GPUs.
	tempNow, excessNow, rise, spread float64
	// across is the job's spread of temperatures across its GPUs at a
	// moment: how far apart they sit.
	across float64
	// climb is how far the excess climbed over the last climbSteps
	// working readings, rising at each, in the job's spreads (0 when it
	// did not rise at each).
	climb float64
	// clockNow and clockUsual are the GPU's SM clock as a share of the
	// job's median GPU's, recently and usually; clockZ the drop in the
	// job's spread of those shares.
	clockNow, clockUsual, clockZ float64
	// powerNow, powerUsual and powerZ are the same of its power draw.
	powerNow, powerUsual, powerZ float64
	// onset is the first step of the run of hot or slow steps that reaches
	// the recent readings.
	onset int
	lim   thermalLimits
	// limKnown: lim is the GPU's own (DCGM_FI_DEV_SLOWDOWN_TEMP) or its
	// model's documented limits.
	limKnown bool
}

// heatUnits is the temperature's evidence: the larger of the rise over the
// job's other GPUs and the closeness to the GPU's limits (both read the
// same sensor, so they do not add up). A GPU at or below its peers is not
// hot.
func (h heatReading) heatUnits() float64 {
	if !(h.excessNow > 0) {
		return 0
	}
	u := max(units(h.rise), units(h.climb))
	if h.limKnown {
		u = max(u, headroomUnits(h.tempNow, h.lim))
	}
	return u
}

// clockUnits is the clock's evidence: the drop of the GPU's share of its
// peers' clock below its usual share.
func (h heatReading) clockUnits() float64 { return units(h.clockZ) }

// hypHeat: a GPU of a training job that runs hotter than the job's other
// GPUs (beyond their spread) or close to its slowdown temperature, with
// its SM clock below its usual share of theirs — the shape of a cooling
// fault with dcgm-exporter's default fields only (no violation counters,
// no clock-event reasons). The strength grows with both: a GPU a few
// degrees warmer than its peers, far from its limits, at its peers' clock
// is no candidate; one 25 °C hotter at half their clock is a strong one.
// Heat with no clock drop yet is an overheating finding.
func (an *analysis) hypHeat(ctx context.Context) ([]*candidate, error) {
	readings, err := an.jobHeat(ctx)
	if err != nil {
		return nil, err
	}
	var out []*candidate
	for _, hs := range readings {
		for _, h := range hs {
			hu, cu := h.heatUnits(), h.clockUnits()
			if hu == 0 {
				continue
			}
			g := h.g
			c := an.gpuCandidate(KindGPUThermalThrottle, g.node, g.gpu)
			c.onset = an.v.time(h.onset)
			c.strength = strengthOf(hu + cu)
			if cu == 0 && units(h.climb) == 0 && (!h.limKnown || headroomUnits(h.tempNow, h.lim) == 0) {
				// Warmer than it used to run, but settled there, inside its
				// limits and at its peers' clock (warmer inlet air): a rise
				// counts only beyond how far apart the GPUs sit, and stays
				// under 0.5 until it climbs, nears its limits or slows.
				if c.strength = min(strengthOf(units(h.rise*h.spread/h.across)), historyCap); c.strength == 0 {
					continue
				}
			}
			c.direct = cu > 0
			c.headline = fmt.Sprintf("%s GPU %s overheating", g.node, g.gpu)
			c.action = fmt.Sprintf("check the cooling of %s (fans, airflow, inlet temperature) before the GPU throttles", g.node)
			if cu > 0 {
				c.headline = fmt.Sprintf("%s GPU %s thermal throttling", g.node, g.gpu)
				c.action = fmt.Sprintf("check the cooling of %s (fans, airflow, inlet temperature); drain it if the GPU keeps throttling", g.node)
			}
			limit := ""
			if units(h.climb) > units(h.rise) {
				limit = fmt.Sprintf(", climbing %.0f°C over its last %d readings", h.climb*h.spread, climbSteps)
			}
			if h.limKnown {
				limit += fmt.Sprintf(", %.0f°C under its slowdown temperature of %.0f°C", h.lim.Slowdown-h.tempNow, h.lim.Slowdown)
			}
			c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_GPU_TEMP", Query: an.v.query("gpu.temp", gpuMatchers(an.v, g.node, g.gpu)),
				Summary: fmt.Sprintf("%.0f°C, %.0f°C above the job's median GPU from %s (%.1f of its peers' wander of %.1f°C over its usual excess)%s",
					h.tempNow, h.excessNow, an.v.time(h.onset).Format(time.TimeOnly), math.Max(0, h.rise), h.spread, limit)})
			if cu > 0 {
				c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_SM_CLOCK", Query: an.v.query("gpu.sm_clock", gpuMatchers(an.v, g.node, g.gpu)),
					Summary: fmt.Sprintf("SM clock at %.0f%% of the job's median GPU's (usually %.0f%%)", 100*h.clockNow, 100*h.clockUsual)})
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// jobHeat returns the heat readings of every training job's GPUs, read
// once per diagnosis (the thermal and the power detectors both weigh
// them).
func (an *analysis) jobHeat(ctx context.Context) ([][]heatReading, error) {
	if an.heat != nil {
		return *an.heat, nil
	}
	ts, err := an.v.sigs(ctx, "gpu.temp", "gpu.sm_clock", "gpu.power", "gpu.slowdown_temp")
	if err != nil {
		return nil, err
	}
	models := an.gpuModels()
	slow := ts[3].byEntity()
	out := make([][]heatReading, 0, len(an.jobs))
	for _, j := range an.jobs {
		out = append(out, an.heatReadings(j, ts[0], ts[1], ts[2], slow, models))
	}
	an.heat = &out
	return out, nil
}

// gpuModels maps GPU keys to dcgm-exporter's modelName.
func (an *analysis) gpuModels() map[string]string {
	out := map[string]string{}
	for _, n := range an.v.topo.Nodes {
		for _, g := range n.GPUs {
			out[gpuKey(n.Name, g.Index)] = g.Model
		}
	}
	return out
}

// heatReadings reads every GPU of j against the job's others. Steps while
// the job pauses (a checkpoint) and the few after it are left out: its
// GPUs cool and warm again each at its own pace.
func (an *analysis) heatReadings(j *trainJob, temp, clock, power *table, slow map[string]*row, models map[string]string) []heatReading {
	n := an.v.n
	rows, crows, prows := j.rows(temp), j.rows(clock), j.rows(power)
	if len(nonNil(rows)) < 3 {
		return nil
	}
	working, moving := j.working(n, workMask), j.working(n, peerRun)
	excess := excessOverPeers(rows, n)
	spread := usualWander(excess, working, 1) // whole-degree readings
	across := max(spread, spreadAcross(rows, n, working, 1))
	share := shareOfPeers(crows, n)
	shareSpread := spreadAcross(shareRows(share), n, working, 0.01) // boost clocks move in ~15 MHz bins
	pshare := shareOfPeers(prows, n)
	pshareSpread := spreadAcross(shareRows(pshare), n, working, 0.01)
	horizon := max(recentSteps, int(recentHorizon/an.v.step))
	var out []heatReading
	for k, g := range j.gpus {
		if excess[k] == nil {
			continue
		}
		// Settled readings say where the GPU runs against its peers; a
		// minute after a pause its readings already say whether it
		// climbs away from them (a steady climb past its usual excess).
		recent, fresh := recentWorking(excess[k], working, horizon), recentWorking(excess[k], moving, horizon)
		settled := len(recent) > 0
		if len(fresh) > 0 && (!settled || fresh[len(fresh)-1] > recent[len(recent)-1]) {
			recent, settled = fresh, false // the settled readings are from before a pause
		}
		if len(recent) == 0 {
			continue
		}
		usual := usualWorking(excess[k], working)
		h := heatReading{g: g, spread: spread, across: across, clockZ: math.NaN(), clockNow: math.NaN(), clockUsual: math.NaN(),
			powerZ: math.NaN(), powerNow: math.NaN(), powerUsual: math.NaN()}
		h.tempNow = minOf(pick(rows[k].v, recent))
		h.excessNow = minOf(pick(excess[k], recent))
		if above := (h.excessNow - usual) / spread; settled {
			h.rise = above
		} else if above > noiseZ {
			h.climb = climbOf(excess[k], moving, horizon) / spread
		}
		if settled {
			h.climb = climbOf(excess[k], working, horizon) / spread
		}
		// The least of two readings ignores a one-scrape blip; a steady
		// climb over climbSteps readings is no blip, so its latest reading
		// says where the GPU is now.
		if units(h.climb) > 0 {
			last := recent[len(recent)-1]
			h.tempNow, h.excessNow = rows[k].v[last], excess[k][last]
			if settled {
				h.rise = (h.excessNow - usual) / spread
			}
			// A climb back to its usual excess (a GPU that runs warmer
			// than its peers, warming again after a checkpoint at its own
			// pace) is no climb away from them.
			if (h.excessNow-usual)/spread <= noiseZ {
				h.climb = 0
			}
		}
		sd := math.NaN()
		if r := slow[g.key()]; r != nil {
			sd, _ = lastValid(r.v)
		}
		h.lim, h.limKnown = limitsOf(models[g.key()], sd)
		if pshare != nil && pshare[k] != nil {
			h.powerNow = maxOf(pick(pshare[k], recent))
			h.powerUsual = usualWorking(pshare[k], working)
			h.powerZ = (h.powerUsual - h.powerNow) / pshareSpread
			// A GPU that draws a larger share of the job's power than it
			// used to runs hotter for it (the busy rank the others wait
			// for, cooling as they wait): that is no cooling fault, unless
			// it reaches its limits.
			if (minOf(pick(pshare[k], recent))-h.powerUsual)/pshareSpread > noiseZ {
				h.rise, h.climb = 0, 0
			}
		}
		if share != nil && share[k] != nil {
			h.clockNow = maxOf(pick(share[k], recent))
			h.clockUsual = usualWorking(share[k], working)
			h.clockZ = (h.clockUsual - h.clockNow) / shareSpread
		}
		hot := func(i int) bool {
			return working[i] && ((excess[k][i]-usual)/spread > noiseZ ||
				share != nil && share[k] != nil && (h.clockUsual-share[k][i])/shareSpread > noiseZ)
		}
		h.onset = recent[0]
		for i := recent[len(recent)-1]; i >= 0; i-- {
			if hot(i) {
				h.onset = i
			} else if working[i] {
				break
			}
		}
		out = append(out, h)
	}
	return out
}

// climbSteps is how many readings a climb spans: a heat sink that stops
// cooling warms its GPU steadily, by a degree or more at every reading,
// while noise does not climb at each of three.
const climbSteps = 3

// climbOf returns how far v rose over its last climbSteps working
// readings (within horizon steps), when it rose by at least a degree at
// each; else 0.
func climbOf(v []float64, working []bool, horizon int) float64 {
	var pts []float64
	for i := len(v) - 1; i >= 0 && i >= len(v)-horizon && len(pts) < climbSteps; i-- {
		if working[i] && !math.IsNaN(v[i]) {
			pts = append(pts, v[i])
		}
	}
	if len(pts) < climbSteps {
		return 0
	}
	for k := 0; k+1 < len(pts); k++ {
		if pts[k]-pts[k+1] < 1 { // pts is newest first
			return 0
		}
	}
	return pts[0] - pts[len(pts)-1]
}

// usualWander is how far a GPU's excess over the job's median GPU moves by
// itself: per GPU the robust scale of its excess over its usual working
// steps (usualWorking's), the job's median of them, at least floor (a
// reading's resolution). A GPU's own level against its peers (a heat sink
// that always runs 10 °C warmer) is its usual excess, not noise: a rise is
// judged against how much excesses wander, not how far apart the GPUs sit.
func usualWander(excess [][]float64, working []bool, floor float64) float64 {
	var scales []float64
	for _, v := range excess {
		if v == nil {
			continue
		}
		var pts []float64
		for i, x := range v {
			if working[i] && !math.IsNaN(x) {
				pts = append(pts, x)
			}
		}
		if want := max(10, len(pts)/4); len(pts) >= want {
			scales = append(scales, detect.NewBaseline(pts[:want], detect.Floor{}).Scale)
		}
	}
	if s := detect.Median(scales); s > floor {
		return s
	}
	return floor
}

// spreadAcross is the job's spread across its GPUs: per working step the
// robust scale (the MAD's: a node's GPUs are a quarter of a four-node
// job's) of the rows' values, the median over the steps, at least floor
// (a reading's resolution).
func spreadAcross(rows []*row, n int, working []bool, floor float64) float64 {
	var scales []float64
	vals := make([]float64, 0, len(rows))
	for i := range n {
		if !working[i] {
			continue
		}
		vals = vals[:0]
		for _, r := range rows {
			if r != nil && !math.IsNaN(r.v[i]) {
				vals = append(vals, r.v[i])
			}
		}
		if len(vals) >= 3 {
			scales = append(scales, detect.NewBaselineMADInPlace(vals, detect.Floor{}).Scale)
		}
	}
	if s := detect.Median(scales); s > floor {
		return s
	}
	return floor
}

// shareOfPeers returns, per row, its values divided by the rows' median at
// each step (nil for a nil row; nil when fewer than three rows).
func shareOfPeers(rows []*row, n int) [][]float64 {
	if len(nonNil(rows)) < 3 {
		return nil
	}
	med := medianAcross(nonNil(rows), n)
	out := make([][]float64, len(rows))
	for k, r := range rows {
		if r == nil {
			continue
		}
		out[k] = make([]float64, n)
		for i := range n {
			out[k][i] = math.NaN()
			if med[i] > 0 {
				out[k][i] = r.v[i] / med[i]
			}
		}
	}
	return out
}

func shareRows(share [][]float64) []*row {
	out := make([]*row, len(share))
	for k, s := range share {
		if s != nil {
			out[k] = &row{v: s}
		}
	}
	return out
}

// recentWorking returns the last recentSteps working steps with a value
// within the last horizon steps, oldest first.
func recentWorking(v []float64, working []bool, horizon int) []int {
	var out []int
	for i := len(v) - 1; i >= 0 && i >= len(v)-horizon && len(out) < recentSteps; i-- {
		if working[i] && !math.IsNaN(v[i]) {
			out = append([]int{i}, out...)
		}
	}
	return out
}

// usualWorking is the median of the first quarter of a row's working
// steps with a value (at least ten): what it was before whatever happened
// later.
func usualWorking(v []float64, working []bool) float64 {
	var pts []float64
	for i, x := range v {
		if working[i] && !math.IsNaN(x) {
			pts = append(pts, x)
		}
	}
	want := max(10, len(pts)/4)
	return detect.Median(pts[:min(want, len(pts))])
}

func pick(v []float64, idx []int) []float64 {
	out := make([]float64, 0, len(idx))
	for _, i := range idx {
		out = append(out, v[i])
	}
	return out
}

func minOf(v []float64) float64 {
	m := math.NaN()
	for _, x := range v {
		if !math.IsNaN(x) && (math.IsNaN(m) || x < m) {
			m = x
		}
	}
	return m
}

// cappedPower: GPUs of a training job held under their usual share of the
// job's power draw with their SM clock under its usual share of the
// peers', while they run no hotter than their peers — a power cap or
// brake, with dcgm-exporter's default fields only. A GPU that runs hot
// for it is thermal (hypHeat); four or more GPUs of a node are the node's
// power.
func (an *analysis) cappedPower(ctx context.Context) ([]*candidate, error) {
	readings, err := an.jobHeat(ctx)
	if err != nil {
		return nil, err
	}
	util, err := an.v.sig(ctx, "gpu.util")
	if err != nil {
		return nil, err
	}
	busy := util.byEntity()
	byNode := map[string][]heatReading{}
	for _, hs := range readings {
		for _, h := range hs {
			if h.heatUnits() > 0 || h.clockUnits() == 0 || units(h.powerZ) == 0 {
				continue
			}
			// A capped GPU still works: one whose kernels stopped (its
			// rank died, it waits idle) draws little at low clocks too.
			if r := busy[h.g.key()]; r != nil {
				if ref := reference(r.v, detect.Floor{Rel: 0.01, Abs: 0.01}); recentLow(r.v, peerRun) < 0.5*ref.Median {
					continue
				}
			}
			byNode[h.g.node] = append(byNode[h.g.node], h)
		}
	}
	var out []*candidate
	for _, node := range sortedKeys(byNode) {
		hs := byNode[node]
		u := func(h heatReading) float64 { return h.clockUnits() + units(h.powerZ) }
		slices.SortStableFunc(hs, func(a, b heatReading) int { return cmp.Compare(u(b), u(a)) })
		h := hs[0]
		gpu := h.g.gpu
		if len(hs) >= 4 {
			gpu = ""
		}
		c := an.gpuCandidate(KindGPUPowerThrottle, node, gpu)
		c.strength = strengthOf(u(h))
		c.onset = an.v.time(h.onset)
		c.direct = true
		c.headline = fmt.Sprintf("%s GPU %s power throttling", node, h.g.gpu)
		if gpu == "" {
			c.headline = fmt.Sprintf("%s power throttling on %d GPUs", node, len(hs))
		}
		c.action = fmt.Sprintf("check the power supplies and power limits of %s (nvidia-smi -q -d POWER); drain it if the brake stays on", node)
		c.evidence = append(c.evidence,
			Evidence{Signal: "DCGM_FI_DEV_POWER_USAGE", Query: an.v.query("gpu.power", gpuMatchers(an.v, node, gpu)),
				Summary: fmt.Sprintf("GPU %s draws %.0f%% of the job's median GPU's power (usually %.0f%%), no hotter than its peers", h.g.gpu, 100*h.powerNow, 100*h.powerUsual)},
			Evidence{Signal: "DCGM_FI_DEV_SM_CLOCK", Query: an.v.query("gpu.sm_clock", gpuMatchers(an.v, node, gpu)),
				Summary: fmt.Sprintf("SM clock at %.0f%% of the job's median GPU's (usually %.0f%%)", 100*h.clockNow, 100*h.clockUsual)})
		out = append(out, c)
	}
	return out, nil
}
