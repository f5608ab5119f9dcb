package hops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/vigil-obs/vigil/internal/traces"
)

// Bounds of the aggregation.
const (
	// MaxTraces is how many of a route's newest traces are broken down.
	MaxTraces = 200
	// MaxRoutes is how many routes Routes reports: those with the most
	// traces.
	MaxRoutes = 50
	// maxBreakdowns bounds the traces Routes breaks down over all routes.
	maxBreakdowns = 2000
	// slowestKept is how many slowest traces a route lists.
	slowestKept = 5
	// reservoirSize bounds the root durations kept for percentiles.
	reservoirSize = 20_000
)

// root is a root span seen in the window.
type root struct {
	id    pcommon.TraceID
	start time.Time
	dur   time.Duration
	err   bool
}

// routeAcc gathers one route's root spans.
type routeAcc struct {
	name          string
	count, errors int
	// durs is a uniform sample of the roots' durations.
	durs []time.Duration
	max  time.Duration
	// newest is a ring of the newest roots.
	newest  []root
	next    int
	slowest []root
	rng     *rand.Rand
}

func (a *routeAcc) add(r root) {
	a.count++
	if r.err {
		a.errors++
	}
	a.max = max(a.max, r.dur)
	if len(a.durs) < reservoirSize {
		a.durs = append(a.durs, r.dur)
	} else if j := a.rng.IntN(a.count); j < reservoirSize {
		a.durs[j] = r.dur
	}
	if len(a.newest) < cap(a.newest) {
		a.newest = append(a.newest, r)
	} else if len(a.newest) > 0 {
		a.newest[a.next] = r
		a.next = (a.next + 1) % len(a.newest)
	}
	if len(a.slowest) < slowestKept || r.dur > a.slowest[len(a.slowest)-1].dur {
		i, _ := slices.BinarySearchFunc(a.slowest, r.dur, func(x root, d time.Duration) int { return cmp.Compare(d, x.dur) })
		a.slowest = slices.Insert(a.slowest, i, r)
		if len(a.slowest) > slowestKept {
			a.slowest = a.slowest[:slowestKept]
		}
	}
}

// Aggregate breaks down the traces of route (a root span's name or its
// http.route) whose root span starts in [from, to].
func Aggregate(ctx context.Context, st *traces.Store, route string, from, to time.Time) (RouteBreakdown, error) {
	if route == "" {
		return RouteBreakdown{}, errors.New("aggregate: no route")
	}
	accs, err := scanRoots(ctx, st, route, from, to, MaxTraces)
	if err != nil {
		return RouteBreakdown{}, err
	}
	acc := accs[route]
	if acc == nil {
		acc = newRouteAcc(route, 0)
	}
	return breakdownRoute(ctx, st, acc, from, to)
}

// Routes breaks down every route whose root spans start in [from, to]: the
// MaxRoutes with the most traces, the slowest (by p95) first.
func Routes(ctx context.Context, st *traces.Store, from, to time.Time) ([]RouteBreakdown, error) {
	accs, err := scanRoots(ctx, st, "", from, to, MaxTraces)
	if err != nil {
		return nil, err
	}
	list := make([]*routeAcc, 0, len(accs))
	for _, a := range accs {
		list = append(list, a)
	}
	slices.SortFunc(list, func(a, b *routeAcc) int {
		return cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(a.name, b.name))
	})
	list = list[:min(len(list), MaxRoutes)]
	per := max(1, maxBreakdowns/max(1, len(list)))
	out := make([]RouteBreakdown, 0, len(list))
	for _, a := range list {
		if len(a.newest) > per {
			a.newest = newestOf(a)[len(a.newest)-per:]
			a.next = 0
		}
		rb, err := breakdownRoute(ctx, st, a, from, to)
		if err != nil {
			return nil, err
		}
		out = append(out, rb)
	}
	slices.SortStableFunc(out, func(a, b RouteBreakdown) int { return cmp.Compare(b.P95, a.P95) })
	return out, nil
}

func newRouteAcc(name string, keep int) *routeAcc {
	return &routeAcc{name: name, newest: make([]root, 0, keep), rng: rand.New(rand.NewPCG(1, 2))}
}

// scanRoots reads the root spans starting in [from, to], grouped by route;
// with route set, only those of that route, under that name.
func scanRoots(ctx context.Context, st *traces.Store, route string, from, to time.Time, keep int) (map[string]*routeAcc, error) {
	accs := map[string]*routeAcc{}
	err := st.Spans(ctx, traces.SpanQuery{Start: from, End: to}, func(s traces.Span) bool {
		if !s.Root {
			return true
		}
		name := s.Name
		if route != "" {
			r, ok := s.Span.Attributes().Get("http.route")
			if name != route && (!ok || r.AsString() != route) {
				return true
			}
			name = route
		}
		a := accs[name]
		if a == nil {
			a = newRouteAcc(name, keep)
			accs[name] = a
		}
		a.add(root{id: s.TraceID, start: s.Start, dur: s.Duration, err: s.Error})
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read the root spans from %s to %s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	return accs, nil
}

// newestOf is a's ring of newest roots, oldest first.
func newestOf(a *routeAcc) []root {
	return append(slices.Clone(a.newest[a.next:]), a.newest[:a.next]...)
}

// serviceAcc gathers one service's times over a route's traces.
type serviceAcc struct {
	role     string
	virtual  bool
	times    []time.Duration
	sum      time.Duration
	position float64
}

// breakdownRoute breaks down a's newest traces and sums them up.
func breakdownRoute(ctx context.Context, st *traces.Store, a *routeAcc, from, to time.Time) (RouteBreakdown, error) {
	rb := RouteBreakdown{Route: a.name, From: from, To: to, Traces: a.count, Errors: a.errors, Max: Seconds(a.max),
		Services: []ServiceStats{}, Slowest: []TraceRef{}}
	durs := slices.Clone(a.durs)
	slices.Sort(durs)
	rb.P50, rb.P95 = Seconds(quantile(durs, 0.5)), Seconds(quantile(durs, 0.95))
	for _, s := range a.slowest {
		rb.Slowest = append(rb.Slowest, TraceRef{TraceID: s.id.String(), Start: s.start.UTC(), Duration: Seconds(s.dur), Error: s.err})
	}
	by := map[string]*serviceAcc{}
	var total time.Duration
	for _, r := range newestOf(a) {
		td, err := st.Trace(ctx, r.id)
		if errors.Is(err, traces.ErrNotFound) {
			continue // deleted by retention since the scan
		}
		if err != nil {
			return rb, fmt.Errorf("read trace %s: %w", r.id, err)
		}
		t := Breakdown(td)
		rb.Sampled++
		total += t.Duration.D()
		for i, s := range t.Services {
			sa := by[s.Service]
			if sa == nil {
				sa = &serviceAcc{role: s.Role, virtual: s.Virtual}
				by[s.Service] = sa
			}
			sa.times = append(sa.times, s.Exclusive.D())
			sa.sum += s.Exclusive.D()
			sa.position += float64(i)
		}
	}
	for name, sa := range by {
		slices.Sort(sa.times)
		ss := ServiceStats{Service: name, Role: sa.role, Virtual: sa.virtual, Traces: len(sa.times),
			P50: Seconds(quantile(sa.times, 0.5)), P95: Seconds(quantile(sa.times, 0.95))}
		if total > 0 {
			ss.Share = float64(sa.sum) / float64(total)
		}
		rb.Services = append(rb.Services, ss)
	}
	slices.SortFunc(rb.Services, func(x, y ServiceStats) int {
		px, py := by[x.Service].position/float64(x.Traces), by[y.Service].position/float64(y.Traces)
		return cmp.Or(cmp.Compare(px, py), cmp.Compare(x.Service, y.Service))
	})
	return rb, nil
}

// quantile is the nearest-rank q-quantile of sorted (0 when empty).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}
