package diagnose

import (
	"time"

	"github.com/vigil-obs/vigil/internal/kinds"
)

// Report is one diagnosis: what `vigil diagnose --json` prints. Fields may be
// added; none may be removed or renamed (DESIGN.md).
type Report struct {
	// At is the evaluation time: no sample after it was read.
	At time.Time `json:"at"`
	// Healthy is true exactly when there is no symptom and no cause or
	// finding with confidence ≥ 0.5, and Vigil could see the cluster: with
	// no telemetry in a vocabulary it knows (and no entity label) it is
	// false (Blind).
	Healthy bool `json:"healthy"`
	// Symptoms are the user-visible effects, earliest first.
	Symptoms []Symptom `json:"symptoms"`
	// Causes explain the symptoms, best first, Rank from 1.
	Causes []Cause `json:"causes"`
	// Findings are problems with no symptom yet, ranked the same way.
	Findings []Cause `json:"findings"`
	// Warnings say what the engine could not read or had to assume.
	Warnings []string `json:"warnings"`
	// Coverage says what the diagnosis could see, layer by layer, and what
	// it was blind to.
	Coverage Coverage `json:"coverage"`
}

// Entity names one thing with DESIGN.md's canonical keys (node, gpu, pod,
// namespace, workload, model, service, tenant, ...) or, in the generic
// layer, the --entity-label name.
type Entity map[string]string

// Symptom kinds (DESIGN.md), as internal/kinds registers them.
const (
	SymptomTrainingStall        = kinds.TrainingStall
	SymptomTrainingSlowdown     = kinds.TrainingSlowdown
	SymptomJobFailed            = kinds.JobFailed
	SymptomInferenceLatencyHigh = kinds.InferenceLatencyHigh
	SymptomTTFTHigh             = kinds.TTFTHigh
	SymptomQueueGrowing         = kinds.QueueGrowing
	SymptomErrorRateHigh        = kinds.ErrorRateHigh
	SymptomThroughputDrop       = kinds.ThroughputDrop
	SymptomSLOBurn              = kinds.SLOBurn
)

// Symptom is a user-visible effect on a workload, a model or a service.
type Symptom struct {
	Kind   string    `json:"kind"`
	Entity Entity    `json:"entity"`
	Since  time.Time `json:"since"`
	// Summary says what is wrong in one sentence.
	Summary string `json:"summary"`
	// ResolvedAt is set on a symptom that ended before the evaluation time
	// and did not recur: it is history, so it neither makes the cluster
	// unhealthy nor pages (DESIGN.md).
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// Current reports whether the symptom still holds at the evaluation time.
func (s Symptom) Current() bool { return s.ResolvedAt == nil }

// Cause is a probable root cause (in Report.Causes) or a finding (in
// Report.Findings).
type Cause struct {
	// Rank counts from 1, best first.
	Rank   int    `json:"rank"`
	Kind   string `json:"kind"`
	Entity Entity `json:"entity"`
	// Confidence is calibrated: among causes given 0.8, about 8 in 10 are
	// right.
	Confidence float64 `json:"confidence"`
	// Since is the cause's onset, when one was found.
	Since *time.Time `json:"since,omitempty"`
	// Summary is the page's headline for this cause.
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence"`
	// Action says what to do.
	Action string `json:"action,omitempty"`
	// Explains lists the indexes into Report.Symptoms this cause explains.
	Explains []int `json:"explains,omitempty"`
}

// Evidence is one signal that supports a cause.
type Evidence struct {
	// Signal is the metric (or canonical signal) read.
	Signal string `json:"signal"`
	// Query is PromQL that shows it.
	Query string `json:"query,omitempty"`
	// Summary says what it shows, with numbers.
	Summary string `json:"summary"`
}

// Cause and finding kinds (DESIGN.md), as internal/kinds registers them.
const (
	KindNVLinkDegraded      = kinds.NVLinkDegraded
	KindGPUXIDError         = kinds.GPUXIDError
	KindGPULost             = kinds.GPULost
	KindGPUThermalThrottle  = kinds.GPUThermalThrottle
	KindGPUPowerThrottle    = kinds.GPUPowerThrottle
	KindGPUMemoryErrors     = kinds.GPUMemoryErrors
	KindPCIeDegraded        = kinds.PCIeDegraded
	KindNodeDown            = kinds.NodeDown
	KindNodeCPUSaturated    = kinds.NodeCPUSaturated
	KindNodeMemoryPressure  = kinds.NodeMemoryPressure
	KindNodeNetworkDegraded = kinds.NodeNetworkDegraded
	KindInputPipelineSlow   = kinds.InputPipelineSlow
	KindPodOOMKilled        = kinds.PodOOMKilled
	KindPodCrashLoop        = kinds.PodCrashLoop
	KindPodEvicted          = kinds.PodEvicted
	KindStraggler           = kinds.Straggler
	KindCapacitySaturated   = kinds.CapacitySaturated
	KindKVCacheExhausted    = kinds.KVCacheExhausted
	KindDependencySlow      = kinds.DependencySlow
	KindTenantFailure       = kinds.TenantFailure
	KindBadRollout          = kinds.BadRollout
	KindModelDrift          = kinds.ModelDrift
	KindExporterDown        = kinds.ExporterDown
	KindGPUIdle             = kinds.GPUIdle
	KindMetricAnomaly       = kinds.MetricAnomaly
)
