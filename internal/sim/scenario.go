package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fault is the ground truth of one injected fault, as truth.json lists it.
type Fault struct {
	// Kind is a DESIGN.md cause kind, e.g. nvlink_degraded.
	Kind string `json:"kind"`
	// Variant names the variant ("" for the default; "subtle" for the
	// subtle one).
	Variant string `json:"variant,omitempty"`
	// Entity is the faulty entity with DESIGN.md's canonical keys (node,
	// gpu, pod, namespace, workload, model, ...).
	Entity map[string]string `json:"entity"`
	// Onset is when the fault starts.
	Onset time.Time `json:"onset"`
	// Severity is the size of the effect in (0, 1]: 1 stops the work, a
	// subtle variant is a few hundredths.
	Severity float64 `json:"severity"`
	// Subtle: the effect is within 3× the healthy peers' spread.
	Subtle bool `json:"subtle"`
	// Summary says what happens, in words.
	Summary string `json:"summary"`
}

// FaultSpec asks for one fault in a Scenario. Zero fields are drawn from
// the seed.
type FaultSpec struct {
	// Kind is the cause kind; Variant one of its variants ("" default).
	Kind, Variant string
	// Node pins the faulty node (e.g. gpu-node-06) and GPU the faulty GPU
	// index ("" any), where the kind has them.
	Node, GPU string
	// After is the onset's offset from the start (0: drawn, around the
	// middle of the run).
	After time.Duration
}

// Scenario is what a run injects.
type Scenario struct {
	// Name is the scenario's name: healthy, KIND, KIND/VARIANT or
	// KIND+KIND.
	Name string
	// Faults are injected in order; none is a healthy run.
	Faults []FaultSpec
}

// ErrUnknownScenario is wrapped by ParseScenario's errors.
var ErrUnknownScenario = errors.New("unknown scenario")

// Healthy is the scenario without faults.
const Healthy = "healthy"

// ParseScenario reads a scenario name: healthy, KIND, KIND/VARIANT, or
// several of those joined by "+".
func ParseScenario(name string) (Scenario, error) {
	sc := Scenario{Name: name}
	if name == Healthy {
		return sc, nil
	}
	kinds := kindTable()
	parts := strings.Split(name, "+")
	for _, p := range parts {
		kind, variant, _ := strings.Cut(p, "/")
		k, ok := kinds[kind]
		if !ok {
			return Scenario{}, fmt.Errorf("%w %q: no fault kind %q", ErrUnknownScenario, name, kind)
		}
		if !slices.Contains(k.variants, variant) {
			return Scenario{}, fmt.Errorf("%w %q: %s has no variant %q (it has %s)", ErrUnknownScenario, name, kind, variant,
				strings.Join(k.variants[1:], ", "))
		}
		sc.Faults = append(sc.Faults, FaultSpec{Kind: kind, Variant: variant})
	}
	return sc, nil
}

// DemoScenario is `vigil demo`'s default: NVLink degradation on GPU 3 of
// gpu-node-06, with XID 74.
func DemoScenario() Scenario {
	return Scenario{Name: "nvlink_degraded", Faults: []FaultSpec{{Kind: "nvlink_degraded", Node: "gpu-node-06", GPU: "3"}}}
}

// ScenarioNames lists the named scenarios, one per line of `vigil
// simulate --list`: healthy, every kind, every kind's variants, and a few
// pairs of simultaneous faults. Any other KIND+KIND is accepted too.
func ScenarioNames() []string {
	out := []string{Healthy}
	kinds := kindTable()
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range kinds[k].variants {
			if v == "" {
				out = append(out, k)
			} else {
				out = append(out, k+"/"+v)
			}
		}
	}
	for _, pair := range [][2]string{
		{"nvlink_degraded", "exporter_down"},
		{"gpu_thermal_throttle", "inference_capacity_saturated"},
		{"straggler", "gpu_idle"},
	} {
		if _, a := kinds[pair[0]]; a {
			if _, b := kinds[pair[1]]; b {
				out = append(out, pair[0]+"+"+pair[1])
			}
		}
	}
	return out
}
