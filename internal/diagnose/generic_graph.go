package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/detect"
)

// The service-graph walk of the generic layer. Where the data holds a
// service graph (traces_service_graph_request_total{client, server} and
// its latency histograms: Vigil's own from the traces it receives, or an
// OpenTelemetry Collector's servicegraph connector's), the entity the
// statistical ranking puts first is where the trouble shows most, which
// is often a caller of the faulty service: a slow or failing dependency
// makes its callers slow or failing too, sometimes more visibly than
// itself. So, as the graph-traversal baselines of microservice
// root-cause analysis do (MicroRCA, Wu et al., NOMS 2020: anomalous
// subgraph, then the service whose anomaly its callers' follow; the
// "traversal" baseline of the PetShop data set, Hardt et al., 2024, and
// RCAEval's, Pham et al., WWW 2025: walk from the symptomatic service down
// its anomalous callees), the walk starts at that entity and follows its
// calls down to the deepest callee whose incoming calls turned anomalous
// (latency or failed share, from the graph) no later than its caller's;
// that callee ranks first, the callers on the way below it. Where the
// graph has both sides' seconds (the connectors' client and server
// histograms), a third anomaly is the gap between them: the time a call
// takes at its caller beyond what it takes at its server is the network,
// the proxies and the queues between the two, and a delay on a service's
// network shows there and in none of the service's own series. A gap that
// a caller's calls to its other callees show too is the caller's (its own
// network, or a CPU too busy to read the answers), and does not lead the
// walk to one of them.
const (
	// walkZ is how many robust spreads a callee's incoming calls must rise
	// by, for two steps running, to count as anomalous.
	walkZ = 4.0
	// walkSlack is how many steps later than its caller a callee's
	// anomaly may start and still explain it.
	walkSlack = 2
	// walkCallerShare is what the walk leaves of a caller's confidence:
	// its anomaly is the callee's effect. In the graph suite no caller
	// the walk demoted was the fault (0.6 left them at 0.57 with accuracy
	// 0, ECE 0.22; 0.25 gives ECE 0.11).
	walkCallerShare = 0.25
)

// callAnomaly is how the calls a service serves changed after the onset,
// as the service graph shows them.
type callAnomaly struct {
	// z is the largest two-step rise (robust spreads) of the calls' mean
	// latency or failed share; held the third quartile of the rise.
	z, held float64
	// start is the first step of a two-step rise of walkZ or more, -1
	// when none.
	start int
	// latency: the rise is the mean latency's, else the failed share's;
	// gap: the rise is of the time the callers saw beyond the service's
	// own (client seconds less server seconds: the network, a proxy or a
	// queue between them).
	latency, gap  bool
	before, after float64
}

// edgeGap is one edge's client seconds less its server seconds per call,
// per step; NaN where either side has no sample.
func edgeGap(e *graphEdge) []float64 {
	out := nanSeries(len(e.cliSum))
	for i := range out {
		if !math.IsNaN(e.cliSum[i]) && !math.IsNaN(e.srvSum[i]) && e.srvCount[i] > 0 {
			out[i] = (e.cliSum[i] - e.srvSum[i]) / e.srvCount[i]
		}
	}
	return out
}

// gapFloor keeps a gap's tiny moves from scoring: 5% of its level, and a
// tenth of a millisecond (a proxy's hop).
var gapFloor = detect.Floor{Rel: 0.05, Abs: 1e-4}

// edgeGapRises is each edge's largest two-step rise (robust spreads) of
// its gap after the onset, where the graph has both sides' seconds.
func edgeGapRises(g *svcGraph, onset int) map[[2]string]float64 {
	out := map[[2]string]float64{}
	for _, e := range g.edges {
		x := edgeGap(e)
		if onset >= len(x) || detect.Valid(x[:onset]) < 3 {
			continue
		}
		z, _ := risingMax(x, onset, detect.NewBaseline(x[:onset], gapFloor))
		out[[2]string{e.client, e.server}] = z
	}
	return out
}

// callAnomalies scores every service of the graph by its incoming calls.
func (v *view) callAnomalies(g *svcGraph, onset int) map[string]callAnomaly {
	out := map[string]callAnomaly{}
	for _, svc := range g.services {
		cnt, sum := nanSeries(v.n), nanSeries(v.n)
		reqs, failed := nanSeries(v.n), nanSeries(v.n)
		// The gap is pooled over the edges that have both sides' seconds.
		gapSum, gapCnt := nanSeries(v.n), nanSeries(v.n)
		for _, e := range g.edges {
			if e.server == svc {
				addInto(cnt, e.srvCount)
				addInto(sum, e.srvSum)
				addInto(reqs, e.reqs)
				addInto(failed, e.failed)
				gap := edgeGap(e)
				for i, x := range gap {
					if !math.IsNaN(x) {
						gapSum[i] = nanZero(gapSum[i]) + x*e.srvCount[i]
						gapCnt[i] = nanZero(gapCnt[i]) + e.srvCount[i]
					}
				}
			}
		}
		best := callAnomaly{start: -1}
		for _, s := range []struct {
			x            []float64
			floor        detect.Floor
			latency, gap bool
		}{
			{pooledRatio(sum, cnt, 1, 1), detect.Floor{Rel: 0.05, Abs: 1e-4}, true, false},
			{pooledRatio(failed, reqs, 1, 1), detect.Floor{Rel: 0.1, Abs: 0.005}, false, false},
			{pooledRatio(gapSum, gapCnt, 1, 1), gapFloor, true, true},
		} {
			if onset >= len(s.x) || detect.Valid(s.x[:onset]) < 3 {
				continue
			}
			base := detect.NewBaseline(s.x[:onset], s.floor)
			z, start := risingMax(s.x, onset, base)
			if z > best.z {
				best = callAnomaly{z: z, held: heldRise(s.x, onset, base), start: start, latency: s.latency, gap: s.gap,
					before: base.Median, after: detect.Median(s.x[onset:])}
			}
		}
		out[svc] = best
	}
	return out
}

// risingMax is the largest rise (in b's spreads) after onset that holds
// for two steps running, and the first step of a two-step rise of walkZ
// or more (-1: none).
func risingMax(v []float64, onset int, b detect.Baseline) (float64, int) {
	best, start := 0.0, -1
	for i := onset; i+1 < len(v); i++ {
		z := math.Min(b.Z(v[i]), b.Z(v[i+1]))
		if math.IsNaN(z) {
			continue
		}
		best = math.Max(best, z)
		if start < 0 && z >= walkZ {
			start = i
		}
	}
	return best, start
}

// heldRise is the third quartile of the rise from the onset to the end.
func heldRise(v []float64, onset int, b detect.Baseline) float64 {
	zs := make([]float64, 0, len(v)-onset)
	for _, x := range v[onset:] {
		if z := b.Z(x); !math.IsNaN(z) {
			zs = append(zs, math.Max(0, z))
		}
	}
	return detect.Quantile(zs, 0.75)
}

// walk follows the calls down from start to the deepest anomalous callee:
// at each service, the most anomalous of its callees whose anomaly began
// no later than the service's own (walkSlack steps of slack), and not
// under load the service sends it (its requests rising with the
// service's: the service's load is the reason). A callee anomalous by its
// gap alone (its callers wait longer than it works) is not one where the
// service's calls to other callees show such a gap too: then the time is
// lost on the service's side (its own network, or a CPU too busy to read
// the answers), not the callee's. It returns the path, start first.
func (g *svcGraph) walk(start string, an, loads map[string]callAnomaly, gaps map[[2]string]float64) []string {
	return follow(start, g.callees, an, func(cur, c string) bool {
		if own := an[cur]; own.start >= 0 && an[c].start > own.start+walkSlack {
			return true // it went wrong after its caller: not the caller's reason
		}
		if an[c].gap {
			for _, d := range g.callees[cur] {
				if d != c && gaps[[2]string{cur, d}] >= walkZ {
					return true // the caller's calls wait everywhere
				}
			}
		}
		lc, lo := loads[c], loads[cur]
		return lc.z >= walkZ && lo.z >= walkZ && lo.start >= 0 && lc.start+walkSlack >= lo.start // swamped by its caller's extra requests
	})
}

// follow goes from start along next (callees or callers), at each service
// to the neighbour with the largest anomaly of an — walkZ or more, not the
// virtual user, not already on the path, not skipped — until there is
// none. It returns the path, start first.
func follow(start string, next map[string][]string, an map[string]callAnomaly, skip func(cur, c string) bool) []string {
	path := []string{start}
	for cur := start; ; {
		best := ""
		for _, c := range next[cur] {
			a := an[c]
			if c == graphUser || a.z < walkZ || a.start < 0 || slices.Contains(path, c) || skip(cur, c) {
				continue
			}
			if best == "" || a.z > an[best].z {
				best = c
			}
		}
		if best == "" {
			return path
		}
		path = append(path, best)
		cur = best
	}
}

// walkGraph re-ranks the generic layer's entities along the service
// graph: the walk from the first-ranked entity ends at the service that
// explains it, which takes its confidence and ranks first; the callers on
// the way keep walkCallerShare of theirs. Entities the graph does not
// name, or a walk that stays where it starts, change nothing.
func (v *view) walkGraph(g *svcGraph, ranked []genericRanked, onset int, label string) []genericRanked {
	if g == nil || len(ranked) == 0 {
		return ranked
	}
	// The walk starts where the report would point: the most confident.
	first := 0
	for i, r := range ranked {
		if r.conf > ranked[first].conf {
			first = i
		}
	}
	if !slices.Contains(g.services, ranked[first].entity) {
		return ranked
	}
	an := v.callAnomalies(g, onset)
	loads := v.loadAnomalies(g, onset)
	if up := g.climb(ranked[first].entity, loads); len(up) > 1 {
		return v.promoteLoad(g, ranked, first, up, loads, label)
	}
	path := g.walk(ranked[first].entity, an, loads, edgeGapRises(g, onset))
	if len(path) == 1 {
		return ranked
	}
	root := path[len(path)-1]
	ranked, ri := promote(ranked, first, root)
	r := &ranked[ri]
	a := an[root]
	r.evidence = append(r.evidence, v.callEvidence(root, a))
	r.evidence = append(r.evidence, Evidence{Signal: graphRequests,
		Query: fmt.Sprintf(`sum by (client, server) (rate(%s{server=~%q}[5m]))`, graphRequests, strings.Join(path[1:], "|")),
		Summary: fmt.Sprintf("the service graph leads from %s, where the anomaly shows most, down %s to %s: each went wrong no later than its caller",
			path[0], strings.Join(path, " → "), root)})
	r.headline = fmt.Sprintf("%s %s anomalous, and %s with it", label, root, strings.Join(path[:len(path)-1], ", "))
	r.action = fmt.Sprintf("look at %s %s first: %s wait on it and went wrong with it", label, root, strings.Join(path[:len(path)-1], ", "))
	for i := range ranked {
		if ranked[i].entity != root {
			ranked[i].conf = math.Min(ranked[i].conf, 0.99*r.conf)
		}
	}
	return v.demoteCallers(g, ranked, an, root, label)
}

// demoteCallers leaves the entities upstream of root (they reach it along
// calls, and their calls went wrong no earlier than its) walkCallerShare of
// their confidence, as its effects.
func (v *view) demoteCallers(g *svcGraph, ranked []genericRanked, an map[string]callAnomaly, root, label string) []genericRanked {
	for i := range ranked {
		o := &ranked[i]
		if o.entity == root || !upstream(g, an, o.entity, root) {
			continue
		}
		o.conf *= walkCallerShare
		o.headline = fmt.Sprintf("%s %s anomalous, an effect of %s", label, o.entity, root)
		o.evidence = append(o.evidence, Evidence{Signal: graphRequests,
			Query:   fmt.Sprintf(`sum by (server) (rate(%s{client=%q}[5m]))`, graphRequests, o.entity),
			Summary: fmt.Sprintf("it depends on %s, which went wrong no later than it did", root)})
	}
	return ranked
}

// promote gives root the confidence of the entity ranked first (adding
// it when it has no series of its own: a database or an outside API the
// graph is all there is of) and returns its index.
func promote(ranked []genericRanked, first int, root string) ([]genericRanked, int) {
	top := ranked[first].conf
	ri := slices.IndexFunc(ranked, func(r genericRanked) bool { return r.entity == root })
	if ri < 0 {
		ranked = append(ranked, genericRanked{genericScore: genericScore{entity: root, first: -1}})
		ri = len(ranked) - 1
	}
	ranked[ri].conf = math.Max(ranked[ri].conf, top)
	return ranked, ri
}

// upstream tells whether svc's trouble is root's effect: it reaches root
// along calls, and its calls went wrong no earlier than root's did.
func upstream(g *svcGraph, an map[string]callAnomaly, svc, root string) bool {
	a, r := an[svc], an[root]
	if a.start < 0 || !g.reaches(svc, root) {
		return false
	}
	return r.start < 0 || a.start+walkSlack >= r.start
}

// callEvidence is the graph's evidence of a service's anomalous calls.
func (v *view) callEvidence(svc string, a callAnomaly) Evidence {
	since := "after the onset"
	if a.start >= 0 {
		since = "from " + v.time(a.start).Format("15:04:05")
	}
	if a.gap {
		return gapEvidence(svc, a.before, a.after, a.z, since)
	}
	if a.latency {
		return Evidence{Signal: "traces_service_graph_request_server_seconds",
			Query:   fmt.Sprintf(`sum(rate(%s{server=%q}[5m])) / sum(rate(%s{server=%q}[5m]))`, graphServerSum, svc, graphServerCnt, svc),
			Summary: fmt.Sprintf("calls to %s take %s %s (earlier %s; %.1f robust spreads)", svc, fmtSeconds(a.after), since, fmtSeconds(a.before), a.z)}
	}
	return Evidence{Signal: graphFailed,
		Query:   fmt.Sprintf(`sum(rate(%s{server=%q}[5m])) / sum(rate(%s{server=%q}[5m]))`, graphFailed, svc, graphRequests, svc),
		Summary: fmt.Sprintf("%.1f%% of the calls to %s fail %s (earlier %.1f%%; %.1f robust spreads)", 100*a.after, svc, since, 100*a.before, a.z)}
}

// nanZero is x, or 0 for NaN (a sum not started).
func nanZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// networkGapName names a service's network gap among the generic layer's
// series.
const networkGapName = "traces_service_graph_request_client_seconds (callers' wait beyond its own time)"

// networkGapSeries is, for each service of the graph, the time its callers
// wait for a call beyond the time it takes the service itself (client
// seconds less server seconds per call), pooled over its callers by their
// calls: the network, the proxies and the queues in front of it, which none
// of its own series show. Each caller's wait counts in excess of its own
// calls to its other callees, the least of theirs at each step: what a
// caller loses on its own side (its network, or a CPU too busy to read the
// answers) is in every call it makes, so the least wait of its other calls
// bounds it, and a caller whose every call waits longer moves no callee's
// series, while one callee that waits does not lift its siblings' share. A caller with no other callee to
// compare with cannot tell the two apart and is left out, as is the graph's
// virtual user. A service none of whose callers is left has no series.
func networkGapSeries(g *svcGraph) []genericSeries {
	gaps := map[*graphEdge][]float64{}
	byClient := map[string][]*graphEdge{}
	for _, e := range g.edges {
		if e.client == graphUser || detect.Valid(e.cliSum) == 0 {
			continue
		}
		gaps[e] = edgeGap(e)
		byClient[e.client] = append(byClient[e.client], e)
	}
	num, den := map[string][]float64{}, map[string][]float64{}
	others := make([]float64, 0, 8)
	for _, e := range g.edges {
		gap, ok := gaps[e]
		if !ok || len(byClient[e.client]) < 2 {
			continue
		}
		if num[e.server] == nil {
			num[e.server], den[e.server] = nanSeries(len(gap)), nanSeries(len(gap))
		}
		for i, x := range gap {
			others = others[:0]
			for _, o := range byClient[e.client] {
				if y := gaps[o][i]; o != e && !math.IsNaN(y) {
					others = append(others, y)
				}
			}
			if math.IsNaN(x) || len(others) == 0 {
				continue
			}
			num[e.server][i] = nanZero(num[e.server][i]) + (x-slices.Min(others))*e.srvCount[i]
			den[e.server][i] = nanZero(den[e.server][i]) + e.srvCount[i]
		}
	}
	out := make([]genericSeries, 0, len(num))
	for _, svc := range g.services {
		if num[svc] != nil {
			out = append(out, genericSeries{entity: svc, name: networkGapName, v: pooledRatio(num[svc], den[svc], 1, 1)})
		}
	}
	return out
}

// gapEvidence is the evidence of a service's callers waiting on its
// network: since says from when ("from 15:04:05").
func gapEvidence(svc string, before, after, z float64, since string) Evidence {
	return Evidence{Signal: "traces_service_graph_request_client_seconds",
		Query: fmt.Sprintf(`(sum(rate(%s{server=%q}[5m])) - sum(rate(%s{server=%q}[5m]))) / sum(rate(%s{server=%q}[5m]))`,
			graphClientSum, svc, graphServerSum, svc, graphServerCnt, svc),
		Summary: fmt.Sprintf("calls to %s wait %s at their callers beyond %s's own time %s (earlier %s; %.1f robust spreads): the time is lost between them, on %s's network, a proxy or a queue in front of it",
			svc, fmtSeconds(after), svc, since, fmtSeconds(before), z, svc)}
}

// networkGapEvidence is gapEvidence from the generic layer's score.
func networkGapEvidence(svc string, before, after, z float64, first time.Time) Evidence {
	return gapEvidence(svc, before, after, z, "from "+first.Format("15:04:05"))
}
