package robust

import (
	"fmt"
	"slices"
	"strings"
)

// Prefix starts every scenario name of this package.
const Prefix = "robust/"

// HealthyScenario is the scenario without a fault.
const HealthyScenario = Prefix + "healthy"

// Fault kinds this generator injects (DESIGN.md's cause kinds).
const (
	KindThermalThrottle   = "gpu_thermal_throttle"
	KindPowerThrottle     = "gpu_power_throttle"
	KindPCIeDegraded      = "pcie_degraded"
	KindNVLinkDegraded    = "nvlink_degraded"
	KindXIDError          = "gpu_xid_error"
	KindGPULost           = "gpu_lost"
	KindMemoryErrors      = "gpu_memory_errors"
	KindNodeDown          = "node_down"
	KindMemoryPressure    = "node_memory_pressure"
	KindCrashLoop         = "pod_crash_loop"
	KindKVCacheExhausted  = "kv_cache_exhausted"
	KindCapacitySaturated = "inference_capacity_saturated"
)

// Kinds are the fault kinds, in the order Scenarios lists them.
func Kinds() []string {
	return []string{KindThermalThrottle, KindPowerThrottle, KindPCIeDegraded, KindNVLinkDegraded, KindXIDError,
		KindGPULost, KindMemoryErrors, KindNodeDown, KindMemoryPressure, KindCrashLoop, KindKVCacheExhausted,
		KindCapacitySaturated}
}

// Sizes of a fault: half and double its usual size.
const (
	SizeHalf   = "half"
	SizeDouble = "double"
)

// sizeScale is the scale of each size.
var sizeScale = map[string]float64{SizeHalf: 0.5, SizeDouble: 2}

// Scenario is a parsed scenario name: healthy (Kind "") or one fault of a
// kind at a size.
type Scenario struct {
	// Kind is the fault kind; "" for a healthy run.
	Kind string
	// Size is SizeHalf or SizeDouble ("" for a healthy run).
	Size string
	// Scale is the fault's size relative to its usual one: 0.5 or 2 (1
	// for a healthy run, which has nothing to scale).
	Scale float64
}

// Name returns the scenario's name: robust/healthy or robust/KIND/SIZE.
func (s Scenario) Name() string {
	if s.Kind == "" {
		return HealthyScenario
	}
	return Prefix + s.Kind + "/" + s.Size
}

// Scenarios lists every scenario name: robust/healthy, then each kind at
// half and at double size.
func Scenarios() []string {
	out := []string{HealthyScenario}
	for _, k := range Kinds() {
		out = append(out, Prefix+k+"/"+SizeHalf, Prefix+k+"/"+SizeDouble)
	}
	return out
}

// IsScenario reports whether a scenario name belongs to this package.
func IsScenario(name string) bool { return strings.HasPrefix(name, Prefix) }

// ParseScenario reads a scenario name of Scenarios.
func ParseScenario(name string) (Scenario, error) {
	if name == HealthyScenario {
		return Scenario{Scale: 1}, nil
	}
	rest, ok := strings.CutPrefix(name, Prefix)
	kind, size, ok2 := strings.Cut(rest, "/")
	scale, ok3 := sizeScale[size]
	if !ok || !ok2 || !ok3 || !slices.Contains(Kinds(), kind) {
		return Scenario{}, fmt.Errorf("unknown scenario %q: the robust scenarios are %s and %sKIND/{%s,%s} for KIND in %s",
			name, HealthyScenario, Prefix, SizeHalf, SizeDouble, strings.Join(Kinds(), ", "))
	}
	return Scenario{Kind: kind, Size: size, Scale: scale}, nil
}
