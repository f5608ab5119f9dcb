package detect

import (
	"math"
	"slices"
)

// PeerZ scores each value against the others at the same instant: for each i,
// the robust z of vals[i] against the median and floored scale of vals
// without i (leave-one-out), as NewBaseline and Baseline.Z compute them. Use
// it across the GPUs of a node, the ranks of a job or the replicas of a
// deployment: the faulty one is the one unlike its peers.
//
// NaN in gives NaN out, and fewer than 2 other valid values gives NaN. ±Inf
// counts as no sample, like NaN, both as a value scored and as a peer. The
// result has the length of vals and is finite everywhere else when f.Abs > 0
// and the values are below 1e150 in magnitude. It costs O(n log n).
func PeerZ(vals []float64, f Floor) []float64 {
	out := make([]float64, len(vals))
	var buf [32]float64
	s := buf[:0]
	for _, v := range vals {
		if isFinite(v) {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	for i, v := range vals {
		if !isFinite(v) || len(s) < 3 {
			out[i] = math.NaN()
			continue
		}
		// Leave out one copy of v: the multiset is the same whichever copy.
		r, _ := slices.BinarySearch(s, v)
		at := func(k int) float64 {
			if k >= r {
				k++
			}
			return s[k]
		}
		n := len(s) - 1
		med := quantileAt(n, 0.5, at)
		iqr := quantileAt(n, 0.75, at) - quantileAt(n, 0.25, at)
		out[i] = Baseline{Median: med, Scale: f.scale(iqr/iqrToSigma, med)}.Z(v)
	}
	return out
}
