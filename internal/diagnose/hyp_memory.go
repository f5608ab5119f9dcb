package diagnose

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// hypMemoryErrors: uncorrectable ECC errors or uncorrectable row remaps
// inside the window; a corrected-error rate that keeps rising with
// repeated correctable remaps is weaker evidence. One correctable remap is
// the memory doing its job.
func hypMemoryErrors(ctx context.Context, an *analysis) ([]*candidate, error) {
	type reading struct {
		signal string
		thr    float64
		strong bool
	}
	byGPU := map[string]*candidate{}
	var order []string
	for _, rd := range []reading{
		{"gpu.ecc_dbe_volatile", 0, true}, {"gpu.remapped_rows_uncorrectable", 0, true},
		{"gpu.row_remap_failure", 0, true}, {"gpu.ecc_sbe_volatile", 0, false}, {"gpu.remapped_rows_correctable", 0, false},
	} {
		t, err := an.v.sig(ctx, rd.signal)
		if err != nil {
			return nil, err
		}
		sp, _ := an.v.sigSpec(rd.signal)
		for _, r := range t.rows {
			vals := r.v
			if sp.mode == asGauge {
				// Counts the exporter reports as gauges (remapped rows):
				// only a rise inside the window is news.
				vals = increases(vals)
			}
			a := activityOf(vals, rd.thr)
			if a.steps == 0 {
				continue
			}
			node, gpu := r.ent[catalog.KeyNode], r.ent[catalog.KeyGPU]
			k := gpuKey(node, gpu)
			c := byGPU[k]
			if c == nil {
				c = an.gpuCandidate(KindGPUMemoryErrors, node, gpu)
				c.onset = an.v.time(a.first)
				c.headline = fmt.Sprintf("%s GPU %s memory errors", node, gpu)
				c.action = fmt.Sprintf("drain %s and reset GPU %s (row remapping needs a reset); replace the GPU if uncorrectable errors return", node, gpu)
				byGPU[k] = c
				order = append(order, k)
			}
			if t := an.v.time(a.first); t.Before(c.onset) {
				c.onset = t
			}
			c.evidence = append(c.evidence, Evidence{Signal: sp.metric, Query: an.v.query(rd.signal, gpuMatchers(an.v, node, gpu)),
				Summary: fmt.Sprintf("+%.0f in %d steps from %s", a.total, a.steps, an.v.time(a.first).Format(time.TimeOnly))})
			s := 0.1
			switch {
			case rd.strong:
				s = 0.9
			case rd.signal == "gpu.ecc_sbe_volatile" && a.steps >= 5:
				s = 0.3
			case rd.signal == "gpu.remapped_rows_correctable" && a.steps >= 2:
				s = 0.3
			}
			c.strength = 1 - (1-c.strength)*(1-s)
			c.direct = c.direct || rd.strong
		}
	}
	slices.Sort(order)
	out := make([]*candidate, 0, len(order))
	for _, k := range order {
		out = append(out, byGPU[k])
	}
	return out, nil
}
