package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/vigil-obs/vigil/internal/detect"
)

// The walk's other direction: load. Extra traffic flows down the calls, so
// an overloaded service's callees see their requests rise as much as it
// does, and one of them, a table or a queue whose requests grew the most
// against their spread, can rank first. Slowness and failures propagate
// up, load propagates down: where the entity ranked first is one whose
// incoming requests rose, the walk climbs to the caller whose own
// incoming requests rose no later, and on, to the topmost service whose
// callers' did not — where the extra load came in.

// loadRatio is how many times its earlier requests a service must serve,
// at the median after the onset, for its load to have risen.
const loadRatio = 1.5

// loadAnomalies scores every service of the graph by the rise of the
// requests it serves (the graph's request counts into it), as
// callAnomalies does latency and failures.
func (v *view) loadAnomalies(g *svcGraph, onset int) map[string]callAnomaly {
	out := map[string]callAnomaly{}
	for _, svc := range g.services {
		reqs := nanSeries(v.n)
		for _, e := range g.edges {
			if e.server == svc {
				addInto(reqs, e.reqs)
			}
		}
		a := callAnomaly{start: -1}
		if onset < len(reqs) && detect.Valid(reqs[:onset]) >= 3 {
			base := detect.NewBaseline(reqs[:onset], detect.Floor{Rel: 0.05, Abs: 1})
			a.z, a.start = risingMax(reqs, onset, base)
			a.held = heldRise(reqs, onset, base)
			a.before, a.after = base.Median, detect.Median(reqs[onset:])
			if !(a.after >= loadRatio*a.before) {
				// Traffic's own swings move requests by spreads; extra
				// load multiplies them, and keeps them up.
				a.z, a.start = 0, -1
			}
		}
		out[svc] = a
	}
	return out
}

// climb follows the load up from start: at each service, the caller (not
// the virtual user) whose incoming requests rose the most, by walkZ or
// more, starting no later than the service's own (walkSlack steps of
// slack). It returns the path, start first; start itself must show the
// rise.
func (g *svcGraph) climb(start string, loads map[string]callAnomaly) []string {
	if a := loads[start]; a.z < walkZ || a.start < 0 {
		return []string{start}
	}
	return follow(start, g.callers, loads, func(cur, p string) bool {
		return loads[p].start > loads[cur].start+walkSlack // its load rose after its callee's: not the source
	})
}

// promoteLoad re-ranks after a climb: the service the load came in by
// takes the first-ranked entity's confidence; the services below it whose
// load rose with it keep walkCallerShare of theirs.
func (v *view) promoteLoad(g *svcGraph, ranked []genericRanked, first int, path []string, loads map[string]callAnomaly, label string) []genericRanked {
	root := path[len(path)-1]
	ranked, ri := promote(ranked, first, root)
	r := &ranked[ri]
	a := loads[root]
	r.evidence = append(r.evidence, v.loadEvidence(root, a), Evidence{Signal: graphRequests,
		Query: fmt.Sprintf(`sum by (client, server) (rate(%s{server=~%q}[5m]))`, graphRequests, strings.Join(path, "|")),
		Summary: fmt.Sprintf("the service graph leads from %s, where the anomaly shows most, up %s to %s: each one's requests rose no later than its callee's, and %s's callers' did not",
			path[0], strings.Join(path, " ← "), root, root)})
	below := strings.Join(path[:len(path)-1], ", ")
	r.headline = fmt.Sprintf("%s %s overloaded, and %s with it", label, root, below)
	r.action = fmt.Sprintf("look at what sends %s %s more requests (a client, a retry loop, a job): %s get them from it", label, root, below)
	for i := range ranked {
		o := &ranked[i]
		if o.entity == root {
			continue
		}
		o.conf = math.Min(o.conf, 0.99*r.conf)
		la := loads[o.entity]
		if la.start >= 0 && g.reaches(root, o.entity) && la.start+walkSlack >= a.start {
			o.conf *= walkCallerShare
			o.headline = fmt.Sprintf("%s %s anomalous, an effect of %s's load", label, o.entity, root)
			o.evidence = append(o.evidence, Evidence{Signal: graphRequests,
				Query:   fmt.Sprintf(`sum by (client) (rate(%s{server=%q}[5m]))`, graphRequests, o.entity),
				Summary: fmt.Sprintf("%s calls it, and its requests rose with %s's", root, root)})
		}
	}
	return ranked
}

// loadEvidence is the graph's evidence of a service's rising load.
func (v *view) loadEvidence(svc string, a callAnomaly) Evidence {
	since := "after the onset"
	if a.start >= 0 {
		since = "from " + v.time(a.start).Format("15:04:05")
	}
	return Evidence{Signal: graphRequests,
		Query:   fmt.Sprintf(`sum(rate(%s{server=%q}[5m]))`, graphRequests, svc),
		Summary: fmt.Sprintf("%s serves %.0f requests per step %s (earlier %.0f; %.1f robust spreads)", svc, a.after, since, a.before, a.z)}
}
