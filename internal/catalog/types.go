package catalog

import "math"

// Vocabulary names one exporter or convention: a family of metric names and
// label names that come together.
type Vocabulary string

// The vocabularies the catalog knows.
const (
	DCGMExporter     Vocabulary = "dcgm-exporter"
	VLLM             Vocabulary = "vllm"
	NIM              Vocabulary = "nim"
	SGLang           Vocabulary = "sglang"
	TGI              Vocabulary = "tgi"
	Triton           Vocabulary = "triton"
	TRTLLM           Vocabulary = "trtllm"
	KServe           Vocabulary = "kserve"
	RayServe         Vocabulary = "ray-serve"
	OTelGenAI        Vocabulary = "otel-genai"
	KubeStateMetrics Vocabulary = "kube-state-metrics"
	NodeExporter     Vocabulary = "node-exporter"
	CAdvisor         Vocabulary = "cadvisor"
	// Training is a job's own progress metric, configured in Options.
	Training Vocabulary = "training"
)

// Vocabularies returns every vocabulary, in the order docs list them.
func Vocabularies() []Vocabulary {
	return []Vocabulary{DCGMExporter, VLLM, NIM, SGLang, TGI, Triton, TRTLLM, KServe,
		RayServe, OTelGenAI, KubeStateMetrics, NodeExporter, CAdvisor, Training}
}

// Level is the entity a signal describes: the level whose key identifies one
// of its series.
type Level string

// The entity levels.
const (
	LevelNode        Level = "node"
	LevelGPU         Level = "gpu"
	LevelGPUInstance Level = "gpu_instance"
	LevelPod         Level = "pod"
	LevelContainer   Level = "container"
	LevelWorkload    Level = "workload"
	LevelModel       Level = "model"
	LevelService     Level = "service"
	LevelTenant      Level = "tenant"
	LevelJob         Level = "job"
)

// Type is the true metric type of a signal, whatever an exporter's # TYPE
// line claims.
type Type string

// The metric types.
const (
	// Counter only grows (resets on restart); read it through rate().
	Counter Type = "counter"
	// Gauge is a value at an instant, rates included; read it as is.
	Gauge Type = "gauge"
	// Histogram has _bucket, _sum and _count series.
	Histogram Type = "histogram"
	// Summary has quantile series and _sum and _count.
	Summary Type = "summary"
	// Info is a constant 1 whose labels carry the information.
	Info Type = "info"
	// StateSet is one 0/1 series per state, the state in a label.
	StateSet Type = "stateset"
)

// Units of canonical signals. Ratios are in [0, 1] ("1"), never percents.
const (
	UnitRatio     = "1"
	UnitPercent   = "%"
	UnitSeconds   = "s"
	UnitBytes     = "bytes"
	UnitBytesPerS = "bytes/s"
	UnitMiB       = "MiB"
	UnitMiBPerS   = "MiB/s"
	UnitWatts     = "W"
	UnitJoules    = "J"
	UnitMHz       = "MHz"
	UnitCelsius   = "Cel"
	UnitCount     = "count"
	UnitPerSecond = "1/s"
	UnitTokens    = "tokens"
	UnitRequests  = "requests"
	UnitCode      = "code"
	UnitBitmask   = "bitmask"
	UnitMicros    = "us"
	UnitFLOPS     = "FLOP/s"
)

// Range is the healthy range of a signal where its vendor documents one.
// Min and Max are inclusive; an open end is ±Inf.
type Range struct {
	Min, Max float64
	// Note says where the range comes from or what crossing it means.
	Note string
}

// Contains reports whether v is inside the range.
func (r Range) Contains(v float64) bool { return v >= r.Min && v <= r.Max }

// AtMost is the range (-Inf, max].
func AtMost(max float64, note string) *Range {
	return &Range{Min: math.Inf(-1), Max: max, Note: note}
}

// AtLeast is the range [min, +Inf).
func AtLeast(min float64, note string) *Range {
	return &Range{Min: min, Max: math.Inf(1), Note: note}
}

// Aggregation says how series of one signal combine across entities.
type Aggregation string

// The aggregations.
const (
	Sum Aggregation = "sum"
	Avg Aggregation = "avg"
	Max Aggregation = "max"
	Min Aggregation = "min"
)

// Signal is one canonical thing Vigil knows how to read.
type Signal struct {
	// Name is canonical and stable: "<domain>.<what>", e.g. gpu.tensor_active.
	Name string
	// Level is the entity one series describes.
	Level Level
	// Type is the true type. A Source may differ (Source.Type).
	Type Type
	// Unit is the canonical unit; Source.Scale converts to it.
	Unit string
	// Meaning says what the signal measures, in one or two sentences.
	Meaning string
	// Healthy is the vendor-documented healthy range, or nil.
	Healthy *Range
	// Agg combines series across entities (default Sum for counters and
	// histograms, Avg for gauges).
	Agg Aggregation
	// Sources are the metrics that carry the signal, preferred first.
	Sources []Source
}

// Source is one metric that carries a signal in one vocabulary.
type Source struct {
	// Vocabulary is the exporter or convention.
	Vocabulary Vocabulary
	// Metric is the metric family name as stored (a histogram's base name,
	// without _bucket, _sum or _count).
	Metric string
	// Type is this metric's true type when it differs from the signal's
	// (e.g. a summary where others have a histogram); empty means the signal's.
	Type Type
	// Declared is the type the exporter's # TYPE line claims when it differs
	// from the true type (e.g. DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is declared
	// counter but is a gauge: never rate() it).
	Declared Type
	// CheckMonotonic says the true type is in doubt (exporters disagree or
	// document it loosely): check at run time whether the series ever
	// decreases before reading it as a counter.
	CheckMonotonic bool
	// Scale multiplies the metric's value into the signal's unit; 0 means 1.
	Scale float64
	// Field is the DCGM field ID, for dcgm-exporter.
	Field int
	// Labels are the metric's labels that carry meaning beyond entities
	// (xid, finished_reason, reason, phase, ...).
	Labels []string
	// Versions says which exporter versions emit this name.
	Versions string
	// Note is what a reader must know to use it correctly.
	Note string
}

// TrueType returns the source's true type: Type, or the signal's.
func (s Source) TrueType(sig Signal) Type {
	if s.Type != "" {
		return s.Type
	}
	return sig.Type
}

// Factor returns Scale, or 1 when unset.
func (s Source) Factor() float64 {
	if s.Scale == 0 {
		return 1
	}
	return s.Scale
}

// Ignored is a metric of an upstream list the catalog knowingly leaves out.
type Ignored struct {
	Vocabulary Vocabulary
	Metric     string
	// Reason says why, as "ignored, because ..." would end.
	Reason string
}

// Match is the result of looking up a stored metric name.
type Match struct {
	// Signal is the canonical signal.
	Signal *Signal
	// Source is the source whose metric matched.
	Source Source
	// Suffix is the histogram or summary series suffix that was stripped
	// (_bucket, _sum, _count), or empty.
	Suffix string
}
