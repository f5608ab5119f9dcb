package diagnose

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// Request-path symptoms, read from the service graph at the services
// requests enter by: their mean latency at reqLatencyRatio times its
// earlier level (and slowZ spreads above it), or their failed share at
// errorShare and three times its earlier level, for pooledRun steps, each
// pooled over latencyWindow steps of at least reqMinRequests requests.
const (
	reqLatencyRatio = 1.25
	reqMinRequests  = 20
)

// requestPath is what the request path (span metrics and the service
// graph) shows in one diagnosis.
type requestPath struct {
	g *svcGraph
	// symptoms maps the index of each request-path symptom to its service.
	symptoms map[int]string
}

// findRequestPath reads the service graph and finds the request-path
// symptoms of the services requests enter by. With an entity label the
// request path is the generic layer's (the graph it walks), not the
// knowledge layer's: its symptoms and causes would name the same services
// under other kinds.
func (an *analysis) findRequestPath(ctx context.Context) error {
	if an.v.e.opts.EntityLabel != "" {
		return nil
	}
	g, err := an.v.serviceGraph(ctx)
	if err != nil || g == nil {
		return err
	}
	an.rp = &requestPath{g: g, symptoms: map[int]string{}}
	for _, root := range g.roots() {
		reqs, failed, cnt, sum := nanSeries(an.v.n), nanSeries(an.v.n), nanSeries(an.v.n), nanSeries(an.v.n)
		for _, e := range g.edges {
			if e.server == root {
				addInto(reqs, e.reqs)
				addInto(failed, e.failed)
				addInto(cnt, e.srvCount)
				addInto(sum, e.srvSum)
			}
		}
		an.rootLatency(root, pooledRatio(sum, cnt, latencyWindow, reqMinRequests))
		an.rootErrors(root, pooledRatio(failed, reqs, latencyWindow, reqMinRequests))
	}
	return nil
}

// addRequestSymptom records a symptom of a service of the request path.
func (an *analysis) addRequestSymptom(kind, svc string, e episode, resolved *time.Time, summary string) {
	i := an.addSymptom(symptomRec{Symptom: Symptom{Kind: kind, Entity: Entity{catalog.KeyService: svc}, Since: an.v.time(e.start), Summary: summary, ResolvedAt: resolved}})
	an.rp.symptoms[i] = svc
}

// rootLatency finds a lasting rise of a root service's mean latency.
func (an *analysis) rootLatency(svc string, mean []float64) {
	ref := reference(mean, detect.Floor{Rel: 0.05, Abs: 0.001})
	if ref.N == 0 {
		return
	}
	bad := func(i int) bool { return mean[i] >= reqLatencyRatio*ref.Median && ref.Z(mean[i]) >= slowZ }
	if es := episodes(an.v.n, bad, pooledRun); len(es) > 0 {
		e, resolved := an.latest(es, mean)
		an.addRequestSymptom(SymptomInferenceLatencyHigh, svc, e, resolved, fmt.Sprintf("%s: mean request latency %s (earlier %s)", svc,
			fmtSeconds(maxOf(mean[e.start:e.end+1])), fmtSeconds(ref.Median)))
	}
}

// rootErrors finds a lasting rise of a root service's failed share.
func (an *analysis) rootErrors(svc string, share []float64) {
	ref := reference(share, detect.Floor{Rel: 0.1, Abs: 0.005})
	if ref.N == 0 {
		return
	}
	bad := func(i int) bool { return share[i] >= errorShare && share[i] >= 3*ref.Median }
	if es := episodes(an.v.n, bad, pooledRun); len(es) > 0 {
		e, resolved := an.latest(es, share)
		an.addRequestSymptom(SymptomErrorRateHigh, svc, e, resolved, fmt.Sprintf("%s: %.0f%% of requests failed (earlier %.1f%%)", svc,
			100*maxOf(share[e.start:e.end+1]), 100*ref.Median))
	}
}

// linkUpstream links the metrics' causes of a workload that is a service
// of the request path (a model server's rollout, saturation or node
// fault) to the request-path symptoms of the services that call it.
func (an *analysis) linkUpstream() {
	if an.rp == nil {
		return
	}
	for _, c := range an.cands {
		if c.strength < minExplain || c.workload == "" || c.kind == KindDependencySlow || c.kind == KindTenantFailure {
			continue
		}
		_, name, _ := strings.Cut(c.workload, "/")
		if slices.Contains(an.rp.g.services, name) {
			an.explainUpstream(c, name)
		}
	}
}

// explainUpstream links c to the request-path symptoms of the services
// that reach svc in the graph (svc's own included) that did not start
// before it.
func (an *analysis) explainUpstream(c *candidate, svc string, kinds ...string) {
	if an.rp == nil {
		return
	}
	for i, at := range an.rp.symptoms {
		s := an.syms[i]
		if len(kinds) > 0 && !contains(kinds, s.Kind) {
			continue
		}
		if !an.rp.g.reaches(at, svc) {
			continue
		}
		if !c.onset.IsZero() && c.onset.After(s.Since.Add(precedenceSlack)) {
			continue
		}
		if !slices.Contains(c.explains, i) {
			c.explains = append(c.explains, i)
		}
	}
}

// fmtSeconds writes a latency: milliseconds below a second.
func fmtSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Second {
		return fmt.Sprintf("%.0fms", s*1000)
	}
	return fmt.Sprintf("%.2fs", s)
}
