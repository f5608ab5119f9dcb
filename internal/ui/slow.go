package ui

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/hops"
)

// slowView is /slow: the slowest requests of the window and, per route,
// each service's time on the critical path — what vigil slow prints, from
// hops.Routes. Its JSON is hops' /api/v1/slow.
type slowView struct {
	From, To time.Time
	Verdict  string
	Answer   string
	Counts   []count
	// Off: the UI has no trace store.
	Off bool
	// Slowest are the window's slowest traces over every route.
	Slowest []slowTrace
	Routes  []slowRoute
	// JSON is the same data's /api/v1/slow link.
	JSON string
}

// slowRoute is one route's breakdown.
type slowRoute struct {
	Route                   string
	Traces, Errors, Sampled int
	P50, P95, Max           string
	// Headline is the route's service with the largest share, as
	// "vector search 420 ms" (its role and median time on the path).
	Headline string
	Services []slowService
	Slowest  []slowTrace
}

// slowService is one service's time on a route's critical paths.
type slowService struct {
	Service, Role   string
	Virtual         bool
	Traces          int
	P50, P95, Share string
	ShareWidth      int
}

// slowTrace is one trace, linked to its waterfall.
type slowTrace struct {
	ID, Href, Route string
	Start           time.Time
	Duration        string
	Error           bool
	dur             time.Duration
}

// maxSlowest is how many traces the page's first table lists.
const maxSlowest = 20

// slowPage is /slow.
func (h *Handler) slowPage(ctx context.Context, r *request) (any, error) {
	w := questionWindow(r.rng, r.now)
	v := &slowView{From: w.From, To: w.To, Verdict: verdictNoData}
	v.JSON = "/api/v1/slow?" + url.Values{"window": {promDuration(w.To.Sub(w.From))}, "end": {w.To.UTC().Format(time.RFC3339)}}.Encode()
	if h.opts.Traces == nil {
		v.Off = true
		v.Answer = "No traces: this Vigil keeps no trace store."
		return v, nil
	}
	routes, err := hops.Routes(ctx, h.opts.Traces, w.From, w.To)
	if err != nil {
		return nil, fmt.Errorf("render slow requests: %w", err)
	}
	if len(routes) == 0 {
		v.Answer = "No traces yet: no root span started from " + fmtTime(w.From) + " to " + fmtTime(w.To) + "."
		return v, nil
	}
	var traces, errs int
	for _, rb := range routes {
		sr := slowRoute{
			Route: rb.Route, Traces: rb.Traces, Errors: rb.Errors, Sampled: rb.Sampled,
			P50: rb.P50.String(), P95: rb.P95.String(), Max: rb.Max.String(),
		}
		var top *hops.ServiceStats
		for i, s := range rb.Services {
			sr.Services = append(sr.Services, slowService{
				Service: s.Service, Role: s.Role, Virtual: s.Virtual, Traces: s.Traces,
				P50: s.P50.String(), P95: s.P95.String(), Share: fmtPercent(s.Share), ShareWidth: int(s.Share*100 + 0.5),
			})
			if top == nil || s.Share > top.Share {
				top = &rb.Services[i]
			}
		}
		if top != nil {
			sr.Headline = top.Role + " " + top.P50.String()
		}
		for _, t := range rb.Slowest {
			st := slowTrace{
				ID: t.TraceID, Href: r.link("/traces/" + url.PathEscape(t.TraceID)), Route: rb.Route,
				Start: t.Start, Duration: t.Duration.String(), Error: t.Error, dur: t.Duration.D(),
			}
			sr.Slowest = append(sr.Slowest, st)
			v.Slowest = append(v.Slowest, st)
		}
		v.Routes = append(v.Routes, sr)
		traces, errs = traces+rb.Traces, errs+rb.Errors
	}
	slices.SortStableFunc(v.Slowest, func(a, b slowTrace) int { return cmp.Compare(b.dur, a.dur) })
	v.Slowest = v.Slowest[:min(len(v.Slowest), maxSlowest)]
	v.Verdict = verdictHealthy
	if errs > 0 {
		v.Verdict = verdictUnhealthy
	}
	v.Counts = []count{
		{Label: "requests (root spans)", N: fmt.Sprint(traces), Class: "none"},
		{Label: "routes", N: fmt.Sprint(len(routes)), Class: "none"},
		{Label: "failed", N: fmt.Sprint(errs), Class: nonZero(float64(errs))},
	}
	slowest := routes[0]
	v.Answer = fmt.Sprintf("The slowest route is %s: p95 %s over %d requests", slowest.Route, slowest.P95, slowest.Traces)
	if v.Routes[0].Headline != "" {
		v.Answer += ", most of it in " + v.Routes[0].Headline + " (median)"
	}
	if len(v.Slowest) > 0 {
		v.Answer += fmt.Sprintf("; the slowest request took %s", v.Slowest[0].Duration)
	}
	v.Answer += "."
	return v, nil
}
