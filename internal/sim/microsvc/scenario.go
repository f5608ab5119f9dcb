package microsvc

import (
	"fmt"
	"strings"
)

// EntityLabel is the label that names a service in the generated data:
// what `vigil diagnose --entity-label` is given.
const EntityLabel = "service"

// Scenarios are the scenario names `vigil simulate --list` adds for this
// package: metric_anomaly (a CPU hog), metric_anomaly/memory,
// metric_anomaly/latency, metric_anomaly/availability, and
// metric_anomaly/subtle (a CPU hog within three healthy spreads).
func Scenarios() []string {
	return []string{KindMetricAnomaly, KindMetricAnomaly + "/" + FaultMemory, KindMetricAnomaly + "/" + FaultLatency,
		KindMetricAnomaly + "/" + FaultAvailability, KindMetricAnomaly + "/subtle"}
}

// IsScenario reports whether a scenario name belongs to this package.
func IsScenario(name string) bool {
	return name == KindMetricAnomaly || strings.HasPrefix(name, KindMetricAnomaly+"/")
}

// ParseScenario returns the fault of a scenario name of Scenarios.
func ParseScenario(name string) (FaultSpec, error) {
	switch name {
	case KindMetricAnomaly:
		return FaultSpec{Kind: FaultCPU}, nil
	case KindMetricAnomaly + "/" + FaultMemory:
		return FaultSpec{Kind: FaultMemory}, nil
	case KindMetricAnomaly + "/" + FaultLatency:
		return FaultSpec{Kind: FaultLatency}, nil
	case KindMetricAnomaly + "/" + FaultAvailability:
		return FaultSpec{Kind: FaultAvailability}, nil
	case KindMetricAnomaly + "/subtle":
		return FaultSpec{Kind: FaultCPU, Subtle: true}, nil
	}
	return FaultSpec{}, fmt.Errorf("unknown scenario %q: the microservice scenarios are %s", name, strings.Join(Scenarios(), ", "))
}
