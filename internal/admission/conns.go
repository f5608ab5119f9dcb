package admission

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Conns is a listener that bounds the open connections of an http.Server
// without letting idle or half-sent connections lock new clients out.
//
// Up to max connections are served as usual. Beyond that, a new
// connection takes the place of the oldest one that is not being answered
// (idle between requests, or still sending its request's header: what a
// slow-loris crowd holds); the evicted one is closed. When every
// connection is being answered, up to reserve more are accepted, which
// answer only the paths of probe (the health probes) and 503 to anything
// else; past that, Accept waits for a connection to close.
type Conns struct {
	net.Listener
	max     int
	slots   chan struct{}
	probe   func(path string) bool
	closing chan struct{}
	once    sync.Once

	mu       sync.Mutex
	normal   int
	open     map[*conn]struct{}
	evicted  prometheus.Counter
	reserved prometheus.Counter
	gauge    prometheus.GaugeFunc
}

// LimitConns wraps ln in a Conns of max connections plus reserve for the
// probes, and hooks it into srv (ConnState, ConnContext and Handler, which
// must be set already). Its metrics go to reg when it is not nil.
func LimitConns(ln net.Listener, max, reserve int, srv *http.Server, probe func(path string) bool, reg prometheus.Registerer) *Conns {
	l := &Conns{
		Listener: ln,
		max:      max,
		slots:    make(chan struct{}, max+reserve),
		probe:    probe,
		closing:  make(chan struct{}),
		open:     map[*conn]struct{}{},
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_http_connections_evicted_total",
			Help: "Idle or half-sent HTTP connections closed to make room for a new one at web.max_connections.",
		}),
		reserved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_http_connections_reserve_total",
			Help: "HTTP connections accepted beyond web.max_connections, which serve only the health probes.",
		}),
	}
	l.gauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vigil_http_connections_open",
		Help: "Open connections of the HTTP API.",
	}, func() float64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return float64(len(l.open))
	})
	if reg != nil {
		reg.MustRegister(l.evicted, l.reserved, l.gauge)
	}
	prevState := srv.ConnState
	srv.ConnState = func(nc net.Conn, s http.ConnState) {
		if c, ok := asConn(nc); ok {
			c.setState(s)
			if s == http.StateClosed || s == http.StateHijacked {
				c.release()
			}
		}
		if prevState != nil {
			prevState(nc, s)
		}
	}
	prevCtx := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, nc net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, nc)
		}
		if c, ok := asConn(nc); ok {
			ctx = context.WithValue(ctx, connKey{}, c)
		}
		return ctx
	}
	srv.Handler = l.handler(srv.Handler)
	return l
}

type connKey struct{}

// asConn returns the accepted connection under nc, which HTTPS wraps in
// a *tls.Conn.
func asConn(nc net.Conn) (*conn, bool) {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = tc.NetConn()
	}
	c, ok := nc.(*conn)
	return c, ok
}

// conn is one accepted connection.
type conn struct {
	net.Conn
	l *Conns
	// reserve marks a connection beyond max (or one evicted, whose place
	// went to another).
	reserve atomic.Bool
	once    sync.Once
	// answering counts the requests of the connection inside the
	// handler; since is when the connection last became new, idle or
	// active (reading a request).
	answering atomic.Int32
	mu        sync.Mutex
	since     time.Time
}

func (c *conn) setState(s http.ConnState) {
	switch s {
	case http.StateNew, http.StateIdle, http.StateActive:
		c.mu.Lock()
		c.since = time.Now()
		c.mu.Unlock()
	}
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// release gives back the connection's slot, once.
func (c *conn) release() {
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		delete(l.open, c)
		if !c.reserve.Load() {
			l.normal--
		}
		l.mu.Unlock()
		<-l.slots
	})
}

// Accept waits for a slot and a connection, making room at max as the
// type says.
func (l *Conns) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closing:
		return nil, net.ErrClosed
	}
	nc, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	c := &conn{Conn: nc, l: l, since: time.Now()}
	var evict *conn
	l.mu.Lock()
	switch {
	case l.normal < l.max:
		l.normal++
	default:
		if evict = l.oldestUnanswered(); evict != nil {
			// The evicted connection's place goes to c: its own release
			// then gives back only its slot.
			evict.reserve.Store(true)
		} else {
			c.reserve.Store(true)
		}
	}
	l.open[c] = struct{}{}
	l.mu.Unlock()
	if evict != nil {
		l.evicted.Inc()
		_ = evict.Close()
	}
	if c.reserve.Load() {
		l.reserved.Inc()
	}
	return c, nil
}

// oldestUnanswered returns the open normal connection that is not inside
// the handler and has waited the longest, or nil.
func (l *Conns) oldestUnanswered() *conn {
	var best *conn
	var bestSince time.Time
	for c := range l.open {
		if c.reserve.Load() || c.answering.Load() > 0 {
			continue
		}
		c.mu.Lock()
		since := c.since
		c.mu.Unlock()
		if best == nil || since.Before(bestSince) {
			best, bestSince = c, since
		}
	}
	return best
}

// Close stops Accept and closes the listener.
func (l *Conns) Close() error {
	l.once.Do(func() { close(l.closing) })
	err := l.Listener.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// handler marks the connection as answered while next runs, and lets the
// reserve connections reach the probes only.
func (l *Conns) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		c.answering.Add(1)
		defer c.answering.Add(-1)
		if c.reserve.Load() && (l.probe == nil || !l.probe(r.URL.Path)) {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many connections (web.max_connections): retry later", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}
