package sim

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/vigil-obs/vigil/internal/kinds"
)

// Subtle is the variant of every kind whose effect is within 3× the
// healthy peers' spread.
const Subtle = "subtle"

// kindDef is one fault kind: its variants ("" first, the default) and how
// to inject it.
type kindDef struct {
	variants []string
	build    func(b *faultBuilder, spec FaultSpec) (*activeFault, error)
}

// activeFault is a fault of a run: its truth and its effect, applied at
// every tick from the onset with the time since.
type activeFault struct {
	truth Fault
	apply func(w *world, since time.Duration)
	// before, if set, is applied at every tick before the onset with the
	// time left until it: what leads up to a fault (a leak that ends in an
	// OOM kill).
	before func(w *world, until time.Duration)
}

// kindTable returns every fault kind the simulator injects.
func kindTable() map[string]kindDef {
	v := func(more ...string) []string { return append(append([]string{""}, more...), Subtle) }
	return map[string]kindDef{
		kinds.NVLinkDegraded:      {v("node", "no_xid"), buildNVLink},
		kinds.GPUXIDError:         {v("109"), buildXID},
		kinds.GPULost:             {v(), buildGPULost},
		kinds.GPUThermalThrottle:  {v(), buildThermal},
		kinds.GPUPowerThrottle:    {v("node"), buildPower},
		kinds.GPUMemoryErrors:     {v("94", "95"), buildMemory},
		kinds.PCIeDegraded:        {v(), buildPCIe},
		kinds.NodeDown:            {v("reboot"), buildNodeDown},
		kinds.PodOOMKilled:        {v(), buildOOMKilled},
		kinds.PodCrashLoop:        {v(), buildCrashLoop},
		kinds.PodEvicted:          {v(), buildEvicted},
		kinds.Straggler:           {v(), buildStraggler},
		kinds.ExporterDown:        {v(), buildExporterDown},
		kinds.CapacitySaturated:   {v(), buildCapacity},
		kinds.KVCacheExhausted:    {v(), buildKVCache},
		kinds.GPUIdle:             {v(), buildGPUIdle},
		kinds.ModelDrift:          {v(), buildDrift},
		kinds.NodeCPUSaturated:    {v(), buildCPUSaturated},
		kinds.NodeMemoryPressure:  {v(), buildMemoryPressure},
		kinds.NodeNetworkDegraded: {v("port_down"), buildNetwork},
		kinds.InputPipelineSlow:   {v(), buildInputPipeline},
		kinds.DependencySlow:      {v(), buildRequestPath},
		kinds.TenantFailure:       {v(), buildRequestPath},
		kinds.BadRollout:          {v(), buildBadRollout},
	}
}

// faultBuilder picks the entities and onsets of a scenario's faults.
type faultBuilder struct {
	w    *world
	r    *rng
	used map[*node]bool
}

// newFaults builds a scenario's faults, each on its own node.
func newFaults(w *world, sc Scenario) ([]*activeFault, error) {
	b := &faultBuilder{w: w, r: newRand(w.cfg, "faults", sc.Name), used: map[*node]bool{}}
	kinds := kindTable()
	var out []*activeFault
	for _, spec := range sc.Faults {
		k, ok := kinds[spec.Kind]
		if !ok || !slices.Contains(k.variants, spec.Variant) {
			return nil, fmt.Errorf("%w: %s/%s", ErrUnknownScenario, spec.Kind, spec.Variant)
		}
		f, err := k.build(b, spec)
		if err != nil {
			return nil, fmt.Errorf("fault %s: %w", spec.Kind, err)
		}
		f.truth.Kind, f.truth.Variant = spec.Kind, spec.Variant
		f.truth.Subtle = spec.Variant == Subtle
		f.truth.Onset = b.onset(spec)
		out = append(out, f)
	}
	return out, nil
}

// onset is the spec's onset, or one drawn between 40% and 65% of the run,
// on a scrape.
func (b *faultBuilder) onset(spec FaultSpec) time.Time {
	cfg := b.w.cfg
	after := spec.After
	if after <= 0 {
		after = time.Duration((0.4 + 0.25*b.r.Float64()) * float64(cfg.Duration))
	}
	after = after.Truncate(cfg.ScrapeInterval)
	return cfg.Start.Add(min(after, cfg.Duration))
}

// node picks a node among candidates: the pinned one, or a random one no
// other fault uses.
func (b *faultBuilder) node(spec FaultSpec, candidates []*node) (*node, error) {
	if spec.Node != "" {
		for _, n := range candidates {
			if n.name == spec.Node {
				b.used[n] = true
				return n, nil
			}
		}
		return nil, fmt.Errorf("node %q is not one this fault can hit", spec.Node)
	}
	var free []*node
	for _, n := range candidates {
		if !b.used[n] {
			free = append(free, n)
		}
	}
	if len(free) == 0 {
		free = candidates
	}
	if len(free) == 0 {
		return nil, fmt.Errorf("no node this fault can hit")
	}
	n := free[b.r.IntN(len(free))]
	b.used[n] = true
	return n, nil
}

// gpuOf picks a GPU of n: the pinned index, or a random one among ok.
func (b *faultBuilder) gpuOf(spec FaultSpec, n *node, ok func(*gpu) bool) (*gpu, error) {
	var cands []*gpu
	for _, g := range n.gpus {
		if ok == nil || ok(g) {
			cands = append(cands, g)
		}
	}
	if spec.GPU != "" {
		i, err := strconv.Atoi(spec.GPU)
		for _, g := range cands {
			if err == nil && g.idx == i {
				return g, nil
			}
		}
		return nil, fmt.Errorf("GPU %q of %s is not one this fault can hit", spec.GPU, n.name)
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("no GPU of %s this fault can hit", n.name)
	}
	return cands[b.r.IntN(len(cands))], nil
}

// trainingNodes are the nodes of the training job.
func (b *faultBuilder) trainingNodes() []*node { return b.w.c.nodes[:b.w.cfg.TrainingNodes] }

// trainingGPU picks a GPU of the training job.
func (b *faultBuilder) trainingGPU(spec FaultSpec) (*gpu, error) {
	n, err := b.node(spec, b.trainingNodes())
	if err != nil {
		return nil, err
	}
	return b.gpuOf(spec, n, nil)
}

func gpuEntity(g *gpu) map[string]string {
	return map[string]string{"node": g.node.name, "gpu": strconv.Itoa(g.idx)}
}

func nodeEntity(n *node) map[string]string { return map[string]string{"node": n.name} }

func podEntity(p *pod) map[string]string {
	return map[string]string{"namespace": p.namespace, "pod": p.name}
}

// once returns a function that runs fn the first time it is called.
func once(fn func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			fn()
		}
	}
}

// size scales an effect size (a distance from healthy) by the run's
// FaultScale.
func (b *faultBuilder) size(x float64) float64 { return x * b.w.cfg.FaultScale }

// toward is healthy moved toward faulty by the run's FaultScale (faulty at
// scale 1), clamped to [lo, hi] so that the fault stays its kind.
func (b *faultBuilder) toward(healthy, faulty, lo, hi float64) float64 {
	return clamp(healthy+(faulty-healthy)*b.w.cfg.FaultScale, lo, hi)
}

// span scales a duration of a fault's effect by the run's FaultScale, to
// at least least.
func (b *faultBuilder) span(d, least time.Duration) time.Duration {
	return max(time.Duration(float64(d)*b.w.cfg.FaultScale).Round(time.Second), least)
}

// ramp is how far a fault that builds up over d has come after since, in
// [0, 1].
func ramp(since, d time.Duration) float64 {
	if d <= 0 {
		return 1
	}
	return clamp(float64(since)/float64(d), 0, 1)
}
