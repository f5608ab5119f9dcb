package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// thermalBits are the clock-event reasons that mean heat.
const thermalBits = uint64(catalog.ClockSWThermal | catalog.ClockHWThermal | catalog.ClockHWSlowdown)

// powerBits are the clock-event reasons that mean a power limit.
const powerBits = uint64(catalog.ClockSWPowerCap | catalog.ClockHWPowerBrake)

// reasonSteps returns the steps where a clock-event reason bitmask has any
// of bits, from the first such step.
func reasonSteps(v []float64, bits uint64) counterActivity {
	a := counterActivity{first: -1}
	for i, x := range v {
		if math.IsNaN(x) || x < 0 {
			continue
		}
		if uint64(x)&bits != 0 {
			if a.first < 0 {
				a.first = i
			}
			a.steps++
		}
	}
	return a
}

// gpuThrottle is what one GPU shows of a throttle: violation time, reason
// bits, temperature and clocks.
type gpuThrottle struct {
	node, gpu string
	violation counterActivity // throttled steps (more than 5% of a step)
	reasons   counterActivity
	clockDev  *deviation // SM clock below the job's peers
	peakTemp  float64
	slowdown  float64
	// timeShare is the share of the recent window the driver counted the
	// GPU throttled, reasonShare the share of recent readings with the
	// reasons set, each less the median GPU's: a limit every GPU reaches
	// alike in normal work is the workload's, not a fault.
	timeShare, reasonShare float64
}

// throttleWindow is the recent window a throttle's shares are read over.
const throttleWindow = 10 * time.Minute

// recentShare returns the mean of f over a series' recent readings: from
// the first with f > 0 within the last steps readings (at least two), so
// that a throttle that began a minute ago counts as fully as one that
// held for ten; NaN with no reading.
func recentShare(v []float64, steps int, f func(float64) float64) float64 {
	var vals []float64
	for i := len(v) - 1; i >= 0 && len(vals) < steps; i-- {
		if !math.IsNaN(v[i]) {
			vals = append(vals, f(v[i]))
		}
	}
	if len(vals) == 0 {
		return math.NaN()
	}
	first := len(vals) - 1 // oldest
	for first > 1 && vals[first] == 0 {
		first--
	}
	sum := 0.0
	for _, x := range vals[:first+1] {
		sum += x
	}
	return sum / float64(first+1)
}

// throttles reads a throttle family (thermal or power) for every GPU.
func (an *analysis) throttles(ctx context.Context, violation string, bits uint64) ([]gpuThrottle, error) {
	ts, err := an.v.sigs(ctx, violation, "gpu.clock_event_reasons", "gpu.temp", "gpu.slowdown_temp")
	if err != nil {
		return nil, err
	}
	vt, rt, tt, st := ts[0], ts[1], ts[2], ts[3]
	reasons, temps, slow := rt.byEntity(), tt.byEntity(), st.byEntity()
	stepS := an.v.step.Seconds()
	var out []gpuThrottle
	keys := map[string]Entity{}
	for _, r := range append(slices.Clone(vt.rows), rt.rows...) {
		keys[entityKey(r.ent)] = r.ent
	}
	viol := vt.byEntity()
	steps := max(1, int(throttleWindow/an.v.step))
	timeShare := func(r *row) float64 {
		return recentShare(r.v, steps, func(x float64) float64 { return min(1, max(0, x/stepS)) })
	}
	reasonShare := func(r *row) float64 {
		return recentShare(r.v, steps, func(x float64) float64 {
			if x >= 0 && uint64(x)&bits != 0 {
				return 1
			}
			return 0
		})
	}
	var times, rsns []float64
	for _, r := range vt.rows {
		times = append(times, timeShare(r))
	}
	for _, r := range rt.rows {
		rsns = append(rsns, reasonShare(r))
	}
	medTime, medReason := detect.Median(times), detect.Median(rsns)
	for _, k := range sortedKeys(keys) {
		e := keys[k]
		g := gpuThrottle{node: e[catalog.KeyNode], gpu: e[catalog.KeyGPU], violation: counterActivity{first: -1}, reasons: counterActivity{first: -1}}
		if r := viol[k]; r != nil {
			g.violation = activityOf(r.v, 0.05*stepS)
			g.timeShare = max(0, timeShare(r)-medTime)
		}
		if r := reasons[k]; r != nil {
			g.reasons = reasonSteps(r.v, bits)
			g.reasonShare = max(0, reasonShare(r)-medReason)
		}
		if r := temps[k]; r != nil {
			g.peakTemp = maxOf(r.v)
		}
		g.slowdown = math.NaN()
		if r := slow[k]; r != nil {
			g.slowdown, _ = lastValid(r.v)
		}
		if g.violation.steps < 2 && g.reasons.steps < 2 {
			continue
		}
		if j := an.jobOfNode(g.node); j != nil {
			devs, err := an.peerDeviations(ctx, j, "gpu.sm_clock", -slowZ)
			if err != nil {
				return nil, err
			}
			if d, ok := devs[gpuKey(g.node, g.gpu)]; ok {
				g.clockDev = &d
			}
		}
		out = append(out, g)
	}
	return out, nil
}

func maxOf(v []float64) float64 {
	m := math.NaN()
	for _, x := range v {
		if !math.IsNaN(x) && (math.IsNaN(m) || x > m) {
			m = x
		}
	}
	return m
}

// throttleStrength weighs a throttle's evidence in proportion: the share
// of the recent window the driver counted the GPU throttled beyond the
// median GPU's (violation time is NVML's own account; clock-event reasons
// count half: they flag a limit reached, not time lost) and how far its
// SM clock fell below its peers'.
// Reasons that flicker on a GPU running at its peers' clocks are a GPU at
// its limit: weak evidence.
func throttleStrength(g gpuThrottle) float64 {
	u := 0.0
	switch {
	case g.violation.steps >= 2 && g.timeShare > 0:
		u = maxUnits * min(1, g.timeShare)
	case g.reasons.steps >= 2:
		u = 0.5 * maxUnits * min(1, g.reasonShare)
	}
	if g.clockDev != nil {
		u += units(-g.clockDev.z)
	}
	return strengthOf(u)
}

// hypThermal: a GPU that spends its time throttled for heat (thermal
// violation time, thermal clock-event reasons) and runs slower clocks
// than its peers. A warm GPU inside its limits shows none of these.
func hypThermal(ctx context.Context, an *analysis) ([]*candidate, error) {
	ts, err := an.throttles(ctx, "gpu.thermal_violation", thermalBits)
	if err != nil {
		return nil, err
	}
	out, err := an.hypHeat(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range ts {
		c := an.gpuCandidate(KindGPUThermalThrottle, g.node, g.gpu)
		c.strength = throttleStrength(g)
		c.onset = an.v.time(firstOf(g.violation.first, g.reasons.first))
		c.direct = g.violation.steps >= 2
		c.headline = fmt.Sprintf("%s GPU %s thermal throttling", g.node, g.gpu)
		c.action = fmt.Sprintf("check the cooling of %s (fans, airflow, inlet temperature); drain it if the GPU keeps throttling", g.node)
		temp := ""
		if !math.IsNaN(g.peakTemp) {
			temp = fmt.Sprintf(", peak %.0f°C", g.peakTemp)
			if !math.IsNaN(g.slowdown) {
				temp += fmt.Sprintf(" (slowdown at %.0f°C)", g.slowdown)
			}
		}
		c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_THERMAL_VIOLATION",
			Query: an.v.query("gpu.thermal_violation", gpuMatchers(an.v, g.node, g.gpu)),
			Summary: fmt.Sprintf("throttled for heat in %d steps, thermal clock reasons in %d; %.0f%% of the last %s more than the median GPU%s",
				g.violation.steps, g.reasons.steps, 100*max(g.timeShare, g.reasonShare), throttleWindow, temp)})
		addClockEvidence(an, c, g)
		out = append(out, c)
	}
	return out, nil
}

// workMask is how many steps after a pause of the job its GPUs' temperatures
// take to settle: three of their one-minute time constants.
const workMask = 6

// working reports, per step, whether the job has been working (not paused)
// for the last mask steps: while it pauses (a checkpoint, a stall) and for
// a few minutes after (workMask), its GPUs cool and warm at their own pace,
// so their temperatures' levels say little of their cooling; a steep climb
// away from the peers says more, a minute after the pause.
func (j *trainJob) working(n, mask int) []bool {
	out := make([]bool, n)
	for i := range n {
		out[i] = j.act != nil && i >= mask
		for k := max(0, i-mask); k <= i && out[i]; k++ {
			out[i] = j.act[k] >= stallRatio*j.ref.Median // not paused: a slowed job still works
		}
	}
	return out
}

// excessOverPeers returns, per row, its values minus the rows' median at
// each step (nil for a nil row).
func excessOverPeers(rows []*row, n int) [][]float64 {
	med := medianAcross(nonNil(rows), n)
	out := make([][]float64, len(rows))
	for k, r := range rows {
		if r == nil {
			continue
		}
		out[k] = make([]float64, n)
		for i := range n {
			out[k][i] = r.v[i] - med[i]
		}
	}
	return out
}

// hypPower: a GPU held under its draw by a power cap or brake (power
// violation time, power clock-event reasons) with clocks below its peers'.
func hypPower(ctx context.Context, an *analysis) ([]*candidate, error) {
	ts, err := an.throttles(ctx, "gpu.power_violation", powerBits)
	if err != nil {
		return nil, err
	}
	out, err := an.cappedPower(ctx)
	if err != nil {
		return nil, err
	}
	byNode := map[string][]gpuThrottle{}
	for _, g := range ts {
		byNode[g.node] = append(byNode[g.node], g)
	}
	for _, node := range sortedKeys(byNode) {
		gs := byNode[node]
		slices.SortStableFunc(gs, func(a, b gpuThrottle) int { return cmp.Compare(throttleStrength(b), throttleStrength(a)) })
		g := gs[0]
		gpu := g.gpu
		if len(gs) >= 4 {
			gpu = ""
		}
		c := an.gpuCandidate(KindGPUPowerThrottle, node, gpu)
		c.strength = throttleStrength(g)
		c.onset = an.v.time(firstOf(g.violation.first, g.reasons.first))
		c.direct = g.violation.steps >= 2
		c.headline = fmt.Sprintf("%s GPU %s power throttling", node, g.gpu)
		if gpu == "" {
			c.headline = fmt.Sprintf("%s power throttling on %d GPUs", node, len(gs))
		}
		c.action = fmt.Sprintf("check the power supplies and power limits of %s (nvidia-smi -q -d POWER); drain it if the brake stays on", node)
		c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_POWER_VIOLATION",
			Query: an.v.query("gpu.power_violation", gpuMatchers(an.v, node, gpu)),
			Summary: fmt.Sprintf("GPU %s held by a power limit in %d steps, power clock reasons in %d; %.0f%% of the last %s more than the median GPU",
				g.gpu, g.violation.steps, g.reasons.steps, 100*max(g.timeShare, g.reasonShare), throttleWindow)})
		addClockEvidence(an, c, g)
		out = append(out, c)
	}
	return out, nil
}

func addClockEvidence(an *analysis, c *candidate, g gpuThrottle) {
	if g.clockDev == nil {
		return
	}
	c.evidence = append(c.evidence, Evidence{Signal: "DCGM_FI_DEV_SM_CLOCK",
		Query:   an.v.query("gpu.sm_clock", gpuMatchers(an.v, g.node, g.gpu)),
		Summary: fmt.Sprintf("SM clock at %.0f%% of the job's other GPUs", 100*g.clockDev.ratio)})
}

// firstOf returns the smallest non-negative step, or 0.
func firstOf(steps ...int) int {
	best := -1
	for _, s := range steps {
		if s >= 0 && (best < 0 || s < best) {
			best = s
		}
	}
	return max(best, 0)
}
