package hops

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// segment is a stretch [from, to) of the critical path in span i.
type segment struct {
	i        int
	from, to int64
}

// Breakdown computes the critical path of the trace in td and each
// service's exclusive time on it (see the package doc for the algorithm).
// td should hold one trace; spans of other traces than the first span's
// are left out, with a warning. An empty td gives an empty Trace.
func Breakdown(td ptrace.Traces) Trace {
	t := collect(td)
	t.link()
	out := Trace{Services: []ServiceTime{}, CriticalPath: []Segment{}, Spans: []Span{}, Warnings: []string{}}
	if t.root < 0 {
		return out
	}
	t.deskew()
	root := &t.nodes[t.root]
	segs := t.criticalPath()
	for _, s := range segs {
		t.nodes[s.i].crit += s.to - s.from
	}
	out.TraceID = root.span.TraceID().String()
	out.RootService, out.RootOperation = root.service, root.name
	out.Route = root.name
	if v, ok := root.span.Attributes().Get("http.route"); ok && v.AsString() != "" {
		out.Route = v.AsString()
	}
	out.Start = time.Unix(0, root.start).UTC()
	out.Duration = Seconds(root.end - root.start)
	out.Error = root.err
	for _, s := range segs {
		n := &t.nodes[s.i]
		out.CriticalPath = append(out.CriticalPath, Segment{
			SpanID: n.id.String(), Service: t.nodeOf(s.i), Name: n.name,
			Offset: Seconds(s.from - root.start), Duration: Seconds(s.to - s.from),
		})
	}
	out.Spans = t.rows()
	out.Services = t.services()
	out.Warnings = t.warnings()
	return out
}

// criticalPath walks the tree from the root's end backwards and returns
// the path's segments in time order.
func (t *tree) criticalPath() []segment {
	var segs []segment
	root := &t.nodes[t.root]
	t.walk(t.root, root.start, root.end, &segs)
	slices.Reverse(segs)
	return segs
}

// clipped is a child's interval cut at its parent's bounds.
type clipped struct {
	i          int
	start, end int64
}

// walk appends, latest first, the segments of span i within [s, e].
func (t *tree) walk(i int, s, e int64, segs *[]segment) {
	n := &t.nodes[i]
	kids := make([]clipped, 0, len(n.kids))
	for _, k := range n.kids {
		c := &t.nodes[k]
		if c.async {
			continue
		}
		cs, ce := max(c.start, s), min(c.end, e)
		if ce < cs {
			continue // wholly outside the parent
		}
		kids = append(kids, clipped{k, cs, ce})
	}
	// The last finishing child first; of two ending together, the longer.
	slices.SortStableFunc(kids, func(a, b clipped) int {
		if c := cmp.Compare(b.end, a.end); c != 0 {
			return c
		}
		return cmp.Compare(a.start, b.start)
	})
	cursor := e
	for _, k := range kids {
		if k.end > cursor {
			continue // it overlaps a later child already on the path
		}
		if cursor > k.end {
			*segs = append(*segs, segment{i, k.end, cursor})
		}
		t.walk(k.i, k.start, k.end, segs)
		cursor = k.start
	}
	if cursor > s {
		*segs = append(*segs, segment{i, s, cursor})
	}
}

// nodeOf is the service span i's critical time counts for: the service it
// calls when it is a client span with no child, else its own.
func (t *tree) nodeOf(i int) string {
	n := &t.nodes[i]
	if n.peer != "" && (n.kind == ptrace.SpanKindClient || n.kind == ptrace.SpanKindProducer) {
		for _, k := range n.kids {
			if !t.nodes[k].async {
				return n.service
			}
		}
		return n.peer
	}
	return n.service
}

// rows are the waterfall's rows, depth first.
func (t *tree) rows() []Span {
	root := &t.nodes[t.root]
	out := make([]Span, 0, len(t.order))
	for _, i := range t.order {
		n := &t.nodes[i]
		r := Span{
			SpanID: n.id.String(), Service: n.service, Name: n.name, Kind: kindName(n.kind),
			Depth: n.depth, Offset: Seconds(n.start - root.start), Duration: Seconds(n.end - n.start),
			Critical: Seconds(n.crit), Error: n.err, Async: n.async, Orphan: n.orphan, Shift: Seconds(n.shift),
		}
		if !n.parent.IsEmpty() {
			r.ParentSpanID = n.parent.String()
		}
		if node := t.nodeOf(i); node != n.service {
			r.Node = node
		}
		out = append(out, r)
	}
	return out
}

// services sums the critical time per service, in the order services are
// first called, with their roles.
func (t *tree) services() []ServiceTime {
	root := &t.nodes[t.root]
	type acc struct {
		first, crit int64
		virtual     bool
	}
	by := map[string]*acc{}
	var names []string
	for _, i := range t.order {
		name := t.nodeOf(i)
		a, ok := by[name]
		if !ok {
			a = &acc{first: t.nodes[i].start, virtual: name != t.nodes[i].service}
			by[name] = a
			names = append(names, name)
		}
		a.first = min(a.first, t.nodes[i].start)
		a.crit += t.nodes[i].crit
	}
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(by[a].first, by[b].first) })
	roles := t.roles()
	dur := root.end - root.start
	out := make([]ServiceTime, 0, len(names))
	for _, name := range names {
		a := by[name]
		if a.crit == 0 {
			continue
		}
		st := ServiceTime{Service: name, Role: roles[name], Virtual: a.virtual, Exclusive: Seconds(a.crit)}
		if dur > 0 {
			st.Share = float64(a.crit) / float64(dur)
		}
		out = append(out, st)
	}
	return out
}

// warnings say what was repaired.
func (t *tree) warnings() []string {
	out := []string{}
	if t.orphans > 0 {
		out = append(out, fmt.Sprintf("%d spans have no parent in the trace; they are shown under the root", t.orphans))
	}
	if t.shifted > 0 {
		out = append(out, fmt.Sprintf("%d spans were shifted to fit in their parent (clock skew)", t.shifted))
	}
	if t.otherTraces > 0 {
		out = append(out, fmt.Sprintf("%d spans of other traces were left out", t.otherTraces))
	}
	return out
}

// kindName is the span kind without its prefix.
func kindName(k ptrace.SpanKind) string {
	switch k {
	case ptrace.SpanKindServer:
		return "SERVER"
	case ptrace.SpanKindClient:
		return "CLIENT"
	case ptrace.SpanKindInternal:
		return "INTERNAL"
	case ptrace.SpanKindProducer:
		return "PRODUCER"
	case ptrace.SpanKindConsumer:
		return "CONSUMER"
	}
	return "UNSPECIFIED"
}
