package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// hypNodeNetwork: an InfiniBand port that leaves ACTIVE or goes down, or
// symbol and receive errors that keep climbing step after step.
func hypNodeNetwork(ctx context.Context, an *analysis) ([]*candidate, error) {
	cands := map[string]*candidate{}
	get := func(node string, step int) *candidate {
		c := cands[node]
		if c == nil {
			c = an.nodeCandidate(KindNodeNetworkDegraded, node)
			c.onset = an.v.time(step)
			c.headline = fmt.Sprintf("%s InfiniBand degraded", node)
			c.action = fmt.Sprintf("check %s's InfiniBand ports (ibstat, ibdiagnet) and reseat or replace the cable; restart the job on healthy nodes if collectives stay slow", node)
			cands[node] = c
		}
		if t := an.v.time(step); t.Before(c.onset) {
			c.onset = t
		}
		return c
	}
	state, err := an.v.sig(ctx, "node.ib_state", "device", "port")
	if err != nil {
		return nil, err
	}
	for _, r := range state.rows {
		i0 := firstValid(r.v)
		if i0 < 0 || r.v[i0] != 4 {
			continue
		}
		bad := episodes(an.v.n, func(i int) bool { return !math.IsNaN(r.v[i]) && r.v[i] != 4 }, 1)
		if len(bad) == 0 {
			continue
		}
		node := r.ent[catalog.KeyNode]
		c := get(node, bad[0].start)
		c.strength, c.direct = 1-(1-c.strength)*0.1, true
		c.evidence = append(c.evidence, Evidence{Signal: "node_infiniband_state_id",
			Query:   fmt.Sprintf(`node_infiniband_state_id{device=%q, port=%q}`, r.extra["device"], r.extra["port"]),
			Summary: fmt.Sprintf("port %s/%s left ACTIVE at %s", r.extra["device"], r.extra["port"], an.v.time(bad[0].start).Format(time.TimeOnly))})
	}
	for _, s := range []string{"node.ib_link_downed", "node.ib_symbol_errors", "node.ib_receive_errors", "node.network_receive_errors"} {
		t, err := an.v.sig(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, r := range t.rows {
			a := activityOf(r.v, 0)
			if a.steps == 0 || s != "node.ib_link_downed" && a.steps < 3 {
				continue
			}
			node := r.ent[catalog.KeyNode]
			c := get(node, a.first)
			st := 0.4
			perMin := a.total / (float64(an.v.n-a.first) * an.v.step.Minutes())
			switch {
			case s == "node.ib_link_downed":
				st = 0.8
			case perMin >= 10:
				st = 0.75
			}
			c.strength = 1 - (1-c.strength)*(1-st)
			c.direct = c.direct || st >= 0.75
			sp, _ := an.v.sigSpec(s)
			c.evidence = append(c.evidence, Evidence{Signal: sp.metric, Query: an.v.query(s, ""),
				Summary: fmt.Sprintf("+%.0f in %d steps from %s (%.1f/min)", a.total, a.steps, an.v.time(a.first).Format(time.TimeOnly), perMin)})
		}
	}
	var out []*candidate
	for _, k := range sortedKeys(cands) {
		out = append(out, cands[k])
	}
	return out, nil
}
