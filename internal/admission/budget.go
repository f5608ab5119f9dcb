package admission

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/peer"
)

// Measured expansion of the decoders: the bytes a request allocates while
// it is decoded and stored, per byte of its decoded body, rounded up
// (TestExpansion in the ingest packages checks that they still hold).
const (
	// ExpansionRemoteWrite is remote write's: prompb's decoder allocates
	// every label as a string of its own, about 10 bytes per decoded byte
	// of dcgm-exporter-like series, 13 with the store's WAL records.
	ExpansionRemoteWrite = 14
	// ExpansionOTLPProto is pdata's protobuf decoder's: 3.6 for spans
	// shaped like an inference gateway's.
	ExpansionOTLPProto = 4
	// ExpansionOTLPJSON is pdata's JSON decoder's: 2.1 for the same spans.
	ExpansionOTLPJSON = 3
	// ExpansionText is the push parser's (expfmt's text format into
	// client_model's families): 11.1 for a batch job's 5,000 series.
	ExpansionText = 12
)

// RetryAfter is the delay a refusal asks for.
const RetryAfter = time.Second

// activeFor is how long a client counts as active after its last
// request, for the fair shares.
const activeFor = 10 * time.Second

// Refusal is why a request was not admitted: Status is the HTTP status to
// answer (503 when the server as a whole is full, 429 when the client
// holds more than its share, 413 when the request could never fit).
type Refusal struct {
	Status int
	Reason string
	Msg    string
}

func (r *Refusal) Error() string { return r.Msg }

// Retryable says whether the client should send the request again later.
func (r *Refusal) Retryable() bool { return r.Status != http.StatusRequestEntityTooLarge }

// Write answers the refusal as plain text, with Retry-After when the
// client should retry.
func (r *Refusal) Write(w http.ResponseWriter) {
	if r.Retryable() {
		w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	}
	http.Error(w, r.Msg, r.Status)
}

// Reasons of refusals, the values of the reason label.
const (
	ReasonFull      = "budget_full"
	ReasonFairShare = "fair_share"
	ReasonTooLarge  = "larger_than_budget"
)

// Budget bounds the bytes that requests in flight hold, across every
// ingest path, with a fair share for each client.
//
// A request is admitted when it fits in what is left, and when its client
// holds no more than its share: the capacity divided by the number of
// active clients plus one, so that a newcomer always finds room. A client
// holding nothing is admitted whenever the request fits, so that a request
// larger than a share still goes through on its own. A nil *Budget admits
// everything.
type Budget struct {
	capacity int64
	now      func() time.Time

	mu        sync.Mutex
	used      int64
	clients   map[string]*holder
	lastSweep time.Time

	inflight prometheus.Gauge
	refused  *prometheus.CounterVec
}

type holder struct {
	held int64
	last time.Time
}

// NewBudget returns a budget of capacity bytes (positive). Its metrics go
// to reg when it is not nil.
func NewBudget(capacity int64, reg prometheus.Registerer) *Budget {
	b := &Budget{
		capacity: capacity,
		now:      time.Now,
		clients:  map[string]*holder{},
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_ingest_inflight_bytes",
			Help: "Bytes charged to the ingest requests in flight (body as sent plus decoded size times the decoder's expansion).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_ingest_budget_refused_total",
			Help: "Ingest requests refused by the in-flight byte budget, by path and reason.",
		}, []string{"path", "reason"}),
	}
	capG := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vigil_ingest_inflight_bytes_limit",
		Help: "The in-flight byte budget of the ingest requests (memory.max_inflight_bytes).",
	})
	capG.Set(float64(capacity))
	if reg != nil {
		reg.MustRegister(b.inflight, b.refused, capG)
	}
	return b
}

// Capacity returns the budget's capacity in bytes.
func (b *Budget) Capacity() int64 { return b.capacity }

// Ticket is what an admitted request holds; Release gives it back.
type Ticket struct {
	b      *Budget
	client string
	path   string
	n      int64
}

// Acquire charges n bytes to client for a request of path (a label of
// the metrics: "remote_write", "otlp", "push"), or says why not.
func (b *Budget) Acquire(client, path string, n int64) (*Ticket, *Refusal) {
	t := &Ticket{b: b, client: client, path: path}
	if b == nil {
		return t, nil
	}
	if r := t.Grow(n); r != nil {
		return nil, r
	}
	return t, nil
}

// Grow charges n more bytes to the ticket's request (its decoded size once
// known), or says why not; a refused ticket keeps what it held.
func (t *Ticket) Grow(n int64) *Refusal {
	b := t.b
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.sweep(now)
	h := b.clients[t.client]
	if h == nil {
		h = &holder{}
		b.clients[t.client] = h
	}
	h.last = now
	total := t.n + n
	var r *Refusal
	switch {
	case total > b.capacity:
		r = &Refusal{Status: http.StatusRequestEntityTooLarge, Reason: ReasonTooLarge,
			Msg: fmt.Sprintf("request would hold %d bytes while decoded, more than the whole in-flight budget of %d bytes (memory.max_inflight_bytes): send smaller requests", total, b.capacity)}
	case b.used+n > b.capacity:
		r = &Refusal{Status: http.StatusServiceUnavailable, Reason: ReasonFull,
			Msg: fmt.Sprintf("overloaded: requests in flight hold %d of %d bytes (memory.max_inflight_bytes): retry later", b.used, b.capacity)}
	case h.held-t.n > 0 && h.held+n > b.share():
		r = &Refusal{Status: http.StatusTooManyRequests, Reason: ReasonFairShare,
			Msg: fmt.Sprintf("too many requests: this client holds %d bytes in flight, over its share of %d bytes while %d clients send: retry later", h.held, b.share(), b.active()-1)}
	}
	if r != nil {
		b.refused.WithLabelValues(t.path, r.Reason).Inc()
		return r
	}
	h.held += n
	t.n += n
	b.used += n
	b.inflight.Set(float64(b.used))
	return nil
}

// Release gives back what the ticket holds; it is safe to call twice and
// on a nil ticket.
func (t *Ticket) Release() {
	if t == nil || t.b == nil || t.n == 0 {
		return
	}
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.clients[t.client]; h != nil {
		h.held -= t.n
		h.last = b.now()
	}
	b.used -= t.n
	t.n = 0
	b.inflight.Set(float64(b.used))
}

// active counts the clients that hold bytes or sent within activeFor.
func (b *Budget) active() int {
	return len(b.clients)
}

// share is what one client may hold: the capacity over the active
// clients plus one, so that a newcomer always finds room.
func (b *Budget) share() int64 {
	return b.capacity / int64(b.active()+1)
}

// sweep forgets the clients that hold nothing and have been quiet for
// activeFor, at most once a second.
func (b *Budget) sweep(now time.Time) {
	if now.Sub(b.lastSweep) < time.Second {
		return
	}
	b.lastSweep = now
	for c, h := range b.clients {
		if h.held == 0 && now.Sub(h.last) > activeFor {
			delete(b.clients, c)
		}
	}
}

// ClientOf returns the client a request is charged to: the IP address it
// comes from.
func ClientOf(r *http.Request) string { return hostOf(r.RemoteAddr) }

// ClientOfContext returns the client of a gRPC call: its peer's IP
// address, or "" when unknown.
func ClientOfContext(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return hostOf(p.Addr.String())
	}
	return ""
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
