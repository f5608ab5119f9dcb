package hops

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// node is one span of the trace being broken down. Times are Unix
// nanoseconds, start and end after clock-skew adjustment.
type node struct {
	id, parent pcommon.SpanID
	service    string
	name       string
	kind       ptrace.SpanKind
	start, end int64
	shift      int64
	err        bool
	// async marks a FOLLOWS_FROM or consumer-of-producer child.
	async  bool
	orphan bool
	// peer is the service a client span calls, from its attributes.
	peer  string
	span  ptrace.Span
	kids  []int
	depth int
	// up is the tree parent (-1 for the root).
	up int
	// crit is the span's exclusive time on the critical path.
	crit int64
}

// tree is a trace as a tree rooted at root.
type tree struct {
	nodes []node
	root  int
	// order is the depth-first order of the waterfall.
	order []int
	// orphans, shifted and otherTraces count what was repaired.
	orphans, shifted, otherTraces int
}

// peerKeys name the service a client span calls, in order of preference.
var peerKeys = []string{"peer.service", "server.address", "net.peer.name", "db.system.name", "db.system"}

// followsFromKey and followsFrom mark an OpenTracing FOLLOWS_FROM link.
const (
	followsFromKey = "opentracing.ref_type"
	followsFrom    = "follows_from"
)

// collect reads the spans of td's first trace; it counts the spans of
// other traces and keeps the first of spans sharing an id.
func collect(td ptrace.Traces) *tree {
	t := &tree{root: -1}
	var tid pcommon.TraceID
	seen := map[pcommon.SpanID]bool{}
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		service := "unknown_service"
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok && v.AsString() != "" {
			service = v.AsString()
		}
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				if len(t.nodes) == 0 {
					tid = sp.TraceID()
				}
				if sp.TraceID() != tid {
					t.otherTraces++
					continue
				}
				if seen[sp.SpanID()] {
					continue
				}
				seen[sp.SpanID()] = true
				t.nodes = append(t.nodes, newNode(sp, service))
			}
		}
	}
	return t
}

func newNode(sp ptrace.Span, service string) node {
	n := node{
		id: sp.SpanID(), parent: sp.ParentSpanID(), service: service, name: sp.Name(), kind: sp.Kind(),
		start: int64(sp.StartTimestamp()), end: int64(sp.EndTimestamp()),
		err: sp.Status().Code() == ptrace.StatusCodeError, span: sp, up: -1,
	}
	if n.end < n.start {
		n.end = n.start
	}
	if n.parent == n.id {
		n.parent = pcommon.SpanID{}
	}
	attrs := sp.Attributes()
	for _, k := range peerKeys {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			n.peer = v.AsString()
			break
		}
	}
	return n
}

// followsFromLink is the span a FOLLOWS_FROM link of sp points at.
func followsFromLink(sp ptrace.Span) (pcommon.SpanID, bool) {
	links := sp.Links()
	for i := range links.Len() {
		l := links.At(i)
		if v, ok := l.Attributes().Get(followsFromKey); ok && v.AsString() == followsFrom && l.TraceID() == sp.TraceID() {
			return l.SpanID(), true
		}
	}
	return pcommon.SpanID{}, false
}

// link finds each span's parent, marks asynchronous children, picks the
// root and builds the tree; spans left out of it (orphans, cycles) go
// under the root.
func (t *tree) link() {
	if len(t.nodes) == 0 {
		return
	}
	index := make(map[pcommon.SpanID]int, len(t.nodes))
	for i := range t.nodes {
		index[t.nodes[i].id] = i
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		ff, ok := followsFromLink(n.span)
		switch {
		case ok && n.parent.IsEmpty() && ff != n.id:
			if _, present := index[ff]; present {
				n.parent, n.async = ff, true
			}
		case ok && ff == n.parent:
			n.async = true
		}
		if p, ok := index[n.parent]; ok && n.kind == ptrace.SpanKindConsumer && t.nodes[p].kind == ptrace.SpanKindProducer {
			n.async = true
		}
	}
	t.root = t.pickRoot(index)
	byStart := make([]int, len(t.nodes))
	for i := range byStart {
		byStart[i] = i
	}
	slices.SortStableFunc(byStart, func(a, b int) int { return cmp.Compare(t.nodes[a].start, t.nodes[b].start) })
	children := make([][]int, len(t.nodes))
	for _, i := range byStart {
		if p, ok := index[t.nodes[i].parent]; ok && i != t.root && !t.nodes[i].parent.IsEmpty() {
			children[p] = append(children[p], i)
		}
	}
	visited := make([]bool, len(t.nodes))
	t.adopt(t.root, -1, children, visited)
	for _, i := range byStart {
		if !visited[i] {
			t.nodes[i].orphan = true
			t.orphans++
			t.adopt(i, t.root, children, visited)
		}
	}
}

// pickRoot is the earliest span without a parent, else the earliest span
// whose parent is missing, else the earliest span.
func (t *tree) pickRoot(index map[pcommon.SpanID]int) int {
	best, bestClass := -1, 3
	for i := range t.nodes {
		n := &t.nodes[i]
		class := 2
		if n.parent.IsEmpty() {
			class = 0
		} else if _, ok := index[n.parent]; !ok {
			class = 1
		}
		if class < bestClass || (class == bestClass && (n.start < t.nodes[best].start ||
			(n.start == t.nodes[best].start && n.end > t.nodes[best].end))) {
			best, bestClass = i, class
		}
	}
	return best
}

// adopt puts i under up in the tree and its unvisited children under it,
// depth first without recursion (a chain of spans may be long).
func (t *tree) adopt(i, up int, children [][]int, visited []bool) {
	type item struct{ i, up int }
	stack := []item{{i, up}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visited[it.i] {
			continue
		}
		visited[it.i] = true
		n := &t.nodes[it.i]
		n.up = it.up
		if it.up >= 0 {
			p := &t.nodes[it.up]
			p.kids = append(p.kids, it.i)
			n.depth = p.depth + 1
		}
		for k := len(children[it.i]) - 1; k >= 0; k-- {
			if c := children[it.i][k]; !visited[c] {
				stack = append(stack, item{c, it.i})
			}
		}
	}
}

// deskew shifts, top down, each child of another service that does not
// fit in its parent but is no longer than it to the middle of the parent,
// with its descendants; it also records the depth-first order.
func (t *tree) deskew() {
	type item struct {
		i     int
		shift int64
	}
	stack := []item{{t.root, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &t.nodes[it.i]
		n.start += it.shift
		n.end += it.shift
		n.shift = it.shift
		if p := n.up; p >= 0 && !n.async && !n.orphan {
			pn := &t.nodes[p]
			if pn.service != n.service && (n.start < pn.start || n.end > pn.end) && n.end-n.start <= pn.end-pn.start {
				d := pn.start + (pn.end-pn.start-(n.end-n.start))/2 - n.start
				n.start, n.end, n.shift = n.start+d, n.end+d, n.shift+d
				t.shifted++
			}
		}
		t.order = append(t.order, it.i)
		slices.SortStableFunc(n.kids, func(a, b int) int { return cmp.Compare(t.nodes[a].start, t.nodes[b].start) })
		for k := len(n.kids) - 1; k >= 0; k-- {
			stack = append(stack, item{n.kids[k], n.shift})
		}
	}
}
