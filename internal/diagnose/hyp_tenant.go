package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
)

// tenant_failure: one tenant's requests fail at a service far more often
// than the other tenants' do at the same time (its failed share at least
// tenantShare, and at least tenantOver times the others' plus
// tenantMargin, pooled over latencyWindow steps, for slowRun steps). When
// the others fail as well it is no tenant's trouble but the platform's,
// and the platform's cause is what explains it: no candidate.
const (
	tenantShare  = 0.1
	tenantOver   = 3.0
	tenantMargin = 0.05
	// tenantMinRequests is the least requests of the tenant in the pooled
	// steps for its share to count, and tenantMinFailed the least failed
	// ones: two failures of a quiet tenant's fifteen requests are chance.
	tenantMinRequests = 4
	tenantMinFailed   = 5
)

// tenantCalls are one service's server spans of one tenant per step: all
// of them and the failed ones.
type tenantCalls struct {
	all, failed []float64
}

// tenantFailure is one tenant failing at one service.
type tenantFailure struct {
	svc, tenant  string
	ep           episode
	share, other float64
}

// hypTenant finds a tenant whose requests fail where the others' succeed.
func hypTenant(ctx context.Context, an *analysis) ([]*candidate, error) {
	if !an.v.have.Has(spanCalls) || an.v.e.opts.EntityLabel != "" {
		return nil, nil // with an entity label, the generic layer's (see findRequestPath)
	}
	raw, err := an.v.fetch(ctx, spanCalls)
	if err != nil {
		return nil, err
	}
	// A service's requests are its SERVER spans; a service that records
	// none (a tracer that writes no span kinds) is judged by all its spans
	// of no kind: a failed request's share of them moves as its share of
	// the requests does.
	servers := map[string]bool{}
	for _, r := range raw {
		if r.lset.Get("span_kind") == spanKindServer {
			servers[r.lset.Get("service_name")] = true
		}
	}
	bySvc := map[string]map[string]*tenantCalls{}
	for _, r := range raw {
		svc, tenant := r.lset.Get("service_name"), firstLabel(r.lset, "tenant", "tenant_id")
		kind := r.lset.Get("span_kind")
		if svc == "" || tenant == "" || kind != spanKindServer && (servers[svc] || kind != spanKindUnspecified) {
			continue
		}
		if bySvc[svc] == nil {
			bySvc[svc] = map[string]*tenantCalls{}
		}
		tc := bySvc[svc][tenant]
		if tc == nil {
			tc = &tenantCalls{all: nanSeries(an.v.n), failed: nanSeries(an.v.n)}
			bySvc[svc][tenant] = tc
		}
		inc := counterIncreases(r.v)
		addInto(tc.all, inc)
		if r.lset.Get("status_code") == statusError {
			addInto(tc.failed, inc)
		}
	}
	// Per tenant, the services where it fails alone.
	byTenant := map[string][]tenantFailure{}
	for _, svc := range sortedKeys(bySvc) {
		for _, f := range an.tenantFailures(svc, bySvc[svc]) {
			byTenant[f.tenant] = append(byTenant[f.tenant], f)
		}
	}
	var out []*candidate
	for _, tenant := range sortedKeys(byTenant) {
		out = append(out, an.tenantCandidate(an.origin(byTenant[tenant]), len(byTenant)))
	}
	return out, nil
}

// tenantFailures finds the tenants that fail alone at one service. With
// fewer than three tenants there is no "others" to tell a tenant's
// trouble from the platform's.
func (an *analysis) tenantFailures(svc string, tenants map[string]*tenantCalls) []tenantFailure {
	if len(tenants) < 3 {
		return nil
	}
	names := sortedKeys(tenants)
	share := map[string][]float64{}
	for _, t := range names {
		share[t] = pooledRatio(tenants[t].failed, tenants[t].all, latencyWindow, tenantMinRequests)
	}
	var out []tenantFailure
	for _, t := range names {
		otherAll, otherFailed := nanSeries(an.v.n), nanSeries(an.v.n)
		for _, o := range names {
			if o != t {
				addInto(otherAll, tenants[o].all)
				addInto(otherFailed, tenants[o].failed)
			}
		}
		other := pooledRatio(otherFailed, otherAll, latencyWindow, reqMinRequests)
		mine := share[t]
		bad := func(i int) bool {
			return mine[i] >= tenantShare && !math.IsNaN(other[i]) && mine[i] >= tenantOver*other[i]+tenantMargin &&
				sumOver(tenants[t].failed, i-latencyWindow+1, i) >= tenantMinFailed
		}
		es := episodes(an.v.n, bad, slowRun)
		if len(es) == 0 {
			continue
		}
		e := es[0]
		// The others must not fail together with it: half or more of them
		// at its level is the platform's trouble.
		if an.othersFailToo(names, t, share, e) {
			continue
		}
		out = append(out, tenantFailure{svc: svc, tenant: t, ep: e,
			share: detect.Median(mine[e.start : e.end+1]), other: detect.Median(other[e.start : e.end+1])})
	}
	return out
}

// othersFailToo tells whether at least half of the other tenants fail at
// half of t's share or more during t's episode.
func (an *analysis) othersFailToo(names []string, t string, share map[string][]float64, e episode) bool {
	level := detect.Median(share[t][e.start : e.end+1])
	failing, others := 0, 0
	for _, o := range names {
		if o == t {
			continue
		}
		others++
		if m := detect.Median(share[o][e.start : e.end+1]); m >= 0.5*level {
			failing++
		}
	}
	return 2*failing >= others
}

// origin is where a tenant's failures begin: the service farthest from
// the entry among those where it fails (its callers fail because it
// does), or, with no graph, the one where its share is highest.
func (an *analysis) origin(fs []tenantFailure) tenantFailure {
	var depth map[string]int
	if an.rp != nil {
		depth = an.rp.g.depth()
	}
	best := fs[0]
	for _, f := range fs[1:] {
		df, db := depth[f.svc], depth[best.svc]
		if df > db || df == db && f.share > best.share {
			best = f
		}
	}
	return best
}

// tenantCandidate writes a tenant failing alone as a candidate.
func (an *analysis) tenantCandidate(f tenantFailure, failingTenants int) *candidate {
	c := &candidate{kind: KindTenantFailure, ent: Entity{catalog.KeyTenant: f.tenant, catalog.KeyService: f.svc},
		onset: an.v.time(f.ep.start)}
	c.strength = 0.5 + 0.4*math.Min(1, (f.share-f.other)/0.5)
	if failingTenants > 1 {
		c.strength *= 0.8 // several tenants alone each: less sure it is theirs
	}
	since := c.onset.Format(time.TimeOnly)
	c.headline = fmt.Sprintf("tenant %s failing in %s", f.tenant, f.svc)
	c.action = fmt.Sprintf("the platform serves the other tenants: look at what is %s's own in %s (its shard or partition, quota, credentials, data, rate limits) from %s",
		f.tenant, f.svc, since)
	sel := fmt.Sprintf(`service_name=%q, span_kind=%q`, f.svc, spanKindServer)
	c.evidence = append(c.evidence, Evidence{Signal: spanCalls,
		Query:   fmt.Sprintf(`sum by (tenant) (rate(%s{%s, status_code=%q}[5m])) / sum by (tenant) (rate(%s{%s}[5m]))`, spanCalls, sel, statusError, spanCalls, sel),
		Summary: fmt.Sprintf("%.0f%% of %s's requests to %s fail from %s; the other tenants' %.1f%%", 100*f.share, f.tenant, f.svc, since, 100*f.other)})
	an.explainUpstream(c, f.svc, SymptomErrorRateHigh)
	return c
}
