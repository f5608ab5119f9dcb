package admission

import (
	"container/list"
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FairGate bounds the queries that run at once, and shares them between
// clients: while one client alone queries, it may run up to the gate's
// capacity; while several do, each runs at most its share of the cores
// (GOMAXPROCS over the clients waiting or running, at least one), and a
// freed slot goes to the waiting client that runs the fewest. Queries are
// CPU-bound, so a client running more of them than its cores slows every
// other client without finishing sooner.
//
// A nil *FairGate admits everything at once.
type FairGate struct {
	capacity int
	cores    int

	mu      sync.Mutex
	running int
	clients map[string]*gateClient

	waiting prometheus.Gauge
	waited  prometheus.Histogram
}

type gateClient struct {
	running int
	waiters list.List // of chan struct{}
}

// NewFairGate returns a gate of capacity queries at once (positive). Its
// metrics go to reg when it is not nil.
func NewFairGate(capacity int, reg prometheus.Registerer) *FairGate {
	g := &FairGate{
		capacity: capacity,
		cores:    runtime.GOMAXPROCS(0),
		clients:  map[string]*gateClient{},
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_api_queries_waiting",
			Help: "Queries of the HTTP API waiting for their client's share of the query slots.",
		}),
		waited: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_api_query_wait_seconds",
			Help:    "How long queries of the HTTP API waited for a slot.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}),
	}
	if reg != nil {
		reg.MustRegister(g.waiting, g.waited)
	}
	return g
}

// Acquire waits for a slot for client, or for ctx to end (its error is
// returned). Each successful Acquire must be followed by one Release.
func (g *FairGate) Acquire(ctx context.Context, client string) error {
	if g == nil {
		return nil
	}
	start := time.Now()
	g.mu.Lock()
	c := g.clients[client]
	if c == nil {
		c = &gateClient{}
		g.clients[client] = c
	}
	if c.waiters.Len() == 0 && g.canRun(c) {
		g.run(c)
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	e := c.waiters.PushBack(ch)
	g.waiting.Inc()
	g.mu.Unlock()
	select {
	case <-ch:
		g.waited.Observe(time.Since(start).Seconds())
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-ch: // granted meanwhile: give it on
			g.release(client)
		default:
			c.waiters.Remove(e)
			g.waiting.Dec()
			g.forget(client, c)
			g.dispatch() // one client fewer: the others' shares grow
		}
		return ctx.Err()
	}
}

// Release gives back client's slot.
func (g *FairGate) Release(client string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release(client)
}

func (g *FairGate) release(client string) {
	c := g.clients[client]
	if c == nil || c.running == 0 {
		return
	}
	c.running--
	g.running--
	g.forget(client, c)
	g.dispatch()
}

func (g *FairGate) run(c *gateClient) {
	c.running++
	g.running++
}

func (g *FairGate) forget(client string, c *gateClient) {
	if c.running == 0 && c.waiters.Len() == 0 {
		delete(g.clients, client)
	}
}

// share is how many queries one client may run while len(g.clients)
// clients wait or run.
func (g *FairGate) share() int {
	n := len(g.clients)
	if n <= 1 {
		return g.capacity
	}
	return max(1, g.cores/n)
}

func (g *FairGate) canRun(c *gateClient) bool {
	return g.running < g.capacity && c.running < g.share()
}

// dispatch hands free slots to waiting clients, the one running the
// fewest first.
func (g *FairGate) dispatch() {
	for g.running < g.capacity {
		var best *gateClient
		for _, c := range g.clients {
			if c.waiters.Len() > 0 && g.canRun(c) && (best == nil || c.running < best.running) {
				best = c
			}
		}
		if best == nil {
			return
		}
		ch := best.waiters.Remove(best.waiters.Front()).(chan struct{})
		g.waiting.Dec()
		g.run(best)
		close(ch)
	}
}
