package diagnose

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/detect"
	"github.com/vigil-obs/vigil/internal/kinds"
)

// analysis is one diagnosis in progress: the view, the workloads found in
// it, the symptoms and the candidate causes.
type analysis struct {
	v     *view
	jobs  []*trainJob
	deps  []*deployment
	syms  []symptomRec
	cands []*candidate
	// peer caches peer deviations by signal and job.
	peer map[string]map[string]deviation
	// xids caches the XID events (several hypotheses read them), logs the
	// log-derived counters that rose.
	xids *[]xidEvent
	logs *[]logRise
	// heat caches the jobs' heat readings (hyp_heat.go).
	heat *[][]heatReading
	// rp is the request path (span metrics and the service graph); nil
	// without a service graph.
	rp *requestPath
}

// symptomRec is a symptom and what it touches, to link causes to it.
type symptomRec struct {
	Symptom
	nodes    []string
	pods     []string
	workload string
}

// candidate is one hypothesis's answer: a possible cause with its evidence.
type candidate struct {
	kind string
	ent  Entity
	// onset is when the evidence starts (zero: unknown).
	onset time.Time
	// strength in [0, 1] is how clearly the evidence shows the fault,
	// before symptoms are considered.
	strength float64
	// headline names the fault: "gpu-node-06 NVLink degradation".
	headline string
	evidence []Evidence
	action   string
	// nodes, pods (podKey) and workload (namespace/name) are what it
	// touches: a symptom on them may be its effect.
	nodes    []string
	pods     []string
	workload string
	// generic: a metric_anomaly of the generic layer, a cause by
	// definition (DESIGN.md: --entity-label ranks causes).
	generic bool
	// order is a generic candidate's place in the generic layer's ranking
	// (from 1): what breaks a tie of confidences between two of them.
	order int
	// direct: the evidence names the fault itself (an XID, an ECC error, a
	// node NotReady), not only a pattern that others could cause.
	direct bool
	// explains are the indexes of the symptoms it explains (set by link).
	explains []int
}

// hypothesis examines the view for one cause kind (or a family of kinds
// read from the same signals) and returns its candidates.
type hypothesis func(ctx context.Context, an *analysis) ([]*candidate, error)

// detector is a named hypothesis: one detector may find several kinds
// (the XID table names many), and runs once.
type detector struct {
	name string
	run  hypothesis
	// late detectors run after every other: they weigh the candidates
	// the platform's detectors found (a slow model server defers to what
	// the metrics say about it).
	late bool
}

// detectors registers, for every kind of internal/kinds, the detectors
// that find it, in hyp_*.go (the generic layer's metric_anomaly runs
// apart, under --entity-label). A test fails when a kind has none.
func detectors() map[string][]detector {
	var (
		xid      = detector{"xid", hypXID, false}
		nvlink   = detector{"nvlink", hypNVLink, false}
		thermal  = detector{"thermal", hypThermal, false}
		power    = detector{"power", hypPower, false}
		memory   = detector{"memory", hypMemoryErrors, false}
		pcie     = detector{"pcie", hypPCIe, false}
		nodeDown = detector{"node-down", hypNodeDown, false}
		cpu      = detector{"node-cpu", hypNodeCPU, false}
		nodeMem  = detector{"node-memory", hypNodeMemory, false}
		network  = detector{"node-network", hypNodeNetwork, false}
		input    = detector{"input-pipeline", hypInputPipeline, false}
		strag    = detector{"straggler", hypStraggler, false}
		restarts = detector{"pod-restarts", hypPodRestarts, false}
		evicted  = detector{"pod-evicted", hypPodEvicted, false}
		capacity = detector{"capacity", hypCapacity, false}
		kv       = detector{"kv-cache", hypKVCache, false}
		exporter = detector{"exporter-down", hypExporterDown, false}
		idle     = detector{"gpu-idle", hypGPUIdle, false}
		rollout  = detector{"rollout", hypRollout, false}
		drift    = detector{"drift", hypDrift, false}
		dep      = detector{"dependency", hypDependency, true}
		tenant   = detector{"tenant", hypTenant, true}
		oomLog   = detector{"logged-oom", hypLoggedOOM, true}
	)
	return map[string][]detector{
		KindGPUXIDError:         {xid},
		KindNVLinkDegraded:      {xid, nvlink},
		KindGPULost:             {xid, exporter},
		KindGPUThermalThrottle:  {xid, thermal},
		KindGPUPowerThrottle:    {xid, power},
		KindGPUMemoryErrors:     {xid, memory},
		KindPCIeDegraded:        {xid, pcie},
		KindNodeDown:            {nodeDown},
		KindNodeCPUSaturated:    {cpu},
		KindNodeMemoryPressure:  {nodeMem, oomLog},
		KindNodeNetworkDegraded: {network},
		KindInputPipelineSlow:   {input},
		KindPodOOMKilled:        {restarts, oomLog},
		KindPodCrashLoop:        {restarts},
		KindPodEvicted:          {evicted},
		KindStraggler:           {strag},
		KindCapacitySaturated:   {capacity},
		KindKVCacheExhausted:    {kv},
		KindDependencySlow:      {dep},
		KindTenantFailure:       {tenant},
		KindBadRollout:          {rollout},
		KindModelDrift:          {drift},
		KindExporterDown:        {exporter},
		KindGPUIdle:             {idle},
	}
}

// detectorsOff are detectors a test switched off, by name, to show that
// the script tests of a kind fail without its detectors (nil but there).
var detectorsOff map[string]bool

// hypotheses are the knowledge layer, derived from the registry: every
// kind's detectors, each once, in the registry's order (GPU hardware
// first; the request path's after the platform's, so a slow model server
// defers to what the metrics say about it; what the logs alone say last).
func hypotheses() []hypothesis {
	ds := detectors()
	var seen []string
	var out, late []hypothesis
	for _, k := range kinds.All() {
		for _, d := range ds[k.Name] {
			if slices.Contains(seen, d.name) || detectorsOff[d.name] {
				continue
			}
			seen = append(seen, d.name)
			if d.late {
				late = append(late, d.run)
			} else {
				out = append(out, d.run)
			}
		}
	}
	return append(out, late...)
}

// run finds the workloads and symptoms, then runs every hypothesis.
func (an *analysis) run(ctx context.Context) error {
	an.peer = map[string]map[string]deviation{}
	if err := an.findJobs(ctx); err != nil {
		return err
	}
	if err := an.loggedOrphanStalls(ctx); err != nil {
		return err
	}
	if err := an.findDeployments(ctx); err != nil {
		return err
	}
	if err := an.findRequestPath(ctx); err != nil {
		return err
	}
	if err := an.loggedErrorSymptoms(ctx); err != nil {
		return err
	}
	for _, h := range hypotheses() {
		cs, err := h(ctx, an)
		if err != nil {
			return err
		}
		an.cands = append(an.cands, cs...)
	}
	an.corroboratedStalls()
	an.link()
	an.linkUpstream()
	return nil
}

// symptoms returns the symptoms, earliest first.
func (an *analysis) symptoms() []Symptom {
	out := make([]Symptom, 0, len(an.syms))
	for _, s := range an.syms {
		out = append(out, s.Symptom)
	}
	return out
}

// addSymptom records a symptom and returns its index.
func (an *analysis) addSymptom(s symptomRec) int {
	an.syms = append(an.syms, s)
	return len(an.syms) - 1
}

// precedenceSlack is how much later than its symptom a cause may start and
// still explain it: the peers of a training job see a rank's trouble one
// collection interval late, and counters show up a step late.
const precedenceSlack = 3 * time.Minute

// minExplain is the least evidence strength that can explain a symptom.
const minExplain = 0.3

// link sets which symptoms each candidate explains: those on what it
// touches that did not start before it (temporal precedence).
func (an *analysis) link() {
	for _, c := range an.cands {
		if c.strength < minExplain {
			continue // an event too weak to stop a job (XID 63, one remap)
		}
		for i, s := range an.syms {
			if !s.Current() {
				continue // history explains nothing now
			}
			touches := c.workload != "" && c.workload == s.workload
			for _, n := range c.nodes {
				touches = touches || slices.Contains(s.nodes, n)
			}
			for _, p := range c.pods {
				touches = touches || slices.Contains(s.pods, p)
			}
			if !touches {
				continue
			}
			if !c.onset.IsZero() && c.onset.After(s.Since.Add(precedenceSlack)) {
				continue
			}
			c.explains = append(c.explains, i)
		}
	}
}

// latest returns the episode a symptom reports among es (not empty): the
// last one, and, when it ended before v's last reading (one missed
// reading allowed), the instant it ended: the symptom is history.
func (an *analysis) latest(es []episode, v []float64) (episode, *time.Time) {
	e := es[len(es)-1]
	last := an.v.n - 1
	if v != nil {
		_, last = lastValid(v)
	}
	if e.end >= last-1 {
		return e, nil
	}
	t := an.v.time(e.end + 1)
	return e, &t
}

// episode is a run of steps [start, end] where a condition holds.
type episode struct{ start, end int }

func (e episode) len() int { return e.end - e.start + 1 }

// episodes returns the runs of at least minRun consecutive steps where bad
// holds.
func episodes(n int, bad func(i int) bool, minRun int) []episode {
	var out []episode
	start := -1
	for i := 0; i <= n; i++ {
		if i < n && bad(i) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= minRun {
			out = append(out, episode{start, i - 1})
		}
		start = -1
	}
	return out
}

// bridged returns bad with the gaps of v filled in: a step with no
// reading (a failed scrape, whose staleness markers leave the series
// absent) is bad when the readings on both sides of the gap are. A missing
// reading is no evidence that a condition ended; a gap at the end is left
// to the series' currency (lastValid).
func bridged(v []float64, bad func(i int) bool) func(i int) bool {
	return func(i int) bool {
		if !math.IsNaN(v[i]) {
			return bad(i)
		}
		before, after := -1, -1
		for k := i - 1; k >= 0; k-- {
			if !math.IsNaN(v[k]) {
				before = k
				break
			}
		}
		for k := i + 1; k < len(v); k++ {
			if !math.IsNaN(v[k]) {
				after = k
				break
			}
		}
		return before >= 0 && after >= 0 && bad(before) && bad(after)
	}
}

// longest returns the longest episode (the earliest of equals).
func longest(es []episode) (episode, bool) {
	if len(es) == 0 {
		return episode{}, false
	}
	best := es[0]
	for _, e := range es[1:] {
		if e.len() > best.len() {
			best = e
		}
	}
	return best, true
}

// reference is the robust level of the first quarter of a series' valid
// points (at least ten): what it was before whatever happened later.
func reference(xs []float64, f detect.Floor) detect.Baseline {
	valid := detect.Valid(xs)
	want := max(10, valid/4)
	var pts []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			pts = append(pts, x)
			if len(pts) == want {
				break
			}
		}
	}
	return detect.NewBaseline(pts, f)
}

// medianAcross returns, per step, the median of the rows' values.
func medianAcross(rows []*row, n int) []float64 {
	out := make([]float64, n)
	buf := make([]float64, 0, len(rows))
	for i := range n {
		buf = buf[:0]
		for _, r := range rows {
			if x := r.v[i]; !math.IsNaN(x) {
				buf = append(buf, x)
			}
		}
		out[i] = detect.MedianInPlace(buf)
	}
	return out
}

// sumOver returns the sum of a row's values over steps [from, to].
func sumOver(v []float64, from, to int) float64 {
	s := 0.0
	for i := max(from, 0); i <= to && i < len(v); i++ {
		if !math.IsNaN(v[i]) {
			s += v[i]
		}
	}
	return s
}

// firstAbove returns the first step in [from, len) where v exceeds x, or -1.
func firstAbove(v []float64, from int, x float64) int {
	for i := max(from, 0); i < len(v); i++ {
		if v[i] > x {
			return i
		}
	}
	return -1
}

// lastValid returns the last non-NaN value and its step, or NaN, -1.
func lastValid(v []float64) (float64, int) {
	for i := len(v) - 1; i >= 0; i-- {
		if !math.IsNaN(v[i]) {
			return v[i], i
		}
	}
	return math.NaN(), -1
}

// firstValid returns the first step with a value, or -1.
func firstValid(v []float64) int {
	for i, x := range v {
		if !math.IsNaN(x) {
			return i
		}
	}
	return -1
}
