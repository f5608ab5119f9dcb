package diagnose

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// dependency_slow: a service of the request path whose own time per
// request (exclusive latency: the seconds its server side spends on its
// requests less those its client side waits on its own calls, from the
// service graph) rose for good, by at least depRatio, while the others'
// did not. A hop whose callees slowed shows their time, not its own: the
// exclusive time points at the hop itself, as a per-hop critical-path
// breakdown does for one trace.
const (
	depRatio = 1.3
	// depShift is the shift's least size in the exclusive time's robust
	// spreads (or tenths of its level).
	depShift = 4.0
)

// hopTime is one service's exclusive time per request.
type hopTime struct {
	svc   string
	excl  []float64
	shift detect.Shift
	ratio float64
	// share is its part of the root's time per request before and after
	// the onset.
	shareBefore, shareAfter float64
}

// hypDependency finds the hops of the request path that slowed.
func hypDependency(_ context.Context, an *analysis) ([]*candidate, error) {
	if an.rp == nil {
		return nil, nil
	}
	g := an.rp.g
	var slow []*hopTime
	for _, svc := range g.services {
		h := an.hopTime(svc)
		if h == nil {
			continue
		}
		sh, ok := detect.Onset(h.excl, detect.OnsetOptions{Floor: detect.Floor{Rel: 0.1, Abs: 0.002}, Threshold: depShift, MinRun: slowRun})
		if !ok || sh.Z <= 0 || !(sh.Before > 0) || sh.After < depRatio*sh.Before {
			continue
		}
		if recentLow(h.excl, peerRun) < depRatio*sh.Before {
			continue // fast again: a slow spell that is over
		}
		h.shift, h.ratio = sh, sh.After/sh.Before
		an.shareOfRoot(h)
		slow = append(slow, h)
	}
	var out []*candidate
	for _, h := range slow {
		out = append(out, an.dependencyCandidate(h, len(slow)))
	}
	return out, nil
}

// hopTime is svc's exclusive time per request, pooled over latencyWindow
// steps; nil when it serves too few requests to tell.
func (an *analysis) hopTime(svc string) *hopTime {
	cnt, srv, cli := an.rp.g.inOut(svc, an.v.n)
	own := nanSeries(an.v.n)
	for i := range own {
		if !math.IsNaN(srv[i]) {
			own[i] = srv[i]
			if !math.IsNaN(cli[i]) {
				own[i] -= cli[i]
			}
		}
	}
	excl := pooledRatio(own, cnt, latencyWindow, reqMinRequests/2)
	for i, x := range excl {
		if x < 0 {
			excl[i] = 0 // calls in parallel overlap: the caller's own time is not negative
		}
	}
	if detect.Valid(excl) < 10 {
		return nil
	}
	return &hopTime{svc: svc, excl: excl}
}

// shareOfRoot sets a hop's share of the time per request of the services
// requests enter by, before its onset and after.
func (an *analysis) shareOfRoot(h *hopTime) {
	g := an.rp.g
	_, srv, cli := g.inOut(h.svc, an.v.n)
	rootSum := nanSeries(an.v.n)
	for _, r := range g.roots() {
		_, s, _ := g.inOut(r, an.v.n)
		addInto(rootSum, s)
	}
	share := func(from, to int) float64 {
		total := sumOver(rootSum, from, to)
		if total <= 0 {
			return math.NaN()
		}
		own := sumOver(srv, from, to) - sumOver(cli, from, to)
		return math.Min(1, math.Max(0, own)/total)
	}
	at := h.shift.Index
	h.shareBefore, h.shareAfter = share(0, at-1), share(at, an.v.n-1)
}

// dependencyCandidate writes a slowed hop as a candidate: strong for a
// large rise that no other hop shares, weaker when others slowed too (a
// node or network trouble under several hops) or when the metrics show
// why the hop itself is slow (its model server saturated, its rollout,
// a fault of its node): that cause comes first.
func (an *analysis) dependencyCandidate(h *hopTime, slowHops int) *candidate {
	c := &candidate{kind: KindDependencySlow, ent: Entity{catalog.KeyService: h.svc}, onset: an.v.time(h.shift.Index)}
	c.strength = math.Min(0.9, 0.3+0.6*math.Log2(h.ratio))
	if slowHops > 1 {
		c.strength /= 1 + 0.5*float64(slowHops-1)
	}
	for _, w := range an.v.topo.Workloads {
		if w.Name == h.svc && w.Namespace != "" {
			c.ent[catalog.KeyNamespace] = w.Namespace
			c.workload = w.Namespace + "/" + w.Name
		}
	}
	for _, e := range an.rp.g.edges {
		if e.server == h.svc && e.namespace != "" {
			c.ent[catalog.KeyNamespace] = e.namespace
		}
	}
	why := an.deeperCause(c)
	if why != nil {
		// The hop is slow for a reason the metrics name: that reason, not
		// the hop, explains its callers' symptoms.
		c.strength *= 0.25
		c.headline = fmt.Sprintf("%s slower (%s explains it)", h.svc, why.kind)
	}
	since := c.onset.Format(time.TimeOnly)
	if c.headline == "" {
		c.headline = fmt.Sprintf("%s slow", h.svc)
	}
	c.action = fmt.Sprintf("look at %s: its own time per request grew %.1f× from %s; check its saturation, recent changes and what it waits on outside the traces (disk, locks, an outside API's limits)%s",
		h.svc, h.ratio, since, callersText(an.rp.g, h.svc))
	q := fmt.Sprintf(`(sum(rate(%s{server=%q}[2m])) - (sum(rate(%s{client=%q}[2m])) or vector(0))) / sum(rate(%s{server=%q}[2m]))`,
		graphServerSum, h.svc, graphClientSum, h.svc, graphServerCnt, h.svc)
	c.evidence = append(c.evidence, Evidence{Signal: "traces_service_graph_request_server_seconds", Query: q,
		Summary: fmt.Sprintf("%s's own time per request %s from %s (earlier %s, %.1f×, %.0f spreads)", h.svc,
			fmtSeconds(h.shift.After), since, fmtSeconds(h.shift.Before), h.ratio, h.shift.Z)})
	if !math.IsNaN(h.shareBefore) && !math.IsNaN(h.shareAfter) {
		c.evidence = append(c.evidence, Evidence{Signal: "traces_service_graph_request_server_seconds",
			Query:   fmt.Sprintf(`sum(rate(%s{client=%q, connection_type=%q}[5m]))`, graphServerSum, virtualUser, virtualNode),
			Summary: fmt.Sprintf("its share of the time requests take grew from %.0f%% to %.0f%%", 100*h.shareBefore, 100*h.shareAfter)})
	}
	if why == nil {
		an.explainUpstream(c, h.svc)
	}
	return c
}

// deeperCause is a candidate of the metrics that explains why svc's
// model server (or any workload of that name) is slow: one on its
// workload, pods or nodes, at least as strong, that started no later.
func (an *analysis) deeperCause(c *candidate) *candidate {
	svc := c.ent[catalog.KeyService]
	for _, d := range an.deps {
		if d.name != svc {
			continue
		}
		for _, o := range an.cands {
			if o.strength < minExplain || (!o.onset.IsZero() && o.onset.After(c.onset.Add(precedenceSlack))) {
				continue
			}
			touches := o.workload != "" && o.workload == d.workload()
			for _, n := range o.nodes {
				touches = touches || contains(d.nodes, n)
			}
			for _, p := range o.pods {
				touches = touches || contains(d.pods, p)
			}
			if touches {
				return o
			}
		}
	}
	return nil
}

// callersText names who waits on svc, for an action.
func callersText(g *svcGraph, svc string) string {
	var cs []string
	for _, c := range g.callers[svc] {
		if c != graphUser && !contains(cs, c) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return ""
	}
	if len(cs) == 1 {
		return "; " + cs[0] + " waits on it"
	}
	return "; " + strings.Join(cs, ", ") + " wait on it"
}
