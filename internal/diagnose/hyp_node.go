package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// nodeCandidate starts a candidate on a node.
func (an *analysis) nodeCandidate(kind, node string) *candidate {
	return &candidate{kind: kind, ent: Entity{catalog.KeyNode: node}, nodes: []string{node}}
}

// conditionEpisodes returns, per node, the episodes where kube-state-metrics
// reports a node condition as bad says.
func (an *analysis) conditionEpisodes(ctx context.Context, condition string, bad func(status string, v float64) bool) (map[string][]episode, error) {
	t, err := an.v.sig(ctx, "k8s.node_condition", "condition", "status")
	if err != nil {
		return nil, err
	}
	type acc struct{ badAt []bool }
	by := map[string]*acc{}
	for _, r := range t.rows {
		if r.extra["condition"] != condition {
			continue
		}
		node := r.ent[catalog.KeyNode]
		a := by[node]
		if a == nil {
			a = &acc{badAt: make([]bool, an.v.n)}
			by[node] = a
		}
		for i, x := range r.v {
			if !math.IsNaN(x) && bad(r.extra["status"], x) {
				a.badAt[i] = true
			}
		}
	}
	out := map[string][]episode{}
	for node, a := range by {
		if es := episodes(an.v.n, func(i int) bool { return a.badAt[i] }, 1); len(es) > 0 {
			out[node] = es
		}
	}
	return out, nil
}

// vanish says when an entity's series stopped: present before step at,
// absent from at to the end of the window.
type vanish struct{ at int }

// vanished returns the rows of a table whose series stopped inside the
// window at least two steps before its end.
func (an *analysis) vanished(t *table) map[string]vanish {
	out := map[string]vanish{}
	for _, r := range t.rows {
		_, last := lastValid(r.v)
		if last < 0 || last >= an.v.n-2 {
			continue
		}
		out[entityKey(r.ent)] = vanish{at: last + 1}
	}
	return out
}

// hypNodeDown: kube-state-metrics marks the node not Ready (the kubelet
// stopped posting status) and its exporters fall silent at the same time.
func hypNodeDown(ctx context.Context, an *analysis) ([]*candidate, error) {
	eps, err := an.conditionEpisodes(ctx, "Ready", func(status string, x float64) bool {
		return (status == "unknown" || status == "false") && x == 1 || status == "true" && x == 0
	})
	if err != nil {
		return nil, err
	}
	load, err := an.v.sig(ctx, "node.load1")
	if err != nil {
		return nil, err
	}
	gone := an.vanished(load)
	var out []*candidate
	last, err := an.conditionLast(ctx, "Ready")
	if err != nil {
		return nil, err
	}
	for _, node := range sortedKeys(eps) {
		e := eps[node][len(eps[node])-1]
		over := e.end < last[node]
		current, past := an.symptomFrom(node, e.start)
		if over && !current && !past {
			// Ready again, and nothing on it suffered: a planned reboot
			// or a flap that is over.
			continue
		}
		c := an.nodeCandidate(KindNodeDown, node)
		// One reading of not Ready is a kubelet's late status update;
		// each further one adds until two minutes of them.
		u := min(maxUnits, notReadyUnits*float64(e.len()))
		c.onset, c.direct = an.v.time(e.start), true
		c.headline = fmt.Sprintf("%s down", node)
		c.action = fmt.Sprintf("check %s's power and kubelet (kubectl describe node %s); restart the job on healthy nodes", node, node)
		c.evidence = append(c.evidence, Evidence{Signal: "kube_node_status_condition",
			Query:   fmt.Sprintf(`kube_node_status_condition{node=%q, condition="Ready", status="true"}`, node),
			Summary: fmt.Sprintf("%s not Ready from %s for %s", node, an.v.time(e.start).Format(time.TimeOnly), time.Duration(e.len())*an.v.step)})
		if g, ok := gone[nodeKey(node)]; ok && absDiff(g.at, e.start) <= 4 {
			// The exporters fell silent with it.
			u += silentUnits
			c.onset = an.v.time(min(g.at, e.start))
			c.evidence = append(c.evidence, Evidence{Signal: "node_load1", Query: an.v.query("node.load1", ""),
				Summary: fmt.Sprintf("node-exporter on %s silent from %s", node, an.v.time(g.at).Format(time.TimeOnly))})
		}
		c.strength = strengthOf(u)
		if over && !current {
			// History: the node came back and what it broke recovered.
			// Named, so the record says why the job stalled, but under
			// 0.5: it pages nobody now.
			c.strength = min(c.strength, historyCap)
			c.headline = fmt.Sprintf("%s was down %s–%s (Ready again)", node, an.v.time(e.start).Format("15:04"), an.v.time(e.end+1).Format("15:04"))
		}
		out = append(out, c)
	}
	return out, nil
}

// historyCap bounds the confidence of a fault that is over and whose
// effects recovered.
const historyCap = 0.45

// symptomFrom reports whether a current symptom, and whether a symptom
// that is over, touches node and started within precedenceSlack of step:
// an outage whose effect lasts (a job that died with the node's rank), or
// lasted.
func (an *analysis) symptomFrom(node string, step int) (current, past bool) {
	return an.symptomWithin(node, episode{start: step, end: step - 1})
}

// notReadyUnits is the evidence of each reading of a node not Ready, and
// silentUnits that of its exporters falling silent with it.
const (
	notReadyUnits = 1.5
	silentUnits   = 4.0
)

// conditionLast returns, per node, the last step with a reading of a node
// condition.
func (an *analysis) conditionLast(ctx context.Context, condition string) (map[string]int, error) {
	t, err := an.v.sig(ctx, "k8s.node_condition", "condition", "status")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, r := range t.rows {
		if r.extra["condition"] != condition {
			continue
		}
		if _, l := lastValid(r.v); l > out[r.ent[catalog.KeyNode]] {
			out[r.ent[catalog.KeyNode]] = l
		}
	}
	return out, nil
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}
