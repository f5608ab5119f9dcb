package diagnose

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// Model quality and drift, by DESIGN.md's names: an evaluation job's
// model_accuracy{model} and `vigil drift`'s vigil_feature_drift{model,
// feature, method} (pushed or scraped).
const (
	metricAccuracy = "model_accuracy"
	metricDrift    = "vigil_feature_drift"
)

// driftThresholds are the scores at which a method says "drifted" (the
// defaults of `vigil drift`; PSI's is Evidently's "significant").
var driftThresholds = map[string]float64{
	"psi": 0.25, "kl": 0.1, "js": 0.1, "hellinger": 0.1, "linf": 0.1, "wasserstein": 0.1, "ks": 0.1, "chisquare": 0.1,
}

// accuracyFloor: accuracies move by a point or so between evaluation
// windows; a drop must clear that.
var accuracyFloor = detect.Floor{Rel: 0.005, Abs: 0.005}

// hypDrift: a model whose measured accuracy falls away from its earlier
// level for minutes, or whose features' drift scores cross their
// thresholds. Drift is a finding unless the model's deployment shows a
// symptom after it began.
func hypDrift(ctx context.Context, an *analysis) ([]*candidate, error) {
	cands := map[string]*candidate{}
	get := func(ns, model string, step int) *candidate {
		if ns == "" {
			// A pushed score names the model only: the namespace that
			// serves it.
			ns = an.namespaceOfModel(model)
		}
		k := ns + "/" + model
		c := cands[k]
		if c == nil {
			c = &candidate{kind: KindModelDrift, ent: Entity{catalog.KeyNamespace: ns, catalog.KeyModel: model}, onset: an.v.time(step)}
			c.headline = fmt.Sprintf("%s model drift", model)
			c.action = fmt.Sprintf("compare %s's recent inputs with its training data (vigil drift --baseline … --current …); retrain or roll back the model if accuracy keeps falling", model)
			for _, d := range an.deps {
				if d.ns == ns && contains(d.models, model) {
					c.workload, c.nodes = d.workload(), d.nodes
				}
			}
			cands[k] = c
		}
		if t := an.v.time(step); t.Before(c.onset) {
			c.onset = t
		}
		return c
	}
	if an.v.have.Has(metricAccuracy) {
		raw, err := an.v.fetch(ctx, metricAccuracy)
		if err != nil {
			return nil, err
		}
		for _, r := range raw {
			ns, model := modelLabels(r.lset)
			if model == "" {
				continue
			}
			ref := reference(r.v, accuracyFloor)
			if ref.N == 0 {
				continue
			}
			es := episodes(an.v.n, func(i int) bool { return ref.Z(r.v[i]) <= -slowZ }, slowRun)
			if len(es) == 0 {
				continue
			}
			low := detect.Median(r.v[es[0].start:])
			c := get(ns, model, es[0].start)
			drop := ref.Median - low
			c.strength = 1 - (1-c.strength)*(1-accuracyStrength(drop))
			c.evidence = append(c.evidence, Evidence{Signal: metricAccuracy,
				Query:   fmt.Sprintf(`%s{model=%q}`, metricAccuracy, model),
				Summary: fmt.Sprintf("accuracy %.1f%% from %s, down %.1f points from %.1f%%", 100*low, an.v.time(es[0].start).Format(time.TimeOnly), 100*drop, 100*ref.Median)})
		}
	}
	if an.v.have.Has(metricDrift) {
		raw, err := an.v.fetch(ctx, metricDrift)
		if err != nil {
			return nil, err
		}
		for _, r := range raw {
			ns, model := modelLabels(r.lset)
			method, feature := strings.ToLower(r.lset.Get("method")), r.lset.Get("feature")
			thr, ok := driftThresholds[method]
			if model == "" || !ok {
				continue
			}
			es := episodes(an.v.n, func(i int) bool { return r.v[i] >= thr }, 2)
			if len(es) == 0 {
				continue
			}
			if _, resolved := an.latest(es, r.v); resolved != nil {
				continue // the last window no longer drifts: one odd sample
			}
			es = es[len(es)-1:]
			score, _ := lastValid(r.v)
			c := get(ns, model, es[0].start)
			// At the method's threshold half the cap, twice it the cap.
			u := max(0, min(maxUnits, maxUnits/2*(1+math.Log2(score/thr))))
			c.strength = strengthOf(-unitsPerE*math.Log(1-c.strength) + u)
			c.evidence = append(c.evidence, Evidence{Signal: metricDrift,
				Query:   fmt.Sprintf(`%s{model=%q, feature=%q, method=%q}`, metricDrift, model, feature, method),
				Summary: fmt.Sprintf("feature %s: %s %.3f (drift at %.2f) from %s", feature, method, score, thr, an.v.time(es[0].start).Format(time.TimeOnly))})
		}
	}
	var out []*candidate
	for _, k := range sortedKeys(cands) {
		out = append(out, cands[k])
	}
	return out, nil
}

// accuracyStrength weighs an accuracy drop (a share): a few points is a
// real loss, half a point is noise that got past the floor.
func accuracyStrength(drop float64) float64 {
	switch {
	case drop >= 0.05:
		return 0.85
	case drop >= 0.02:
		return 0.6
	}
	return 0.3
}

// modelLabels reads a model-quality series' namespace and model.
func modelLabels(lset labels.Labels) (ns, model string) {
	ns = lset.Get("exported_namespace")
	if ns == "" {
		ns = lset.Get("namespace")
	}
	model = lset.Get("model")
	if model == "" {
		model = lset.Get("model_name")
	}
	return ns, model
}

// namespaceOfModel returns the namespace that serves a model, or "" when
// none or more than one does.
func (an *analysis) namespaceOfModel(model string) string {
	ns := ""
	for _, m := range an.v.topo.Models {
		if m.Name != model {
			continue
		}
		if ns != "" && ns != m.Namespace {
			return ""
		}
		ns = m.Namespace
	}
	return ns
}
