package microsvc

import "math"

// graphUser is the servicegraph connector's virtual client of requests
// that enter the application (a server span without a parent).
const graphUser = "user"

// graphNetwork is the network time a client sees on top of the server's,
// seconds.
const graphNetwork = 0.0006

// graphEmitter emits the service graph, as the OpenTelemetry Collector's
// servicegraph connector writes it from the application's traces: per
// edge (and the virtual user in front of the entry) the requests, the
// failed ones, and the server's and the client's latency histograms. A
// request of an edge fails when the callee's does; its server side takes
// the callee's mean latency of the step, its client side that and the
// network.
type graphEmitter struct {
	reqs, failed, srv, cli *family
	edges                  []graphEdgeSeries
}

// graphEdgeSeries is one edge's label sets and running totals.
type graphEdgeSeries struct {
	from, to     int // from -1: the virtual user
	calls        float64
	kv           []string
	srvB, cliB   [][]string
	reqs, failed float64
	srvH, cliH   histTotals
}

// histTotals are a latency histogram's running totals.
type histTotals struct {
	cum        []float64
	count, sum float64
}

// observe adds n requests of mean latency lat and log-normal shape sigma.
func (h *histTotals) observe(n, lat, sigma float64) {
	if n <= 0 {
		return
	}
	if h.cum == nil {
		h.cum = make([]float64, len(latencyBuckets))
	}
	median := lat * math.Exp(-sigma*sigma/2)
	for i, b := range latencyBuckets {
		h.cum[i] += n * lognormalCDF(b, median, sigma)
	}
	h.count += n
	h.sum += n * lat
}

func newGraphEmitter(g *graph, s *sink) *graphEmitter {
	e := &graphEmitter{
		reqs:   s.family("traces_service_graph_request", typeCounter, "Requests between two services."),
		failed: s.family("traces_service_graph_request_failed", typeCounter, "Failed requests between two services."),
		srv:    s.family("traces_service_graph_request_server_seconds", typeHistogram, "Request durations seen by the server."),
		cli:    s.family("traces_service_graph_request_client_seconds", typeHistogram, "Request durations seen by the client."),
	}
	add := func(from, to int, calls float64, async bool) {
		client := graphUser
		if from >= 0 {
			client = g.app.services[from].name
		}
		kv := []string{"client", client, "server", g.app.services[to].name}
		switch {
		case from < 0:
			kv = append(kv, "connection_type", "virtual_node")
		case async:
			kv = append(kv, "connection_type", "messaging_system")
		}
		es := graphEdgeSeries{from: from, to: to, calls: calls, kv: kv}
		for _, b := range latencyBuckets {
			es.srvB = append(es.srvB, with(kv, "le", formatLe(b)))
		}
		es.srvB = append(es.srvB, with(kv, "le", "+Inf"))
		es.cliB = es.srvB
		e.edges = append(e.edges, es)
	}
	add(-1, 0, 1, false)
	for from, cs := range g.callees {
		for _, c := range cs {
			add(from, c.svc, c.calls, c.async)
		}
	}
	return e
}

func (e *graphEmitter) emit(w *world, s *sink) {
	for i := range e.edges {
		es := &e.edges[i]
		callee := &w.svcs[es.to]
		n := callee.n
		if es.from >= 0 {
			n = math.Round(w.svcs[es.from].n * es.calls)
		}
		es.reqs += n
		es.failed += math.Min(n, math.Round(n*callee.errFrac))
		es.srvH.observe(n, callee.lat, callee.sigma)
		es.cliH.observe(n, callee.lat+graphNetwork, callee.sigma)
		s.put(e.reqs, "traces_service_graph_request_total", es.kv, es.reqs)
		s.put(e.failed, "traces_service_graph_request_failed_total", es.kv, es.failed)
		putHist(s, e.srv, "traces_service_graph_request_server_seconds", es.kv, es.srvB, &es.srvH)
		putHist(s, e.cli, "traces_service_graph_request_client_seconds", es.kv, es.cliB, &es.cliH)
	}
}

// putHist puts a histogram's buckets, sum and count.
func putHist(s *sink, f *family, name string, kv []string, buckets [][]string, h *histTotals) {
	for j := range latencyBuckets {
		c := 0.0
		if h.cum != nil {
			c = math.Min(math.Round(h.cum[j]), h.count)
		}
		s.put(f, name+"_bucket", buckets[j], c)
	}
	s.put(f, name+"_bucket", buckets[len(latencyBuckets)], h.count)
	s.put(f, name+"_sum", kv, round(h.sum, 6))
	s.put(f, name+"_count", kv, h.count)
}
