package diagnose

import (
	"cmp"
	"slices"
	"strings"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/kinds"
)

// minConfidence drops candidates too weak to show.
const minConfidence = 0.2

// rank merges candidates that name the same fault, weighs them against
// each other and the symptoms, and fills the report's causes and findings.
func rank(rep *Report, cands []*candidate) {
	cands = merge(cands)
	explainAway(cands)
	type scored struct {
		c     *candidate
		conf  float64
		score float64
	}
	var causes, findings []scored
	for _, c := range cands {
		conf := calibrate(c)
		if conf < minConfidence {
			continue
		}
		s := scored{c: c, conf: conf, score: conf + 0.05*prior(c.kind)}
		if len(c.explains) > 0 || c.generic {
			causes = append(causes, s)
		} else {
			findings = append(findings, s)
		}
	}
	order := func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if a.c.generic && b.c.generic {
			// Confidences saturate (0.99); the generic layer's own order
			// still tells its entities apart.
			if c := cmp.Compare(a.c.order, b.c.order); c != 0 {
				return c
			}
		}
		if c := a.c.onset.Compare(b.c.onset); c != 0 {
			return c
		}
		if c := cmp.Compare(a.c.kind, b.c.kind); c != 0 {
			return c
		}
		return cmp.Compare(entityKey(a.c.ent), entityKey(b.c.ent))
	}
	slices.SortFunc(causes, order)
	slices.SortFunc(findings, order)
	for i, s := range causes {
		rep.Causes = append(rep.Causes, s.c.toCause(i+1, s.conf, rep.Symptoms))
	}
	for i, s := range findings {
		rep.Findings = append(rep.Findings, s.c.toCause(i+1, s.conf, nil))
	}
}

// calibrate turns a candidate's evidence strength into a confidence: a
// cause that explains an observed symptom (on what it touches, not after
// it) is more likely than the same evidence alone — but only evidence
// that is already substantial gains from it: a weak pattern near a
// symptom is no more a cause for being near it, so it stays under 0.5.
func calibrate(c *candidate) float64 {
	conf := c.strength
	if len(c.explains) > 0 && conf >= explainGain {
		conf += (1 - conf) * 0.35
	}
	return min(0.99, max(0, conf))
}

// explainGain is the least strength that explaining a symptom raises.
const explainGain = 0.5

// sameFault reports whether two candidates name the same fault: one kind
// on the same node (one GPU, or the node and a GPU of it), or the same
// non-node entity.
func sameFault(a, b *candidate) bool {
	if a.kind != b.kind {
		return false
	}
	an, bn := a.ent[catalog.KeyNode], b.ent[catalog.KeyNode]
	if an != "" || bn != "" {
		if an != bn {
			return false
		}
		ag, bg := a.ent[catalog.KeyGPU], b.ent[catalog.KeyGPU]
		return ag == bg || ag == "" || bg == ""
	}
	return entityKey(a.ent) == entityKey(b.ent)
}

// merge folds candidates that name the same fault into the strongest of
// them: evidence adds up (noisy-or), the onset is the earliest.
func merge(cands []*candidate) []*candidate {
	slices.SortStableFunc(cands, func(a, b *candidate) int { return cmp.Compare(b.strength, a.strength) })
	var out []*candidate
	for _, c := range cands {
		i := slices.IndexFunc(out, func(o *candidate) bool { return sameFault(o, c) })
		if i < 0 {
			out = append(out, c)
			continue
		}
		o := out[i]
		o.strength = min(0.98, 1-(1-o.strength)*(1-0.5*c.strength))
		o.direct = o.direct || c.direct
		o.evidence = append(o.evidence, c.evidence...)
		if !c.onset.IsZero() && (o.onset.IsZero() || c.onset.Before(o.onset)) {
			o.onset = c.onset
		}
		for _, e := range c.explains {
			if !slices.Contains(o.explains, e) {
				o.explains = append(o.explains, e)
			}
		}
		o.pods = append(o.pods, c.pods...)
		if o.workload == "" {
			o.workload = c.workload
		}
	}
	return out
}

// explainAway weakens a pattern-only candidate (a rank slower than its
// peers, NVLink traffic lower than theirs) on a node where another fault
// with direct evidence started no later: that fault explains the pattern.
// A straggler is by definition a slow rank with no known reason.
func explainAway(cands []*candidate) {
	for _, c := range cands {
		if c.direct || len(c.nodes) == 0 {
			continue
		}
		for _, o := range cands {
			if o == c || o.kind == c.kind || !sharesNode(o, c) {
				continue
			}
			strongReason := o.direct && (o.onset.IsZero() || c.onset.IsZero() || !o.onset.After(c.onset.Add(precedenceSlack)))
			reasonForStraggler := c.kind == KindStraggler && o.strength >= 0.5
			if strongReason || reasonForStraggler {
				c.strength *= 0.4
				break
			}
		}
	}
}

func sharesNode(a, b *candidate) bool {
	for _, n := range a.nodes {
		if slices.Contains(b.nodes, n) {
			return true
		}
	}
	return false
}

// prior is the kind's prior (internal/kinds): it only breaks ties.
func prior(kind string) float64 {
	k, _ := kinds.Lookup(kind)
	return k.Prior
}

// toCause writes a candidate as a ranked cause or finding.
func (c *candidate) toCause(rank int, conf float64, syms []Symptom) Cause {
	out := Cause{Rank: rank, Kind: c.kind, Entity: c.ent, Confidence: round3(conf), Summary: c.headline,
		Evidence: c.evidence, Action: c.action}
	if k, ok := kinds.Lookup(c.kind); ok {
		// The registry's words where a detector has none of its own.
		if out.Summary == "" {
			out.Summary = strings.TrimSpace(entityWords(c.ent) + " " + k.Title)
		}
		if out.Action == "" {
			out.Action = k.Action
		}
	}
	if out.Evidence == nil {
		out.Evidence = []Evidence{}
	}
	if !c.onset.IsZero() {
		t := c.onset.UTC()
		out.Since = &t
	}
	if len(c.explains) > 0 {
		explains := slices.Clone(c.explains)
		slices.Sort(explains)
		out.Explains = explains
		var words []string
		for _, i := range explains {
			if i < len(syms) {
				if sk, ok := kinds.LookupSymptom(syms[i].Kind); ok && sk.Words != "" && !slices.Contains(words, sk.Words) {
					words = append(words, sk.Words)
				}
			}
		}
		if len(words) > 0 {
			out.Summary += " — probable cause of " + joinWords(words)
		}
	}
	return out
}

// joinWords joins "a", "a and b", "a, b and c".
func joinWords(ws []string) string {
	if len(ws) <= 1 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}

func round3(x float64) float64 {
	return float64(int64(x*1000+0.5)) / 1000
}

// entityWords names an entity in a headline: "gpu-node-06 GPU 3",
// "ml-train/llm-pretrain", "gpu-node-06".
func entityWords(e Entity) string {
	switch {
	case e[catalog.KeyNode] != "" && e[catalog.KeyGPU] != "":
		return e[catalog.KeyNode] + " GPU " + e[catalog.KeyGPU]
	case e[catalog.KeyNode] != "":
		return e[catalog.KeyNode]
	}
	for _, k := range []string{catalog.KeyPod, catalog.KeyWorkload, catalog.KeyModel, catalog.KeyService} {
		if e[k] != "" {
			if ns := e[catalog.KeyNamespace]; ns != "" {
				return ns + "/" + e[k]
			}
			return e[k]
		}
	}
	return entityKey(e)
}
