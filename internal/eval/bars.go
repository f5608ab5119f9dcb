package eval

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/kinds"
)

// Bars are the scores an evaluation must reach (issue 6).
type Bars struct {
	// AC1 and AC3 are the least overall AC@1 and AC@3 of a suite.
	AC1, AC3 float64
	// FalseAlarms is the most healthy runs a suite may call unhealthy.
	FalseAlarms int
	// HardwareKinds must each be ranked first within TTDMedian at the
	// median and TTDWorst at worst after the onset.
	HardwareKinds       []string
	TTDMedian, TTDWorst time.Duration
	// UnseenDelta is how far the unseen suite's AC@1, AC@3 and F1 may be
	// from the main suite's, when a Result holds both.
	UnseenDelta float64
	// Exempt are the suites reported but not barred.
	Exempt []string
	// Suites are bars of their own for some suites, in place of AC1, AC3
	// and FalseAlarms.
	Suites map[string]SuiteBars
}

// SuiteBars are one suite's own bars.
type SuiteBars struct {
	AC1, AC3    float64
	FalseAlarms int
	// TTD holds the suite to the hardware kinds' time to detect.
	TTD bool
}

// of returns the bars suite is held to.
func (b Bars) of(suite string) SuiteBars {
	if s, ok := b.Suites[suite]; ok {
		return s
	}
	return SuiteBars{AC1: b.AC1, AC3: b.AC3, FalseAlarms: b.FalseAlarms, TTD: true}
}

// DefaultBars returns issue 6's bars: AC@1 ≥ 0.90, AC@3 ≥ 0.97, no false
// alarm, GPU hardware faults ranked first at median ≤ 90 s and worst ≤
// 120 s, the unseen suite within 0.05 of the main one; the subtle and later
// suites are not barred. The robust suite's bars are no false alarm and
// AC@1 ≥ 0.95 (issue 15), with no bar on the time to detect.
func DefaultBars() Bars {
	return Bars{
		AC1: 0.90, AC3: 0.97, FalseAlarms: 0,
		HardwareKinds: kinds.OfLayer(kinds.LayerGPU),
		TTDMedian:     90 * time.Second, TTDWorst: 120 * time.Second,
		UnseenDelta: 0.05,
		Exempt:      []string{SuiteSubtle, SuiteLater},
		Suites:      map[string]SuiteBars{SuiteRobust: {AC1: 0.95, AC3: 0.97, FalseAlarms: 0}},
	}
}

// Check returns the bars r misses, one sentence each; none when it passes.
func (r *Result) Check(b Bars) []string {
	var out []string
	miss := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, t := range r.Suites {
		if slices.Contains(b.Exempt, t.Suite) {
			continue
		}
		o, sb := t.Overall, b.of(t.Suite)
		if o.Faults > 0 && o.AC1 < sb.AC1 {
			miss("suite %s: AC@1 %.3f is below %.2f", t.Suite, o.AC1, sb.AC1)
		}
		if o.Faults > 0 && o.AC3 < sb.AC3 {
			miss("suite %s: AC@3 %.3f is below %.2f", t.Suite, o.AC3, sb.AC3)
		}
		if t.Healthy.FalseAlarms > sb.FalseAlarms {
			miss("suite %s: %d false alarms on %d healthy runs (at most %d allowed)", t.Suite, t.Healthy.FalseAlarms, t.Healthy.Runs, sb.FalseAlarms)
		}
		for _, k := range t.Kinds {
			if !sb.TTD || !slices.Contains(b.HardwareKinds, k.Kind) {
				continue
			}
			if k.TTDMedian == nil || k.TTDMedian.Duration() > b.TTDMedian {
				miss("suite %s: %s is ranked first %s after the onset at the median, later than %s", t.Suite, k.Kind, ttdWords(k.TTDMedian, t.Horizon), b.TTDMedian)
			}
			if k.TTDWorst == nil || k.TTDWorst.Duration() > b.TTDWorst {
				miss("suite %s: %s is ranked first %s after the onset at worst, later than %s", t.Suite, k.Kind, ttdWords(k.TTDWorst, t.Horizon), b.TTDWorst)
			}
		}
	}
	main, unseen := r.suite(SuiteMain), r.suite(SuiteUnseen)
	if main != nil && unseen != nil && !slices.Contains(b.Exempt, SuiteUnseen) {
		for _, s := range []struct {
			name     string
			main, un float64
		}{{"AC@1", main.Overall.AC1, unseen.Overall.AC1}, {"AC@3", main.Overall.AC3, unseen.Overall.AC3}, {"F1", main.Overall.F1, unseen.Overall.F1}} {
			if math.Abs(s.main-s.un) > b.UnseenDelta+1e-9 {
				miss("suite unseen: %s %.3f is more than %.2f from the main suite's %.3f", s.name, s.un, b.UnseenDelta, s.main)
			}
		}
	}
	return out
}

func (r *Result) suite(name string) *Table {
	for i := range r.Suites {
		if r.Suites[i].Suite == name {
			return &r.Suites[i]
		}
	}
	return nil
}

func ttdWords(s *Seconds, horizon Seconds) string {
	if s == nil {
		return "not within " + horizon.Duration().String()
	}
	return s.Duration().String()
}
