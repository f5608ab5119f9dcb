package admission

import (
	"container/list"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FairGate bounds the queries that run at once, and shares them between
// clients: while one client alone queries, it may run up to the gate's
// capacity; while several do (a client counts while it runs or waits, and
// for 10 s after its last query), each runs at most its share of the
// cores (GOMAXPROCS over the clients, at least one), and a freed slot goes
// to the waiting client that runs the fewest. Queries are
// CPU-bound, so a client running more of them than its cores slows every
// other client without finishing sooner.
//
// A nil *FairGate admits everything at once.
type FairGate struct {
	capacity int
	cores    int

	now func() time.Time

	mu        sync.Mutex
	running   int
	clients   map[string]*gateClient
	lastSweep time.Time

	waiting prometheus.Gauge
	waited  prometheus.Histogram
}

type gateClient struct {
	running int
	waiters list.List // of chan struct{}
	last    time.Time
}

// NewFairGate returns a gate of capacity requests at once (positive).
// Its metrics, vigil_<what>_waiting and vigil_<what>_wait_seconds, go to
// reg when it is not nil.
func NewFairGate(capacity int, what string, reg prometheus.Registerer) *FairGate {
	g := &FairGate{
		capacity: capacity,
		cores:    runtime.GOMAXPROCS(0),
		now:      time.Now,
		clients:  map[string]*gateClient{},
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_" + what + "_waiting",
			Help: "Requests (" + what + ") waiting for their client's share of the slots.",
		}),
		waited: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_" + what + "_wait_seconds",
			Help:    "How long requests (" + what + ") waited for a slot.",
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
	g.sweep()
	c := g.clients[client]
	if c == nil {
		c = &gateClient{}
		g.clients[client] = c
	}
	c.last = g.now()
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
	c.last = g.now()
	g.dispatch()
}

func (g *FairGate) run(c *gateClient) {
	c.running++
	g.running++
}

// sweep forgets the clients that neither run nor wait and have been
// quiet for activeFor, at most once a second; the others' shares grow.
func (g *FairGate) sweep() {
	now := g.now()
	if now.Sub(g.lastSweep) < time.Second {
		return
	}
	g.lastSweep = now
	gone := false
	for k, c := range g.clients {
		if c.running == 0 && c.waiters.Len() == 0 && now.Sub(c.last) > activeFor {
			delete(g.clients, k)
			gone = true
		}
	}
	if gone {
		g.dispatch()
	}
}

// share is how many queries one client may run while len(g.clients)
// clients are active.
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

// Within is Acquire bounded by d: past it the request is refused with 429
// (the client sends more than its share of the cores and should slow
// down); when ctx ends first, ctx's error is returned.
func (g *FairGate) Within(ctx context.Context, client string, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := g.Acquire(wctx, client)
	if err != nil && ctx.Err() == nil {
		return &Refusal{Status: http.StatusTooManyRequests, Reason: ReasonFairShare,
			Msg: fmt.Sprintf("too many requests: this client's requests waited %s for its share of the server's cores while other clients send: retry later", d)}
	}
	return err
}

// IngestWait is how long an ingest request waits for its client's share
// of the ingest gate before it is refused with 429.
const IngestWait = 10 * time.Second
