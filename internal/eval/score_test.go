package eval

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
)

// TestCalibrate bins hand-made predictions; the ECE is computed by hand.
func TestCalibrate(t *testing.T) {
	p := func(conf float64, ok bool) Prediction { return Prediction{Confidence: conf, Correct: ok} }
	c := calibrate([]Prediction{
		// [0.0, 0.1): 2 predictions, mean 0.05, none right: |0 − 0.05| = 0.05
		p(0.02, false), p(0.08, false),
		// [0.3, 0.4): 0.3 lands here, not in [0.2, 0.3); 1 of 2 right,
		// mean 0.35: |0.5 − 0.35| = 0.15
		p(0.3, true), p(0.4-1e-12, false),
		// [0.9, 1]: 1 lands in the last bin; 3 of 4 right, mean 0.95:
		// |0.75 − 0.95| = 0.2
		p(0.9, true), p(0.95, true), p(0.95, true), p(1, false),
	})
	require.Equal(t, 8, c.Predictions)
	require.Len(t, c.Bins, 10)
	counts := make([]int, 10)
	for i, b := range c.Bins {
		counts[i] = b.Count
		require.InDelta(t, float64(i)/10, b.Low, 1e-12)
	}
	require.Equal(t, []int{2, 0, 0, 2, 0, 0, 0, 0, 0, 4}, counts)
	require.InDelta(t, 0.05, c.Bins[0].MeanConfidence, 1e-9)
	require.InDelta(t, 0.0, c.Bins[0].Accuracy, 1e-9)
	require.InDelta(t, 0.35, c.Bins[3].MeanConfidence, 1e-9)
	require.InDelta(t, 0.5, c.Bins[3].Accuracy, 1e-9)
	require.InDelta(t, 0.95, c.Bins[9].MeanConfidence, 1e-9)
	require.InDelta(t, 0.75, c.Bins[9].Accuracy, 1e-9)
	// ECE = 2/8·0.05 + 2/8·0.15 + 4/8·0.2 = 0.0125 + 0.0375 + 0.1 = 0.15
	require.InDelta(t, 0.15, c.ECE, 1e-9)

	empty := calibrate(nil)
	require.Zero(t, empty.ECE)
	require.Len(t, empty.Bins, 10)
}

var (
	faultA = sim.Fault{Kind: "nvlink_degraded", Entity: map[string]string{"node": "gpu-node-06", "gpu": "3"}, Onset: sim.DefaultStart.Add(30 * time.Minute)}
	faultB = sim.Fault{Kind: "pod_oom_killed", Entity: map[string]string{"namespace": "inference", "pod": "vllm-1"}, Onset: sim.DefaultStart.Add(20 * time.Minute)}
)

// judged builds the outcomes of three fault runs and two healthy ones
// from reports made by answer, as Run would at the end of each run.
func judged(t *testing.T, answer func(truth []sim.Fault) *diagnose.Report) []CaseResult {
	t.Helper()
	var out []CaseResult
	for _, truth := range [][]sim.Fault{{faultA}, {faultB}, {faultA, faultB}, nil, nil} {
		cfg := sim.Config{Duration: time.Hour}.Resolve()
		r := judge(Case{Suite: "main", Scenario: "x", Seed: 1}, cfg, truth, answer(truth))
		for i := range r.Faults {
			s := Seconds(60)
			r.Faults[i].TTD = &s
		}
		out = append(out, *r)
	}
	return out
}

// report ranks causes as given, healthy when nothing reaches 0.5.
func report(causes ...diagnose.Cause) *diagnose.Report {
	rep := &diagnose.Report{Healthy: true, Causes: []diagnose.Cause{}, Findings: []diagnose.Cause{}}
	for i, c := range causes {
		c.Rank = i + 1
		rep.Causes = append(rep.Causes, c)
		if c.Confidence >= 0.5 {
			rep.Healthy = false
		}
	}
	return rep
}

func TestScoresOracle(t *testing.T) {
	cases := judged(t, func(truth []sim.Fault) *diagnose.Report {
		var cs []diagnose.Cause
		for _, f := range truth {
			cs = append(cs, diagnose.Cause{Kind: f.Kind, Entity: f.Entity, Confidence: 0.95})
		}
		return report(cs...)
	})
	tab := aggregate("main", cases)
	o := tab.Overall
	require.Equal(t, 4, o.Faults)
	require.Equal(t, 1.0, o.AC1)
	require.Equal(t, 1.0, o.AC3)
	require.Equal(t, 1.0, o.Precision)
	require.Equal(t, 0.75, o.Recall, "one call per run: the pair's second fault is not called")
	require.Equal(t, HealthyScore{Runs: 2}, tab.Healthy)
	require.LessOrEqual(t, tab.Calibration.ECE, 0.05+1e-9)
	require.Equal(t, 4, tab.Calibration.Predictions)
	require.Equal(t, Seconds(60), *o.TTDMedian)
	require.Equal(t, []string{"nvlink_degraded", "pod_oom_killed"}, []string{tab.Kinds[0].Kind, tab.Kinds[1].Kind})
	require.Empty(t, (&Result{Suites: []Table{tab}}).Check(Bars{AC1: 0.9, AC3: 0.97, HardwareKinds: DefaultBars().HardwareKinds,
		TTDMedian: 90 * time.Second, TTDWorst: 120 * time.Second}))
}

func TestScoresWrongEntity(t *testing.T) {
	cases := judged(t, func(truth []sim.Fault) *diagnose.Report {
		// The right kind on the wrong node, also on healthy runs.
		return report(diagnose.Cause{Kind: faultA.Kind, Entity: diagnose.Entity{"node": "gpu-node-01"}, Confidence: 0.9})
	})
	tab := aggregate("main", cases)
	o := tab.Overall
	require.Equal(t, 0.0, o.AC1)
	require.Equal(t, 0.0, o.AC3)
	require.Equal(t, 0, o.TP)
	require.Equal(t, 5, o.FP, "one false call per run, healthy runs included")
	require.Equal(t, 4, o.FN)
	require.Equal(t, 0.0, o.F1)
	require.Equal(t, HealthyScore{Runs: 2, FalseAlarms: 2, Confident: 2}, tab.Healthy)
	require.InDelta(t, 0.9, tab.Calibration.ECE, 1e-9, "all wrong at 0.9")
	failed := (&Result{Suites: []Table{tab}}).Check(DefaultBars())
	require.Contains(t, failed, "suite main: AC@1 0.000 is below 0.90")
	require.Contains(t, failed, "suite main: 2 false alarms on 2 healthy runs (at most 0 allowed)")
}

func TestScoresWrongKind(t *testing.T) {
	cases := judged(t, func(truth []sim.Fault) *diagnose.Report {
		var cs []diagnose.Cause
		for _, f := range truth {
			cs = append(cs, diagnose.Cause{Kind: "straggler", Entity: f.Entity, Confidence: 0.7})
		}
		return report(cs...)
	})
	tab := aggregate("main", cases)
	o := tab.Overall
	require.Equal(t, 0.0, o.AC1, "the kind must match for AC@k")
	require.Equal(t, 3, o.TP, "the entity call ignores the kind")
	require.Equal(t, 0, o.FP)
	require.Equal(t, 1.0, o.Precision)
	require.Zero(t, tab.Healthy.FalseAlarms)
	require.InDelta(t, 0.7, tab.Calibration.ECE, 1e-9)
}

// TestScoresFindings: findings count for AC@k and make a call of their own.
func TestScoresFindings(t *testing.T) {
	idle := sim.Fault{Kind: "gpu_idle", Entity: map[string]string{"namespace": "research", "pod": "notebook-0"}}
	strag := sim.Fault{Kind: "straggler", Entity: map[string]string{"node": "gpu-node-04"}}
	truth := []sim.Fault{strag, idle}
	rep := &diagnose.Report{
		Causes:   []diagnose.Cause{{Rank: 1, Kind: "straggler", Entity: diagnose.Entity{"node": "gpu-node-04"}, Confidence: 0.8}},
		Findings: []diagnose.Cause{{Rank: 1, Kind: "gpu_idle", Entity: diagnose.Entity{"namespace": "research", "pod": "notebook-0"}, Confidence: 0.99}},
	}
	r := judge(Case{Suite: "main", Scenario: "straggler+gpu_idle"}, sim.Config{}, truth, rep)
	require.Equal(t, 1, r.Faults[0].Rank)
	require.Equal(t, 1, r.Faults[1].Rank)
	require.True(t, r.Faults[0].Called)
	require.True(t, r.Faults[1].Called)
	require.Len(t, r.Calls, 2)
	require.Len(t, r.Predictions, 2)
	require.True(t, r.Predictions[1].Finding)
}

// TestTTDMissed: a fault never ranked first makes the worst (and, when it
// is the middle, the median) time to detect "not within the horizon".
func TestTTDMissed(t *testing.T) {
	s := func(v float64) *Seconds { x := Seconds(v); return &x }
	var k KindScore
	for _, ttd := range []*Seconds{s(30), s(90), nil} {
		k.add(FaultResult{TTD: ttd})
	}
	k.finish()
	require.Equal(t, Seconds(90), *k.TTDMedian)
	require.Nil(t, k.TTDWorst)
	require.Equal(t, 1, k.TTDMissed)

	k = KindScore{}
	for _, ttd := range []*Seconds{s(30), s(60), s(90), s(120)} {
		k.add(FaultResult{TTD: ttd})
	}
	k.finish()
	require.Equal(t, Seconds(75), *k.TTDMedian)
	require.Equal(t, Seconds(120), *k.TTDWorst)

	tab := Table{Suite: "small", Horizon: 600, Kinds: []KindScore{{Kind: "gpu_lost", Faults: 2, AC1: 1, AC3: 1, TTDMedian: s(60)}}, Overall: KindScore{Faults: 2, AC1: 1, AC3: 1}}
	require.Equal(t, []string{
		"suite small: gpu_lost is ranked first not within 10m0s after the onset at worst, later than 2m0s",
	}, (&Result{Suites: []Table{tab}}).Check(DefaultBars()))
}

// TestCheckUnseen compares the unseen suite with the main one; exempt
// suites are not barred.
func TestCheckUnseen(t *testing.T) {
	tab := func(name string, ac1 float64) Table {
		return Table{Suite: name, Overall: KindScore{Faults: 10, AC1: ac1, AC3: 1, F1: 1}}
	}
	r := &Result{Suites: []Table{tab("main", 1), tab("unseen", 0.92), tab("subtle", 0.2)}}
	require.Equal(t, []string{"suite unseen: AC@1 0.920 is more than 0.05 from the main suite's 1.000"}, r.Check(DefaultBars()))
	r = &Result{Suites: []Table{tab("main", 0.96), tab("unseen", 0.91)}}
	require.Empty(t, r.Check(DefaultBars()))
}

// TestWriteText prints the same bytes for the same result, kinds sorted.
func TestWriteText(t *testing.T) {
	res := newResult(judged(t, func(truth []sim.Fault) *diagnose.Report {
		var cs []diagnose.Cause
		for _, f := range truth {
			cs = append(cs, diagnose.Cause{Kind: f.Kind, Entity: f.Entity, Confidence: 0.95})
		}
		return report(cs...)
	}), DefaultHorizon)
	var a, b bytes.Buffer
	require.NoError(t, res.WriteText(&a))
	require.NoError(t, res.WriteText(&b))
	require.Equal(t, a.String(), b.String())
	out := a.String()
	require.Contains(t, out, "suite main: 5 runs, 4 faults, 2 healthy\n")
	require.Regexp(t, `(?m)^kind\s+faults\s+AC@1\s+AC@3\s+P\s+R\s+F1\s+TTD median\s+TTD worst\s+not first in 10m0s`, out)
	require.Regexp(t, `(?m)^nvlink_degraded\s+2\s+1\.00\s+1\.00\s+1\.00\s+1\.00\s+1\.00\s+1m0s\s+1m0s\s+0\s*$`, out)
	require.Less(t, bytes.Index(a.Bytes(), []byte("nvlink_degraded")), bytes.Index(a.Bytes(), []byte("pod_oom_killed")))
	require.Regexp(t, `(?m)^overall\s+4\s+1\.00`, out)
	require.Contains(t, out, "healthy runs: 2, false alarms (not healthy): 0, with a cause or finding ≥ 0.5: 0\n")
	require.Regexp(t, `(?m)^\[0\.9, 1\.0\]\s+4\s+0\.95\s+1\.00\s*$`, out)
	require.Contains(t, out, "ECE 0.050\n")
	t.Log("\n" + out)
}
