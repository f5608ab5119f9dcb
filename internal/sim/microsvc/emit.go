package microsvc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// emitter turns the model's state after each step into one scrape round.
type emitter interface {
	emit(w *world, s *sink)
}

// pod is where a service runs: its Deployment's pod, node and IP.
type pod struct {
	name, node, ip string
	uptime         float64 // seconds the container has run at the start
}

// workers are the nodes the pods are spread over.
const workers = 3

// newPods names every service's pod from the seed, as a Deployment does
// (name-<pod-template-hash>-<suffix>), and places it.
func newPods(cfg Config, g *graph) []pod {
	out := make([]pod, len(g.app.services))
	for i, d := range g.app.services {
		r := newRand(cfg.Seed, "pod", d.name)
		node := 1 + r.IntN(workers)
		out[i] = pod{
			name:   d.name + "-" + podHash(r) + "-" + podSuffix(r, 5),
			node:   fmt.Sprintf("worker-%d", node),
			ip:     fmt.Sprintf("10.244.%d.%d", node, 2+r.IntN(250)),
			uptime: (2 + 18*r.Float64()) * 86400,
		}
	}
	return out
}

// podHash is a pod-template-hash: 8 to 10 characters of the generated-name
// alphabet.
func podHash(r *rand.Rand) string { return podSuffix(r, 8+r.IntN(3)) }

// latencyBuckets are the HTTP server duration histogram's bounds.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// promEmitter emits what Prometheus scrapes in Kubernetes: cAdvisor's
// container metrics (through the kubelet), each service's HTTP metrics
// and up.
type promEmitter struct {
	cpu, mem, limit, rx, tx, reqs, dur, up *family
	svcs                                   []promSvc
	// uninstrumented leaves out the stores' request metrics.
	uninstrumented bool
}

// promSvc is one service's label sets and counters.
type promSvc struct {
	cadvisor, app, ok, fail    []string
	buckets                    [][]string
	cpuTotal, rxTotal, txTotal float64
	okTotal, failTotal         float64
	cum                        []float64
	count, sumTotal            float64
}

func newPromEmitter(cfg Config, g *graph, pods []pod, s *sink) *promEmitter {
	e := &promEmitter{
		cpu:   s.family("container_cpu_usage_seconds", typeCounter, "Cumulative cpu time consumed in seconds."),
		mem:   s.family("container_memory_working_set_bytes", typeGauge, "Current working set in bytes."),
		limit: s.family("container_spec_memory_limit_bytes", typeGauge, "Memory limit for the container."),
		rx:    s.family("container_network_receive_bytes", typeCounter, "Cumulative count of bytes received"),
		tx:    s.family("container_network_transmit_bytes", typeCounter, "Cumulative count of bytes transmitted"),
		reqs:  s.family("http_requests", typeCounter, "Total number of HTTP requests served, by status code."),
		dur:   s.family("http_server_request_duration_seconds", typeHistogram, "Duration of HTTP server requests."),
		up:    s.family("up", typeGauge, "1 if the target was scraped, 0 otherwise."),

		uninstrumented: cfg.Uninstrumented,
	}
	for i, d := range g.app.services {
		p := pods[i]
		ps := promSvc{
			cadvisor: []string{"container", d.name, "namespace", cfg.Namespace, "pod", p.name, "service", d.name,
				"instance", p.node, "job", "kubelet"},
			app: []string{"container", d.name, "namespace", cfg.Namespace, "pod", p.name, "service", d.name,
				"instance", p.ip + ":" + strconv.Itoa(d.port), "job", d.name},
			cum: make([]float64, len(latencyBuckets)),
		}
		ps.ok, ps.fail = with(ps.app, "code", "200"), with(ps.app, "code", "500")
		for _, b := range latencyBuckets {
			ps.buckets = append(ps.buckets, with(ps.app, "le", formatLe(b)))
		}
		ps.buckets = append(ps.buckets, with(ps.app, "le", "+Inf"))
		// The container has run for a while: its counters hold its
		// uptime's nominal work.
		rate := g.nomRate[i]
		ps.cpuTotal = round((d.cpuBase+d.cpuCost*rate)*p.uptime, 3)
		ps.rxTotal = math.Round((netIdleBytes + rate*d.reqBytes) * p.uptime)
		ps.txTotal = math.Round((netIdleBytes + rate*d.respBytes) * p.uptime)
		n := math.Round(rate * p.uptime)
		ps.failTotal = math.Round(n * d.errFrac)
		ps.okTotal = n - ps.failTotal
		ps.observe(n, g.nomLat[i], d.sigma)
		e.svcs = append(e.svcs, ps)
	}
	return e
}

// observe adds n requests of mean latency lat and log-normal shape sigma
// to the histogram: the expected share of them lands in each bucket.
func (p *promSvc) observe(n, lat, sigma float64) {
	if n <= 0 {
		return
	}
	median := lat * math.Exp(-sigma*sigma/2)
	for i, b := range latencyBuckets {
		p.cum[i] += n * lognormalCDF(b, median, sigma)
	}
	p.count += n
	p.sumTotal += n * lat
}

func (p *promSvc) reset() {
	p.cpuTotal, p.okTotal, p.failTotal, p.count, p.sumTotal = 0, 0, 0, 0, 0
	clear(p.cum)
}

func (e *promEmitter) emit(w *world, s *sink) {
	for i := range e.svcs {
		ps, st, d := &e.svcs[i], &w.svcs[i], &w.g.app.services[i]
		// A container restart resets the container's counters and the
		// process's; the network counters are the pod's and keep going.
		if st.restart {
			ps.reset()
		}
		ps.cpuTotal += st.cpu * w.stepS
		ps.rxTotal += math.Round(st.rx * w.stepS)
		ps.txTotal += math.Round(st.tx * w.stepS)
		ps.okTotal += st.n - st.errs
		ps.failTotal += st.errs
		ps.observe(st.n, st.lat, st.sigma)

		s.put(e.cpu, "container_cpu_usage_seconds_total", ps.cadvisor, round(ps.cpuTotal, 6))
		s.put(e.mem, "container_memory_working_set_bytes", ps.cadvisor, st.mem)
		s.put(e.limit, "container_spec_memory_limit_bytes", ps.cadvisor, d.memLimit)
		s.put(e.rx, "container_network_receive_bytes_total", ps.cadvisor, ps.rxTotal)
		s.put(e.tx, "container_network_transmit_bytes_total", ps.cadvisor, ps.txTotal)
		if e.uninstrumented && d.store {
			continue
		}
		s.put(e.reqs, "http_requests_total", ps.ok, ps.okTotal)
		s.put(e.reqs, "http_requests_total", ps.fail, ps.failTotal)
		for j := range latencyBuckets {
			s.put(e.dur, "http_server_request_duration_seconds_bucket", ps.buckets[j], math.Min(math.Round(ps.cum[j]), ps.count))
		}
		s.put(e.dur, "http_server_request_duration_seconds_bucket", ps.buckets[len(latencyBuckets)], ps.count)
		s.put(e.dur, "http_server_request_duration_seconds_sum", ps.app, round(ps.sumTotal, 6))
		s.put(e.dur, "http_server_request_duration_seconds_count", ps.app, ps.count)
		s.put(e.up, "up", ps.app, 1)
	}
}

// rcaEmitter emits the RCAEval data sets' per-service columns as gauges:
// cpu (cores), mem (bytes), load (requests/s), latency (seconds, median
// and 90th percentile) and error (failed requests/s).
type rcaEmitter struct {
	cpu, mem, load, lat, errs *family
	kv, p50, p90              [][]string
	// skip marks the services whose request columns are left out.
	skip []bool
}

func newRCAEmitter(cfg Config, g *graph, s *sink) *rcaEmitter {
	e := &rcaEmitter{
		cpu:  s.family("cpu", typeGauge, "CPU used by the service's container, in cores."),
		mem:  s.family("mem", typeGauge, "Working set of the service's container, in bytes."),
		load: s.family("load", typeGauge, "Requests the service serves per second."),
		lat:  s.family("latency", typeGauge, "Latency of the service's responses, in seconds."),
		errs: s.family("error", typeGauge, "Failed requests per second."),
	}
	for _, d := range g.app.services {
		kv := []string{"service", d.name}
		e.skip = append(e.skip, cfg.Uninstrumented && d.store)
		e.kv = append(e.kv, kv)
		e.p50 = append(e.p50, with(kv, "quantile", "0.5"))
		e.p90 = append(e.p90, with(kv, "quantile", "0.9"))
	}
	return e
}

// z90 is the standard normal's 90th percentile.
const z90 = 1.2815515655446004

func (e *rcaEmitter) emit(w *world, s *sink) {
	for i := range w.svcs {
		st := &w.svcs[i]
		median := st.lat * math.Exp(-st.sigma*st.sigma/2)
		s.put(e.cpu, "cpu", e.kv[i], round(st.cpu, 6))
		s.put(e.mem, "mem", e.kv[i], st.mem)
		if e.skip[i] {
			continue
		}
		s.put(e.load, "load", e.kv[i], round(st.n/w.stepS, 4))
		s.put(e.lat, "latency", e.p50[i], round(median, 6))
		s.put(e.lat, "latency", e.p90[i], round(median*math.Exp(z90*st.sigma), 6))
		s.put(e.errs, "error", e.kv[i], round(st.errs/w.stepS, 4))
	}
}

func lognormalCDF(x, median, sigma float64) float64 {
	return 0.5 * math.Erfc(-math.Log(x/median)/(sigma*math.Sqrt2))
}

// formatLe writes a bucket bound as OpenMetrics does: always with a
// fraction or an exponent (1.0, 0.005).
func formatLe(b float64) string {
	s := strconv.FormatFloat(b, 'f', -1, 64)
	if b == math.Trunc(b) {
		s += ".0"
	}
	return s
}
