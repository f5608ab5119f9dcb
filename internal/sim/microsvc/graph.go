package microsvc

import (
	"fmt"
	"math"
)

// call is one edge seen from one end: the service at the other end and
// the calls per request.
type call struct {
	svc   int
	calls float64
	async bool
}

// graph is an application resolved to indices: who calls whom, an order
// in which every caller comes before its callees, and the nominal request
// rates and latencies of the healthy application at its mean load.
type graph struct {
	app     *appDef
	idx     map[string]int
	callers [][]call // per service, who calls it
	callees [][]call // per service, whom it calls
	order   []int    // callers before callees; the entry first
	nomRate []float64
	nomLat  []float64
}

// newGraph resolves app; a call to an unknown service or a cycle is an
// error in the application's definition.
func newGraph(app *appDef) (*graph, error) {
	n := len(app.services)
	g := &graph{app: app, idx: make(map[string]int, n), callers: make([][]call, n), callees: make([][]call, n)}
	for i, s := range app.services {
		g.idx[s.name] = i
	}
	indeg := make([]int, n)
	for _, e := range app.edges {
		from, okF := g.idx[e.from]
		to, okT := g.idx[e.to]
		if !okF || !okT {
			return nil, fmt.Errorf("app %s: edge %s → %s names an unknown service", app.name, e.from, e.to)
		}
		g.callees[from] = append(g.callees[from], call{to, e.calls, e.async})
		g.callers[to] = append(g.callers[to], call{from, e.calls, e.async})
		indeg[to]++
	}
	// Kahn's algorithm, taking ready services in definition order so that
	// the order is stable.
	done := make([]bool, n)
	for len(g.order) < n {
		next := -1
		for i := range n {
			if !done[i] && indeg[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			return nil, fmt.Errorf("app %s: the call graph has a cycle", app.name)
		}
		done[next] = true
		g.order = append(g.order, next)
		for _, c := range g.callees[next] {
			indeg[c.svc]--
		}
	}
	if g.order[0] != 0 || len(g.callers[0]) > 0 {
		return nil, fmt.Errorf("app %s: the first service must be the entry, called by no one", app.name)
	}
	g.nominal()
	return g, nil
}

// nominal computes the healthy application's request rates and latencies
// at the load generator's mean load, without noise: a fixed point of the
// closed loop (rate = users / (think + latency)).
func (g *graph) nominal() {
	n := len(g.app.services)
	g.nomRate, g.nomLat = make([]float64, n), make([]float64, n)
	entryLat := 0.0
	for range 20 {
		g.nomRate[0] = g.app.users / (g.app.think + entryLat)
		for _, s := range g.order[1:] {
			g.nomRate[s] = 0
			for _, c := range g.callers[s] {
				g.nomRate[s] += g.nomRate[c.svc] * c.calls
			}
		}
		for i := n - 1; i >= 0; i-- {
			s := g.order[i]
			d := &g.app.services[s]
			rho := min(maxRho, (d.cpuBase+d.cpuCost*g.nomRate[s])/d.cpuLimit)
			g.nomLat[s] = d.svcTime/(1-rho) + g.calleeLatency(s, g.nomLat)
		}
		entryLat = g.nomLat[0]
	}
}

// calleeLatency is what the synchronous calls of one request of s add to
// its latency, given every service's latency.
func (g *graph) calleeLatency(s int, lat []float64) float64 {
	sum := 0.0
	for _, c := range g.callees[s] {
		if !c.async {
			sum += c.calls * lat[c.svc]
		}
	}
	return sum
}

// syncCallers lists the services that wait on s.
func (g *graph) syncCallers(s int) []int {
	var out []int
	for _, c := range g.callers[s] {
		if !c.async {
			out = append(out, c.svc)
		}
	}
	return out
}

// maxRho caps the utilisation the queueing factor 1/(1-ρ) sees: a
// saturated service is twenty times slower, not infinitely.
const maxRho = 0.95

// queueing is the M/M/1 slowdown at utilisation rho.
func queueing(rho float64) float64 { return 1 / (1 - math.Min(maxRho, math.Max(0, rho))) }
