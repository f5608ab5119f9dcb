package slo

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Spec is a set of SLOs and of composite user-impact alerts: what a
// `vigil rules generate --slo FILE` file holds (see examples/slo.yaml and
// docs/slo.md).
type Spec struct {
	// SLOs are the objectives, each with its own rule file.
	SLOs []SLO `yaml:"slos"`
	// Composites are alerts that fire when several SLIs of one entity
	// worsen together (e.g. queue depth and latency both increasing).
	Composites []Composite `yaml:"composites"`

	// file and lines locate fields in the YAML the spec was parsed from.
	file  string
	lines map[string]int
}

// SLO is one objective. Exactly one SLI kind is set: a ratio or latency SLI
// has an objective over a window and burn-rate alerts; a gauge or peer SLI
// has a threshold and alerts when it is crossed for a while (For).
type SLO struct {
	// Name identifies the SLO: lower-case letters, digits and dashes. It is
	// the slo label of every generated rule and names the rule file.
	Name string `yaml:"name"`
	// Description says what the SLO protects, in one sentence.
	Description string `yaml:"description"`
	// Objective is the percentage of good events, in (0, 100): ratio and
	// latency SLIs only.
	Objective *float64 `yaml:"objective"`
	// Window is the SLO period, 28d or 30d (default 30d): ratio and latency
	// SLIs only.
	Window model.Duration `yaml:"window"`
	// By are the entity labels the SLI keeps (e.g. namespace, model): each
	// alert names one entity.
	By []string `yaml:"by"`
	// Severity is the highest severity the SLO raises: page (default) or
	// ticket. A ticket-only burn-rate SLO has no page alerts.
	Severity Severity `yaml:"severity"`
	// Symptom is the vigil_symptom label of its alerts, a DESIGN.md symptom
	// kind (default slo_burn).
	Symptom string `yaml:"symptom"`
	// For is how long a gauge or peer SLI must be out of bounds before its
	// alert fires (default 10m); burn-rate alerts need none.
	For model.Duration `yaml:"for"`
	// Labels are added to every alert of the SLO (e.g. team: ml-platform).
	Labels map[string]string `yaml:"labels"`
	// SLI says how the SLO is measured.
	SLI SLI `yaml:"sli"`
}

// SLI is one of the SLI kinds; exactly one is set.
type SLI struct {
	Ratio   *RatioSLI   `yaml:"ratio"`
	Latency *LatencySLI `yaml:"latency"`
	Gauge   *GaugeSLI   `yaml:"gauge"`
	Peer    *PeerSLI    `yaml:"peer"`
}

// RatioSLI is bad events over all events, both PromQL with {{.window}}
// where the range goes, as in Sloth: e.g.
// sum by (namespace) (rate(http_requests_total{code=~"5.."}[{{.window}}])).
// Both must be grouped by the SLO's By labels.
type RatioSLI struct {
	Errors string `yaml:"errors"`
	Total  string `yaml:"total"`
}

// LatencySLI counts an event as good when it took at most Threshold seconds,
// read from a histogram's buckets: Threshold must be one of its le bounds.
type LatencySLI struct {
	// Metric is the histogram's name (without _bucket), for one source.
	Metric string `yaml:"metric"`
	// Sources are alternative histograms (e.g. the names of several engine
	// versions), read together: for each entity the first that has data.
	Sources []Source `yaml:"sources"`
	// Threshold is the latency bound in seconds.
	Threshold float64 `yaml:"threshold"`
}

// GaugeSLI alerts when a gauge (or an expression) leaves its bounds.
type GaugeSLI struct {
	// Metric is the gauge's name, for one source.
	Metric string `yaml:"metric"`
	// Sources are alternative gauges, read together.
	Sources []Source `yaml:"sources"`
	// Expr is PromQL giving one series per entity, grouped by the SLO's By
	// labels, instead of Metric or Sources.
	Expr string `yaml:"expr"`
	// Aggregate combines the series of one entity: sum, avg, min or max
	// (default max).
	Aggregate string `yaml:"aggregate"`
	// Function reads each series over the range Over first: last, avg, min
	// or max (the *_over_time functions). last over 1w keeps a weekly
	// pushed score in force until the next push.
	Function string `yaml:"function"`
	// Over is the range of Function.
	Over model.Duration `yaml:"over"`
	// Above is the lowest healthy value: the alert fires below it.
	Above *float64 `yaml:"above"`
	// Below is the highest healthy value: the alert fires above it.
	Below *float64 `yaml:"below"`
	// Filter are label matchers on the recorded value (e.g. namespace!=""),
	// applied before alerting.
	Filter string `yaml:"filter"`
	// Record names the recording rule of the value (default slo:sli:value
	// with the slo label); a name of its own is written without slo labels,
	// for an autoscaler (KEDA, HPA) to consume.
	Record string `yaml:"record"`
}

// PeerSLI compares each entity with the peers of its group at the same
// moment (e.g. each GPU with the other GPUs of its job): it alerts when an
// entity is more than Tolerance below the group's median, so that a drop the
// whole group shares (a checkpoint) never alerts.
type PeerSLI struct {
	Metric  string   `yaml:"metric"`
	Sources []Source `yaml:"sources"`
	// Peers are the labels of a peer group, a subset of the SLO's By.
	Peers []string `yaml:"peers"`
	// Tolerance is the fraction below the median that is still healthy,
	// in (0, 1).
	Tolerance float64 `yaml:"tolerance"`
	// Min is the smallest peer median worth comparing with: below it the
	// group is idle or checkpointing, and relative gaps are noise. 0 always
	// compares.
	Min float64 `yaml:"min"`
	// Aggregate combines the series of one entity (default max).
	Aggregate string `yaml:"aggregate"`
}

// Source is one metric an SLI may read, and how its labels become the
// canonical entity labels.
type Source struct {
	// Metric is the stored name (a histogram's without _bucket).
	Metric string `yaml:"metric"`
	// Matchers select its series, e.g. job="vllm", method="psi".
	Matchers string `yaml:"matchers"`
	// Rename maps a canonical label to the stored labels that carry it, the
	// first non-empty one winning (e.g. model: [model_name]).
	Rename map[string][]string `yaml:"rename"`
	// Scale converts the metric's unit to the SLI's (seconds): 0.001 for
	// milliseconds. Default 1.
	Scale float64 `yaml:"scale"`
}

// Composite fires when, for one entity, every condition of When holds:
// e.g. queue depth increasing and inference latency increasing.
type Composite struct {
	// Name identifies the composite alert, as an SLO name does.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Symptom is the vigil_symptom label (default queue_growing).
	Symptom string `yaml:"symptom"`
	// Severity is page (default) or ticket.
	Severity Severity `yaml:"severity"`
	// When are the conditions, all required.
	When []Condition `yaml:"when"`
	// Window is the range over which a value's trend is measured with
	// deriv() (default 15m).
	Window model.Duration `yaml:"window"`
	// For is how long the conditions must hold (default 10m).
	For    model.Duration    `yaml:"for"`
	Labels map[string]string `yaml:"labels"`
}

// Condition holds when the value of any of the named SLOs is increasing:
// a gauge's value, a latency SLI's quantile, a ratio SLI's error ratio.
type Condition struct {
	Increasing []string `yaml:"increasing"`
}

// Severity is the severity label of an alert.
type Severity string

// The severities. SeverityNone is the watchdog's only.
const (
	SeverityPage   Severity = "page"
	SeverityTicket Severity = "ticket"
	SeverityNone   Severity = "none"
)

// Kind is the kind of an SLI.
type Kind string

// The SLI kinds.
const (
	KindRatio   Kind = "ratio"
	KindLatency Kind = "latency"
	KindGauge   Kind = "gauge"
	KindPeer    Kind = "peer"
)

// Symptoms are the symptom kinds of DESIGN.md, the values of the
// vigil_symptom label.
var symptoms = []string{"training_stall", "training_slowdown", "job_failed", "inference_latency_high",
	"ttft_high", "queue_growing", "error_rate_high", "throughput_drop", "slo_burn"}

// Symptoms returns the symptom kinds an alert's vigil_symptom may name.
func Symptoms() []string { return slices.Clone(symptoms) }

// Labels of generated rules.
const (
	LabelSeverity = "severity"
	LabelSLO      = "slo"
	LabelWindow   = "slo_window"
	LabelSymptom  = "vigil_symptom"
)

// WatchdogAlert is the name of the always-firing alert.
const WatchdogAlert = "VigilWatchdog"

// Defaults.
const (
	defaultWindow    = model.Duration(30 * 24 * time.Hour)
	defaultFor       = model.Duration(10 * time.Minute)
	defaultTrend     = model.Duration(15 * time.Minute)
	defaultAggregate = "max"
)

// Kind returns the kind of the SLO's SLI, or "" when none is set.
func (s *SLO) Kind() Kind {
	switch {
	case s.SLI.Ratio != nil:
		return KindRatio
	case s.SLI.Latency != nil:
		return KindLatency
	case s.SLI.Gauge != nil:
		return KindGauge
	case s.SLI.Peer != nil:
		return KindPeer
	}
	return ""
}

// burnRate says whether the SLO has an objective and burn-rate alerts.
func (s *SLO) burnRate() bool { k := s.Kind(); return k == KindRatio || k == KindLatency }

func (s *SLO) window() model.Duration {
	if s.Window == 0 {
		return defaultWindow
	}
	return s.Window
}

func (s *SLO) severity() Severity {
	if s.Severity == "" {
		return SeverityPage
	}
	return s.Severity
}

func (s *SLO) symptom() string {
	if s.Symptom == "" {
		return "slo_burn"
	}
	return s.Symptom
}

func (s *SLO) forDuration() model.Duration {
	if s.For == 0 {
		return defaultFor
	}
	return s.For
}

// objective returns the objective as a ratio in (0, 1).
func (s *SLO) objective() float64 { return *s.Objective / 100 }

// budget returns the error budget as a ratio, rounded so that 99.9 gives
// 0.001 and not 0.0010000000000000009.
func (s *SLO) budget() float64 { return round((100 - *s.Objective) / 100) }

// sources returns the sources of a latency, gauge or peer SLI, Metric as
// one source.
func (s *SLO) sources() []Source {
	var metric string
	var srcs []Source
	switch {
	case s.SLI.Latency != nil:
		metric, srcs = s.SLI.Latency.Metric, s.SLI.Latency.Sources
	case s.SLI.Gauge != nil:
		metric, srcs = s.SLI.Gauge.Metric, s.SLI.Gauge.Sources
	case s.SLI.Peer != nil:
		metric, srcs = s.SLI.Peer.Metric, s.SLI.Peer.Sources
	}
	if metric != "" {
		return []Source{{Metric: metric}}
	}
	return srcs
}

func (c *Composite) symptom() string {
	if c.Symptom == "" {
		return "queue_growing"
	}
	return c.Symptom
}

func (c *Composite) severity() Severity {
	if c.Severity == "" {
		return SeverityPage
	}
	return c.Severity
}

func (c *Composite) window() model.Duration {
	if c.Window == 0 {
		return defaultTrend
	}
	return c.Window
}

func (c *Composite) forDuration() model.Duration {
	if c.For == 0 {
		return defaultFor
	}
	return c.For
}

func (s Source) scale() float64 {
	if s.Scale == 0 {
		return 1
	}
	return s.Scale
}

// camel turns a dashed name into CamelCase for alert names: llm-ttft is
// LlmTtft.
func camel(name string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(name, "-") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
