package petshop

import (
	"cmp"
	"math"
	"slices"

	"github.com/vigil-obs/vigil/internal/detect"
)

// naiveRank is the naive baseline Vigil must beat on the same issues: the
// services ranked by how far their average latency rose, at its highest
// from the noticed time on, over its own median before (the normal
// period's history, or the issue window's rows before the noticed time
// when the data set has no normal period). A service with no latency
// before or after is not ranked.
func naiveRank(sc *scenario, is *issue, history int64) []string {
	noticed := int64(is.target.Target.Timestamp)
	type score struct {
		node string
		rise float64
	}
	var scores []score
	for _, k := range is.metrics.cols {
		if k.metric != "latency" || k.stat != "Average" {
			continue
		}
		var before []float64
		if nv := sc.normal.get(k); nv != nil && len(sc.normal.ts) > 0 {
			last := sc.normal.ts[len(sc.normal.ts)-1]
			for i, t := range sc.normal.ts {
				if t > last-history && !math.IsNaN(nv[i]) {
					before = append(before, nv[i])
				}
			}
		}
		iv := is.metrics.get(k)
		after := math.NaN()
		for i, t := range is.metrics.ts {
			switch {
			case math.IsNaN(iv[i]):
			case t < noticed:
				if len(sc.normal.ts) == 0 {
					before = append(before, iv[i])
				}
			case math.IsNaN(after) || iv[i] > after:
				after = iv[i]
			}
		}
		base := detect.Median(before)
		if len(before) == 0 || math.IsNaN(after) || !(base > 0) {
			continue
		}
		scores = append(scores, score{k.node, after / base})
	}
	slices.SortStableFunc(scores, func(a, b score) int { return cmp.Compare(b.rise, a.rise) })
	var out []string
	for _, s := range scores {
		if !slices.Contains(out, s.node) {
			out = append(out, s.node)
		}
	}
	return out
}
