package spanmetrics

import (
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Service-graph labels and connection types (the connector's).
const (
	labelClient         = "client"
	labelServer         = "server"
	labelConnectionType = "connection_type"

	connNone      = ""
	connVirtual   = "virtual_node"
	connMessaging = "messaging_system"
	connDatabase  = "database"

	// userNode is the virtual client of a server span without a parent.
	userNode = "user"
)

// peerAttributes name the server of a client span that has no server span,
// in order of preference.
var peerAttributes = []string{"peer.service", "db.namespace", "db.name", "server.address", "net.peer.name"}

// edgeKey identifies a request: the client span, which is the server
// span's parent.
type edgeKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// pendingEdge is a request of which one half has been seen, with the
// spans of no call kind under the same span.
type pendingEdge struct {
	client, server       string
	hasClient, hasServer bool
	clientSec, serverSec float64
	failed               bool
	connType             string
	// peer is the client span's virtual node, "" when it names none.
	peer string
	// database is set when the client span calls a database.
	database bool
	// clientParent is the client span's parent: a client span that no
	// server span answers, under a span of another service, is that
	// service's call to the client span's own service (a dependency that
	// records its calls as CLIENT spans under its own name).
	clientParent pcommon.SpanID
	// weak are the spans of no call kind (INTERNAL, UNSPECIFIED) whose
	// parent is the key's span: each is a call when its service differs
	// from its parent's.
	weak    []weakHalf
	expires time.Time
	// longWait is set once the entry waits for a parent past EdgeWait
	// (treeWait).
	longWait bool
}

// treeWait is how long spans with no client half wait for their parent
// once EdgeWait is over. A parent ends after its children, and often long
// after: a request that retrieves, then waits seconds for a model's
// answer, ends well past its first call's end. The pairs of a client and a
// server span end together; the span tree's do not. Five minutes is
// Prometheus's lookback: a request placed later no longer moves a rate
// over the last five minutes. The entries still count towards
// MaxPendingEdges.
const treeWait = 5 * time.Minute

// weakHalf is a span of no call kind waiting to learn its parent's
// service.
type weakHalf struct {
	service string
	sec     float64
	failed  bool
}

// maxWeak bounds the weak halves one span's pending entry holds.
const maxWeak = 256

// seenSpan is what the span tree needs of a recent span: its service, and
// whether it is a call (CLIENT, PRODUCER), whose children pair with it.
type seenSpan struct {
	service string
	call    bool
	expires time.Time
}

// expiry is an entry of the queue of pending halves, oldest first.
type expiry struct {
	key     edgeKey
	expires time.Time
}

// edgeSeries is the running totals of one edge.
type edgeSeries struct {
	lbls           labels.Labels
	total, failed  float64
	client, server hist
	startMs        int64
}

// edgeID is the label values of an edge.
type edgeID struct {
	client, server, connType string
}

// observeGraphSpan adds a span to the service graph: a client or server
// span to the pending requests, recorded once both halves are in; a span
// of no call kind to the span tree, where it is a call when its parent is
// another service's.
func (c *Consumer) observeGraphSpan(sp ptrace.Span, service string, res pcommon.Map, now time.Time) {
	var key edgeKey
	client := false
	conn := connNone
	kind := sp.Kind()
	if kind == ptrace.SpanKindUnspecified && namesPeer(sp.Attributes(), res) {
		// A span of no kind that names what it calls is a call.
		kind = ptrace.SpanKindClient
	}
	self := edgeKey{sp.TraceID(), sp.SpanID()}
	call := kind == ptrace.SpanKindClient || kind == ptrace.SpanKindProducer
	c.remember(self, service, call, now)
	if !call {
		// Spans waiting for this one as their parent learn its service.
		if e, ok := c.pending[self]; ok && !e.hasClient {
			c.settleUnder(self, e, seenSpan{service: service}, now)
		}
	}
	switch kind {
	case ptrace.SpanKindProducer:
		conn = connMessaging
		fallthrough
	case ptrace.SpanKindClient:
		key, client = self, true
	case ptrace.SpanKindConsumer:
		conn = connMessaging
		fallthrough
	case ptrace.SpanKindServer:
		key = edgeKey{sp.TraceID(), sp.ParentSpanID()}
		if p, ok := c.seen[key]; ok && !p.call && !key.span.IsEmpty() {
			// The parent is in, and is no call: a request from its
			// service, with no client span.
			if p.service != service {
				c.recordTree(p.service, service, conn, spanSeconds(sp), sp.Status().Code() == ptrace.StatusCodeError, now)
			}
			return
		}
	default:
		c.observeWeakSpan(sp, service, now)
		return
	}
	e := c.pendingAt(key, conn, now)
	if e == nil {
		return
	}
	if !client && e.hasServer {
		// Another server span under the same span: a span of no call
		// kind calling several services directly (a fan-out).
		c.addWeak(e, weakHalf{service: service, sec: spanSeconds(sp), failed: sp.Status().Code() == ptrace.StatusCodeError})
		return
	}
	e.failed = e.failed || sp.Status().Code() == ptrace.StatusCodeError
	if conn != connNone {
		e.connType = conn
	}
	if client {
		e.client, e.hasClient, e.clientSec = service, true, spanSeconds(sp)
		e.clientParent = sp.ParentSpanID()
		attrs := sp.Attributes()
		for _, k := range peerAttributes {
			if v := attrStr(attrs, res, k); v != "" {
				e.peer = v
				break
			}
		}
		_, sys := attrs.Get("db.system")
		_, sysName := attrs.Get("db.system.name")
		e.database = sys || sysName
	} else {
		e.server, e.hasServer, e.serverSec = service, true, spanSeconds(sp)
	}
	if e.hasClient && e.hasServer {
		delete(c.pending, key)
		if e.database && e.connType == connNone {
			e.connType = connDatabase
		}
		c.recordEdge(edgeID{e.client, e.server, e.connType}, e, now)
		c.m.paired.Inc()
	}
}

// namesPeer tells whether a span names the service it calls.
func namesPeer(attrs, res pcommon.Map) bool {
	for _, k := range peerAttributes {
		if attrStr(attrs, res, k) != "" {
			return true
		}
	}
	return false
}

// observeWeakSpan places a span of no call kind by its parent: a call
// from the parent's service when that differs from its own. A parent not
// yet seen is waited for, as the other half of a request is.
func (c *Consumer) observeWeakSpan(sp ptrace.Span, service string, now time.Time) {
	if sp.ParentSpanID().IsEmpty() {
		return
	}
	key := edgeKey{sp.TraceID(), sp.ParentSpanID()}
	h := weakHalf{service: service, sec: spanSeconds(sp), failed: sp.Status().Code() == ptrace.StatusCodeError}
	if p, ok := c.seen[key]; ok && !p.call {
		if p.service != service {
			c.recordTree(p.service, service, connNone, h.sec, h.failed, now)
		}
		return
	}
	if e := c.pendingAt(key, connNone, now); e != nil {
		c.addWeak(e, h)
	}
}

// pendingAt returns the pending entry under key, adding an empty one when
// there is none; nil (counted as dropped) when MaxPendingEdges are held.
func (c *Consumer) pendingAt(key edgeKey, conn string, now time.Time) *pendingEdge {
	if e, ok := c.pending[key]; ok {
		return e
	}
	if len(c.pending) >= c.cfg.MaxPendingEdges {
		c.m.dropped.Inc()
		return nil
	}
	e := &pendingEdge{connType: conn, expires: now.Add(time.Duration(c.cfg.EdgeWait))}
	c.pending[key] = e
	c.expiries = append(c.expiries, expiry{key, e.expires})
	return e
}

// addWeak adds a weak half to e, up to maxWeak (past it, dropped).
func (c *Consumer) addWeak(e *pendingEdge, h weakHalf) {
	if len(e.weak) >= maxWeak {
		c.m.dropped.Inc()
		return
	}
	e.weak = append(e.weak, h)
}

// remember indexes a span for the span tree, for twice the edge wait (a
// parent may come before its child, whose own wait then starts). Past
// MaxPendingEdges spans, it is not indexed.
func (c *Consumer) remember(id edgeKey, service string, call bool, now time.Time) {
	if id.span.IsEmpty() || len(c.seen) >= c.cfg.MaxPendingEdges {
		return
	}
	if _, ok := c.seen[id]; ok {
		return
	}
	exp := now.Add(2 * time.Duration(c.cfg.EdgeWait))
	c.seen[id] = seenSpan{service: service, call: call, expires: exp}
	c.seenExp = append(c.seenExp, expiry{id, exp})
}

// settleUnder resolves the entry of the spans under key without a client
// span, now that its span p is known (or the wait is over): a server span
// or a span of no call kind of another service than p is a request from
// p's service.
func (c *Consumer) settleUnder(key edgeKey, e *pendingEdge, p seenSpan, now time.Time) {
	delete(c.pending, key)
	if e.hasServer && p.service != e.server {
		c.recordTree(p.service, e.server, e.connType, e.serverSec, e.failed, now)
	}
	for _, h := range e.weak {
		if h.service != p.service {
			c.recordTree(p.service, h.service, connNone, h.sec, h.failed, now)
		}
	}
}

// recordTree counts a request the span tree shows without a client span:
// the callee's own duration on both sides.
func (c *Consumer) recordTree(client, server, conn string, sec float64, failed bool, now time.Time) {
	c.recordEdge(edgeID{client, server, conn}, &pendingEdge{clientSec: sec, serverSec: sec, failed: failed}, now)
	c.m.tree.Inc()
}

// expireEdges settles the pending halves whose wait is over (settle),
// takes the self time of the spans whose children can all have come
// (expireSelf) and forgets the spans the span tree no longer needs.
func (c *Consumer) expireEdges(now time.Time) {
	c.expireSelf(now)
	settleDue := func(x expiry) {
		if e, ok := c.pending[x.key]; ok && e.expires.Equal(x.expires) {
			c.settle(x.key, e, now)
		}
	}
	drain(&c.expiries, now, settleDue)
	drain(&c.longExpiries, now, settleDue)
	drain(&c.seenExp, now, func(x expiry) {
		if p, ok := c.seen[x.key]; ok && p.expires.Equal(x.expires) {
			delete(c.seen, x.key)
		}
	})
}

// drain calls fn with each entry of the queue *q that is due by now,
// oldest first, and removes them; fn may add to other queues.
func drain(q *[]expiry, now time.Time, fn func(expiry)) {
	n := 0
	for ; n < len(*q) && !(*q)[n].expires.After(now); n++ {
		fn((*q)[n])
	}
	if n > 0 {
		*q = append((*q)[:0], (*q)[n:]...)
	}
}

// settle resolves a pending entry whose wait is over:
//   - a client span pairs with the spans of no call kind of other services
//     under it (an uninstrumented server kind);
//   - else a client span with a peer becomes a request to that virtual
//     node, and one under another service's span a request from that
//     service to the client span's own;
//   - spans without a client span are placed by their parent (settleUnder),
//     a server span without a parent is a request from "user";
//   - the others are dropped.
func (c *Consumer) settle(key edgeKey, e *pendingEdge, now time.Time) {
	delete(c.pending, key)
	if e.hasClient {
		conn := connVirtual
		if e.database {
			conn = connDatabase
		}
		call := e.connType
		if e.database && call == connNone {
			call = connDatabase
		}
		paired := false
		for _, h := range e.weak {
			if h.service != e.client {
				c.recordEdge(edgeID{e.client, h.service, call}, &pendingEdge{clientSec: e.clientSec, serverSec: h.sec, failed: e.failed || h.failed}, now)
				c.m.paired.Inc()
				paired = true
			}
		}
		p, up := c.seen[edgeKey{key.trace, e.clientParent}]
		switch {
		case paired:
		case e.peer != "":
			e.server, e.serverSec = e.peer, e.clientSec
			c.recordEdge(edgeID{e.client, e.server, conn}, e, now)
			c.m.virtual.Inc()
		case up && !p.call && p.service != e.client:
			c.recordTree(p.service, e.client, call, e.clientSec, e.failed, now)
		default:
			c.m.expired.Inc()
		}
		return
	}
	if e.hasServer && key.span.IsEmpty() {
		e.client, e.clientSec = userNode, e.serverSec
		c.recordEdge(edgeID{e.client, e.server, connVirtual}, e, now)
		c.m.virtual.Inc()
		return
	}
	if p, ok := c.seen[key]; ok && !p.call {
		c.settleUnder(key, e, p, now)
		return
	}
	if !e.longWait && !key.span.IsEmpty() && (e.hasServer || len(e.weak) > 0) {
		// The parent is not in yet: wait longer for it (treeWait).
		e.longWait = true
		e.expires = e.expires.Add(treeWait)
		c.pending[key] = e
		c.longExpiries = append(c.longExpiries, expiry{key, e.expires})
		return
	}
	if e.hasServer {
		c.m.expired.Inc()
	}
}

// recordEdge counts one request of the edge id.
func (c *Consumer) recordEdge(id edgeID, e *pendingEdge, now time.Time) {
	s, ok := c.edges[id]
	if !ok {
		if len(c.edges) >= c.cfg.MaxEdges {
			id = edgeID{}
			c.m.edgeOverflow.Inc()
			s, ok = c.edges[id]
		}
		if !ok {
			s = &edgeSeries{lbls: edgeLabels(id), client: newHist(c.cfg.Buckets), server: newHist(c.cfg.Buckets), startMs: now.UnixMilli()}
			c.edges[id] = s
		}
	}
	s.total++
	c.dirty = true
	if e.failed {
		s.failed++
	}
	var none pcommon.TraceID
	s.client.observe(c.cfg.Buckets, e.clientSec, none, pcommon.SpanID{}, 0)
	s.server.observe(c.cfg.Buckets, e.serverSec, none, pcommon.SpanID{}, 0)
}

// edgeLabels are the labels of an edge; the zero id is the overflow edge.
func edgeLabels(id edgeID) labels.Labels {
	if id == (edgeID{}) {
		return labels.FromStrings(labelOverflow, "true")
	}
	b := labels.NewScratchBuilder(3)
	b.Add(labelClient, id.client)
	if id.connType != "" {
		b.Add(labelConnectionType, id.connType)
	}
	b.Add(labelServer, id.server)
	return b.Labels()
}
