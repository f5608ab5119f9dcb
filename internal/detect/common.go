package detect

import "math"

const (
	// commonWindow is how far, in points, from its own onset a series'
	// change probabilities count towards the common onset.
	commonWindow = 15
	// maxWeight caps a series' weight, in Thresholds, so that one series
	// with a tiny reference scale cannot outvote the others.
	maxWeight = 4
)

// CommonOnset is where many series change together, as BARO-style root-cause
// analysis needs it: first when the anomaly started across all metrics, then
// (by the caller) each series ranked by its robust deviation after that onset
// against before it.
//
// Each series with a persistent shift (Onset with o) votes with its
// ChangeProb (robustly standardised, hazard DefaultHazardLambda), weighted by how far its later
// level deviates (|Shift.Z| in Thresholds, between 1 and 4) and counted only
// within 15 points of the series' own onset, so that a blip elsewhere does not
// vote. The votes are summed over series and the argmax, ties to the earliest,
// is the common onset. Series without a persistent shift do not vote; ok is
// false when no series has one.
//
// Series may differ in length only if aligned at the end (they share their
// last timestamp): the index returned is into the longest series. The cost
// is one Onset per series and one ChangeProb per shifted series.
func CommonOnset(series [][]float64, o OnsetOptions) (int, bool) {
	o = o.withDefaults()
	n := 0
	for _, xs := range series {
		n = max(n, len(xs))
	}
	votes := make([]float64, n)
	earliest, found := n, false
	for _, xs := range series {
		s, ok := Onset(xs, o)
		if !ok {
			continue
		}
		found = true
		off := n - len(xs)
		earliest = min(earliest, off+s.Index)
		w := min(math.Abs(s.Z)/o.Threshold, maxWeight)
		p := ChangeProb(xs, DefaultHazardLambda)
		lo, hi := max(0, s.Index-commonWindow), min(len(xs), s.Index+commonWindow+1)
		for i := lo; i < hi; i++ {
			votes[off+i] += w * p[i]
		}
	}
	if !found {
		return 0, false
	}
	best := earliest
	for i, v := range votes {
		if v > votes[best] || v == votes[best] && i < best && v > 0 {
			best = i
		}
	}
	return best, true
}
