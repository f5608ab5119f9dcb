package eval

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Result is an evaluation: the scores per suite and every case's outcome.
type Result struct {
	// Suites are the tables, one per suite, in the order the cases named
	// them.
	Suites []Table `json:"suites"`
	// Cases are the per-case outcomes, in the order they were given.
	Cases []CaseResult `json:"cases"`
}

// Table is the scores of one suite.
type Table struct {
	Suite string `json:"suite"`
	// Horizon is how long after each onset time to detect was looked for.
	Horizon Seconds `json:"horizon_s"`
	// Runs counts the suite's cases, healthy ones included.
	Runs int `json:"runs"`
	// Kinds are the scores per fault kind (variants pooled), by kind.
	Kinds []KindScore `json:"kinds"`
	// Overall pools every fault of the suite; its FP counts every false
	// call, healthy runs included.
	Overall KindScore `json:"overall"`
	// Healthy scores the runs without faults.
	Healthy HealthyScore `json:"healthy"`
	// Calibration is the reliability table of every end-of-run cause and
	// finding.
	Calibration Calibration `json:"calibration"`
}

// KindScore is how the engine did on the faults of one kind (or all).
type KindScore struct {
	Kind string `json:"kind"`
	// Faults counts the injected faults; a run of two faults counts two.
	Faults int `json:"faults"`
	// AC1 and AC3: the fraction of faults named (kind and entity) at rank 1
	// and at a rank ≤ 3, among causes or findings.
	AC1 float64 `json:"ac1"`
	AC3 float64 `json:"ac3"`
	// TP counts faults whose entity a call names, FN those no call names,
	// FP the calls that name no fault's entity (kind ignored, Minder's
	// faulty-machine call).
	TP        int     `json:"tp"`
	FP        int     `json:"fp"`
	FN        int     `json:"fn"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	// TTDMedian and TTDWorst are the median and worst time from the onset
	// to the first rank-1 diagnosis, a fault never ranked first within the
	// horizon counting as infinitely late; nil when that is where they
	// fall (or there are no faults). TTDMissed counts those faults.
	TTDMedian *Seconds `json:"ttd_median_s"`
	TTDWorst  *Seconds `json:"ttd_worst_s"`
	TTDMissed int      `json:"ttd_missed"`

	ttds []float64
}

// HealthyScore is how the engine did on runs without faults.
type HealthyScore struct {
	Runs int `json:"runs"`
	// FalseAlarms counts the runs whose end-of-run report was not healthy.
	FalseAlarms int `json:"false_alarms"`
	// Confident counts the runs with a cause or finding at CallThreshold or
	// above.
	Confident int `json:"confident"`
}

// Calibration is a reliability table: predictions binned by confidence.
type Calibration struct {
	// Bins are [0, 0.1), [0.1, 0.2), ... [0.9, 1].
	Bins []Bin `json:"bins"`
	// Predictions counts every cause and finding binned.
	Predictions int `json:"predictions"`
	// ECE is the expected calibration error, Σ n_b/N · |accuracy_b −
	// confidence_b|.
	ECE float64 `json:"ece"`
}

// Bin is one confidence bin.
type Bin struct {
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Count int     `json:"count"`
	// MeanConfidence is the bin's mean confidence, Accuracy the fraction
	// of its predictions that name a fault of their run (0 when empty).
	MeanConfidence float64 `json:"mean_confidence"`
	Accuracy       float64 `json:"accuracy"`
}

// calibrationBins is the number of confidence bins.
const calibrationBins = 10

func newResult(cases []CaseResult, horizon time.Duration) *Result {
	res := &Result{Cases: cases}
	var order []string
	by := map[string][]CaseResult{}
	for _, c := range cases {
		if _, ok := by[c.Suite]; !ok {
			order = append(order, c.Suite)
		}
		by[c.Suite] = append(by[c.Suite], c)
	}
	for _, s := range order {
		t := aggregate(s, by[s])
		t.Horizon = Seconds(horizon.Seconds())
		res.Suites = append(res.Suites, t)
	}
	return res
}

// aggregate scores one suite's cases.
func aggregate(suite string, cases []CaseResult) Table {
	t := Table{Suite: suite, Runs: len(cases), Kinds: []KindScore{}, Overall: KindScore{Kind: "overall"}}
	kinds := map[string]*KindScore{}
	var preds []Prediction
	for _, c := range cases {
		preds = append(preds, c.Predictions...)
		falseCalls := 0
		for _, call := range c.Calls {
			if !call.Correct {
				falseCalls++
			}
		}
		t.Overall.FP += falseCalls
		if len(c.Faults) == 0 {
			t.Healthy.Runs++
			if !c.Healthy {
				t.Healthy.FalseAlarms++
			}
			if c.Confident {
				t.Healthy.Confident++
			}
			continue
		}
		seen := map[string]bool{}
		for _, f := range c.Faults {
			k := kinds[f.Kind]
			if k == nil {
				k = &KindScore{Kind: f.Kind}
				kinds[f.Kind] = k
			}
			k.add(f)
			t.Overall.add(f)
			if !seen[f.Kind] {
				seen[f.Kind] = true
				k.FP += falseCalls
			}
		}
	}
	for _, k := range kinds {
		k.finish()
		t.Kinds = append(t.Kinds, *k)
	}
	slices.SortFunc(t.Kinds, func(a, b KindScore) int { return strings.Compare(a.Kind, b.Kind) })
	t.Overall.finish()
	t.Calibration = calibrate(preds)
	return t
}

func (k *KindScore) add(f FaultResult) {
	k.Faults++
	if f.Rank == 1 {
		k.AC1++
	}
	if f.Rank >= 1 && f.Rank <= 3 {
		k.AC3++
	}
	if f.Called {
		k.TP++
	} else {
		k.FN++
	}
	if f.TTD != nil {
		k.ttds = append(k.ttds, float64(*f.TTD))
	} else {
		k.TTDMissed++
		k.ttds = append(k.ttds, math.Inf(1))
	}
}

// finish turns the counts into fractions.
func (k *KindScore) finish() {
	if k.Faults > 0 {
		k.AC1 /= float64(k.Faults)
		k.AC3 /= float64(k.Faults)
	}
	k.Precision = ratio(k.TP, k.TP+k.FP)
	k.Recall = ratio(k.TP, k.TP+k.FN)
	if k.Precision+k.Recall > 0 {
		k.F1 = 2 * k.Precision * k.Recall / (k.Precision + k.Recall)
	}
	if len(k.ttds) > 0 {
		slices.Sort(k.ttds)
		n := len(k.ttds)
		med := k.ttds[n/2]
		if n%2 == 0 {
			med = (k.ttds[n/2-1] + k.ttds[n/2]) / 2
		}
		k.TTDMedian = finiteSeconds(med)
		k.TTDWorst = finiteSeconds(k.ttds[n-1])
	}
	k.ttds = nil
}

func finiteSeconds(v float64) *Seconds {
	if math.IsInf(v, 0) {
		return nil
	}
	s := Seconds(v)
	return &s
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// calibrate bins predictions by confidence and computes the ECE.
func calibrate(preds []Prediction) Calibration {
	c := Calibration{Bins: make([]Bin, calibrationBins), Predictions: len(preds)}
	right := make([]int, calibrationBins)
	for i := range c.Bins {
		c.Bins[i].Low = float64(i) / calibrationBins
		c.Bins[i].High = float64(i+1) / calibrationBins
	}
	for _, p := range preds {
		conf := min(max(p.Confidence, 0), 1)
		if math.IsNaN(conf) {
			conf = 0
		}
		i := binOf(conf)
		c.Bins[i].Count++
		c.Bins[i].MeanConfidence += conf
		if p.Correct {
			right[i]++
		}
	}
	for i := range c.Bins {
		b := &c.Bins[i]
		if b.Count == 0 {
			continue
		}
		b.MeanConfidence /= float64(b.Count)
		b.Accuracy = float64(right[i]) / float64(b.Count)
		c.ECE += float64(b.Count) / float64(len(preds)) * math.Abs(b.Accuracy-b.MeanConfidence)
	}
	return c
}

// binOf is the calibration bin of a confidence in [0, 1]: the last bin
// whose lower edge (the float nearest i/10, as a literal 0.3 is) it
// reaches, so 0.3 is in [0.3, 0.4) and 1 in [0.9, 1].
func binOf(conf float64) int {
	i := calibrationBins - 1
	for i > 0 && conf < float64(i)/calibrationBins {
		i--
	}
	return i
}
