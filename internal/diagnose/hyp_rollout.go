package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// rolloutReach is how long after a rollout begins a symptom of its
// workload is still put down to it: a rolling update of model servers
// takes minutes (each new replica loads its model).
const rolloutReach = 20 * time.Minute

// hypRollout: a Deployment's spec changed inside the window (its observed
// generation went up: a rollout) and a symptom of that workload began after
// the rollout did, within rolloutReach, and still holds. A rollout alone is routine, not a
// fault; one followed by its workload's latency, errors or queues is the
// first suspect.
func hypRollout(ctx context.Context, an *analysis) ([]*candidate, error) {
	t, err := an.v.sig(ctx, "k8s.deployment_generation")
	if err != nil {
		return nil, err
	}
	var out []*candidate
	for _, r := range t.rows {
		ns, name := r.ent[catalog.KeyNamespace], r.ent[catalog.KeyWorkload]
		if ns == "" || name == "" {
			continue
		}
		step, from, to := -1, math.NaN(), math.NaN()
		prev := math.NaN()
		for i, x := range r.v {
			if !math.IsNaN(prev) && !math.IsNaN(x) && x > prev {
				step, from, to = i, prev, x
				break
			}
			if !math.IsNaN(x) {
				prev = x
			}
		}
		if step < 0 {
			continue
		}
		began := an.v.time(step)
		wl := ns + "/" + name
		var hit []Symptom
		for _, s := range an.syms {
			if s.Current() && s.workload == wl && !s.Since.Before(began) && s.Since.Sub(began) <= rolloutReach {
				hit = append(hit, s.Symptom)
			}
		}
		if len(hit) == 0 {
			continue
		}
		c := &candidate{kind: KindBadRollout, ent: Entity{catalog.KeyNamespace: ns, catalog.KeyWorkload: name},
			workload: wl, onset: began}
		// The sooner after the rollout its workload suffered, the more it
		// is the rollout's doing: half the cap at the reach, the cap at once.
		delay := hit[0].Since.Sub(began)
		c.strength = strengthOf(maxUnits/2 + maxUnits/2*(1-float64(delay)/float64(rolloutReach)))
		for _, d := range an.deps {
			if d.workload() == wl {
				c.nodes, c.pods = d.nodes, d.pods
			}
		}
		c.headline = fmt.Sprintf("%s rollout", wl)
		c.action = fmt.Sprintf("roll it back (kubectl -n %s rollout undo deployment/%s) and compare the new version's latency and errors before rolling forward", ns, name)
		c.evidence = append(c.evidence, Evidence{Signal: "kube_deployment_status_observed_generation",
			Query:   fmt.Sprintf(`kube_deployment_status_observed_generation{namespace=%q, deployment=%q}`, ns, name),
			Summary: fmt.Sprintf("generation %.0f → %.0f at %s; %s began %s later", from, to, began.Format(time.TimeOnly), hit[0].Kind, hit[0].Since.Sub(began))})
		out = append(out, c)
	}
	return out, nil
}
