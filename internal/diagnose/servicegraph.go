package diagnose

import (
	"cmp"
	"context"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// The service graph's and the span metrics' names: the OpenTelemetry
// Collector's servicegraph and spanmetrics connectors' (and Tempo's), which
// internal/spanmetrics writes too, so a graph from someone else's Collector
// reads the same as Vigil's own.
const (
	graphRequests  = "traces_service_graph_request_total"
	graphFailed    = "traces_service_graph_request_failed_total"
	graphServerSum = "traces_service_graph_request_server_seconds_sum"
	graphServerCnt = "traces_service_graph_request_server_seconds_count"
	graphClientSum = "traces_service_graph_request_client_seconds_sum"
	spanCalls      = "traces_span_metrics_calls_total"

	// graphUser is the virtual client of requests that enter the graph (a
	// server span without a parent): the connectors call it "user", with
	// connection_type "virtual_node", and a service may be named "user"
	// too (Sock Shop's is), so the graph keeps it under a name no service
	// has.
	graphUser = "\x00user"
	// virtualUser and virtualNode are the connectors' names for it.
	virtualUser = "user"
	virtualNode = "virtual_node"

	spanKindServer      = "SPAN_KIND_SERVER"
	spanKindUnspecified = "SPAN_KIND_UNSPECIFIED"
	statusError         = "STATUS_CODE_ERROR"
)

// graphEdge is one edge client → server of the service graph: per step,
// the requests, the failed ones, and the seconds the server and the client
// saw (increases; NaN where the edge has no sample).
type graphEdge struct {
	client, server           string
	reqs, failed             []float64
	srvSum, srvCount, cliSum []float64
	// namespace is the server's, where the graph's dimensions carry it.
	namespace string
}

// svcGraph is the service graph of the window.
type svcGraph struct {
	edges   []*graphEdge
	callees map[string][]string
	callers map[string][]string
	// services are every client and server but the virtual user, sorted.
	services []string
}

// hasGraph tells whether the window holds a service graph.
func (v *view) hasGraph() bool { return v.have.Has(graphRequests) }

// serviceGraph reads the service graph of the window: nil when the store
// holds none. Series of one edge (connection types, extra dimensions) add
// up.
func (v *view) serviceGraph(ctx context.Context) (*svcGraph, error) {
	if !v.hasGraph() {
		return nil, nil
	}
	g := &svcGraph{callees: map[string][]string{}, callers: map[string][]string{}}
	metrics := []string{graphRequests, graphFailed, graphServerSum, graphServerCnt, graphClientSum}
	raws := make([][]rawSeries, len(metrics))
	servers := map[string]bool{}
	for i, m := range metrics {
		if !v.have.Has(m) {
			continue
		}
		raw, err := v.fetch(ctx, m)
		if err != nil {
			return nil, err
		}
		raws[i] = raw
		for _, r := range raw {
			servers[r.lset.Get("server")] = true
		}
	}
	// The virtual user: "user" as a virtual node, or as a client that is
	// never a server (a graph without connection types).
	clientOf := func(lset labels.Labels) string {
		c := lset.Get("client")
		if c == virtualUser && (lset.Get("connection_type") == virtualNode || !servers[virtualUser]) {
			return graphUser
		}
		return c
	}
	byKey := map[[2]string]*graphEdge{}
	edge := func(lset labels.Labels) *graphEdge {
		k := [2]string{clientOf(lset), lset.Get("server")}
		if k[0] == "" || k[1] == "" {
			return nil
		}
		e := byKey[k]
		if e == nil {
			e = &graphEdge{client: k[0], server: k[1]}
			for _, p := range []*[]float64{&e.reqs, &e.failed, &e.srvSum, &e.srvCount, &e.cliSum} {
				*p = nanSeries(v.n)
			}
			byKey[k] = e
			g.edges = append(g.edges, e)
		}
		if ns := firstLabel(lset, "server_service_namespace", "server_k8s_namespace_name", "server_namespace"); ns != "" {
			e.namespace = ns
		}
		return e
	}
	dsts := []func(*graphEdge) []float64{
		func(e *graphEdge) []float64 { return e.reqs },
		func(e *graphEdge) []float64 { return e.failed },
		func(e *graphEdge) []float64 { return e.srvSum },
		func(e *graphEdge) []float64 { return e.srvCount },
		func(e *graphEdge) []float64 { return e.cliSum },
	}
	for i, raw := range raws {
		for _, r := range raw {
			if e := edge(r.lset); e != nil {
				addInto(dsts[i](e), counterIncreases(r.v))
			}
		}
	}
	g.index()
	return g, nil
}

// index sorts the edges and fills the callers, callees and services.
func (g *svcGraph) index() {
	slices.SortFunc(g.edges, func(a, b *graphEdge) int {
		if c := cmp.Compare(a.client, b.client); c != 0 {
			return c
		}
		return cmp.Compare(a.server, b.server)
	})
	seen := map[string]bool{}
	for _, e := range g.edges {
		g.callees[e.client] = append(g.callees[e.client], e.server)
		g.callers[e.server] = append(g.callers[e.server], e.client)
		for _, s := range []string{e.client, e.server} {
			if s != graphUser && !seen[s] {
				seen[s] = true
				g.services = append(g.services, s)
			}
		}
	}
	slices.Sort(g.services)
}

// firstLabel is the value of the first of names that lset carries.
func firstLabel(lset labels.Labels, names ...string) string {
	for _, n := range names {
		if v := lset.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// roots are the services requests enter by: those the virtual user calls,
// or, in a graph without it, those no one calls.
func (g *svcGraph) roots() []string {
	var out []string
	for _, s := range g.callees[graphUser] {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > 0 {
		slices.Sort(out)
		return out
	}
	for _, s := range g.services {
		if len(g.callers[s]) == 0 {
			out = append(out, s)
		}
	}
	return out
}

// reaches tells whether to can be reached from from along calls (a service
// reaches itself).
func (g *svcGraph) reaches(from, to string) bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == to {
			return true
		}
		for _, c := range g.callees[s] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return false
}

// depth is each service's distance in calls from the nearest root (the
// virtual user not counted).
func (g *svcGraph) depth() map[string]int {
	d := map[string]int{}
	queue := g.roots()
	for _, r := range queue {
		d[r] = 0
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, c := range g.callees[s] {
			if _, ok := d[c]; !ok {
				d[c] = d[s] + 1
				queue = append(queue, c)
			}
		}
	}
	return d
}

// inOut sums, per step, a service's incoming requests, the seconds its
// server side spent on them, and the seconds its client side waited on
// its own calls.
func (g *svcGraph) inOut(svc string, n int) (count, srvSum, cliSum []float64) {
	count, srvSum, cliSum = nanSeries(n), nanSeries(n), nanSeries(n)
	for _, e := range g.edges {
		if e.server == svc {
			addInto(count, e.srvCount)
			addInto(srvSum, e.srvSum)
		}
		if e.client == svc {
			addInto(cliSum, e.cliSum)
		}
	}
	return count, srvSum, cliSum
}

// pooledRatio is, per step, the sum of num over the w steps ending there
// over that of den; NaN where den's sum is below minDen.
func pooledRatio(num, den []float64, w int, minDen float64) []float64 {
	out := nanSeries(len(num))
	for i := range out {
		d := sumOver(den, i-w+1, i)
		if d >= minDen && d > 0 {
			out[i] = sumOver(num, i-w+1, i) / d
		}
	}
	return out
}

// counterIncreases turns a counter's values into per-step increases, as
// increases does, but a series that first appears inside the window
// counts from zero: span metrics and the service graph create a series
// with the first span that needs it (the first error of a tenant), and
// that span is an increase too.
func counterIncreases(vals []float64) []float64 {
	out := increases(vals)
	if i := firstValid(vals); i > 0 {
		out[i] = vals[i]
	}
	return out
}
