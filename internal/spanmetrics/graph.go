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

// pendingEdge is a request of which one half has been seen.
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
	expires  time.Time
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

// observeGraphSpan adds a client or server span to the pending requests
// and records the request once both halves are in; spans of other kinds
// are no part of the graph.
func (c *Consumer) observeGraphSpan(sp ptrace.Span, service string, res pcommon.Map, now time.Time) {
	var key edgeKey
	client := false
	conn := connNone
	switch sp.Kind() {
	case ptrace.SpanKindProducer:
		conn = connMessaging
		fallthrough
	case ptrace.SpanKindClient:
		key, client = edgeKey{sp.TraceID(), sp.SpanID()}, true
	case ptrace.SpanKindConsumer:
		conn = connMessaging
		fallthrough
	case ptrace.SpanKindServer:
		key = edgeKey{sp.TraceID(), sp.ParentSpanID()}
	default:
		return
	}
	e, ok := c.pending[key]
	if !ok {
		if len(c.pending) >= c.cfg.MaxPendingEdges {
			c.m.dropped.Inc()
			return
		}
		e = &pendingEdge{connType: conn, expires: now.Add(time.Duration(c.cfg.EdgeWait))}
		c.pending[key] = e
		c.expiries = append(c.expiries, expiry{key, e.expires})
	}
	e.failed = e.failed || sp.Status().Code() == ptrace.StatusCodeError
	if conn != connNone {
		e.connType = conn
	}
	if client {
		e.client, e.hasClient, e.clientSec = service, true, spanSeconds(sp)
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

// expireEdges settles the pending halves whose wait is over: a client span
// with a peer becomes a request to that virtual node, a server span without
// a parent a request from "user"; the others are dropped.
func (c *Consumer) expireEdges(now time.Time) {
	n := 0
	for ; n < len(c.expiries) && !c.expiries[n].expires.After(now); n++ {
		x := c.expiries[n]
		e, ok := c.pending[x.key]
		if !ok || !e.expires.Equal(x.expires) {
			continue
		}
		delete(c.pending, x.key)
		conn := connVirtual
		if e.database {
			conn = connDatabase
		}
		switch {
		case e.hasClient && e.peer != "":
			e.server, e.serverSec = e.peer, e.clientSec
			c.recordEdge(edgeID{e.client, e.server, conn}, e, now)
			c.m.virtual.Inc()
		case e.hasServer && x.key.span.IsEmpty():
			e.client, e.clientSec = userNode, e.serverSec
			c.recordEdge(edgeID{e.client, e.server, connVirtual}, e, now)
			c.m.virtual.Inc()
		default:
			c.m.expired.Inc()
		}
	}
	if n > 0 {
		c.expiries = append(c.expiries[:0], c.expiries[n:]...)
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
