package spanmetrics

import (
	"cmp"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// selfChild is a child span's interval, in Unix nanoseconds, waiting to be
// taken out of its parent's duration.
type selfChild struct {
	start, end int64
	// service is the child's, "" for a merge of children of several.
	service string
	// fixed children are not moved into their parent for clock skew: an
	// asynchronous child (a CONSUMER span, or a FOLLOWS_FROM link to its
	// parent), or children already fitted into it or merged.
	fixed bool
}

// selfEntry is a span waiting for its children before its self time is
// taken, or children waiting for their parent (s nil until it comes).
type selfEntry struct {
	s          *spanSeries
	service    string
	start, end int64
	kids       []selfChild
	// buf holds the first children: most spans have one or two.
	buf     [2]selfChild
	expires time.Time
}

// maxSelfKids bounds the children one entry holds; past it, the children
// closest in time are merged (compactKids).
const maxSelfKids = 256

// observeSelf adds a span to the self-time bookkeeping: as a child, its
// interval to its parent's entry; as a parent, its series and bounds to
// its own, whose self time is taken once its children can have come
// (EdgeWait), or at once when MaxPendingEdges entries are held.
func (c *Consumer) observeSelf(sp ptrace.Span, service string, s *spanSeries, now time.Time) {
	tid, id, parent := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
	start, end := int64(sp.StartTimestamp()), int64(sp.EndTimestamp())
	end = max(end, start)
	if !parent.IsEmpty() && parent != id {
		async := sp.Kind() == ptrace.SpanKindConsumer || followsFrom(sp, parent)
		ch := selfChild{start: start, end: end, service: service, fixed: async}
		c.addSelfChild(edgeKey{tid, parent}, ch, now)
	}
	me := selfEntry{s: s, service: service, start: start, end: end}
	if id.IsEmpty() {
		c.takeSelf(&me)
		c.m.selfEarly.Inc()
		return
	}
	k := edgeKey{tid, id}
	e, ok := c.selfPend[k]
	if ok && len(e.kids) > 0 {
		s.parent = true
	}
	switch {
	case ok && e.s != nil:
		// The same span again: its self time with the children so far.
		me.kids = e.kids
		c.takeSelf(&me)
		c.m.selfEarly.Inc()
		return
	case !ok && len(c.selfPend) >= c.cfg.MaxPendingEdges:
		// No room to wait: its self time with no child known.
		c.takeSelf(&me)
		c.m.selfEarly.Inc()
		return
	case !ok:
		e = &selfEntry{}
		c.selfPend[k] = e
	}
	e.s, e.service, e.start, e.end = s, service, start, end
	e.expires = now.Add(time.Duration(c.cfg.EdgeWait))
	c.selfExp = append(c.selfExp, expiry{k, e.expires})
}

// followsFrom tells whether sp links to its parent as OpenTracing's
// FOLLOWS_FROM (opentracing.ref_type=follows_from on the link, as the
// OpenTracing shim and Jaeger's translation write it): an asynchronous
// child.
func followsFrom(sp ptrace.Span, parent pcommon.SpanID) bool {
	for _, l := range sp.Links().All() {
		if l.SpanID() != parent {
			continue
		}
		if v, ok := l.Attributes().Get("opentracing.ref_type"); ok && v.AsString() == "follows_from" {
			return true
		}
	}
	return false
}

// addSelfChild adds a child's interval to its parent's entry, making one
// that waits for the parent (EdgeWait, then treeWait: a parent can end
// long after its children) when there is none. A child whose parent's
// self time was taken already is late and counted; so is one for which
// there is no room.
func (c *Consumer) addSelfChild(k edgeKey, ch selfChild, now time.Time) {
	e, ok := c.selfPend[k]
	if !ok {
		if _, in := c.seen[k]; in {
			// The parent came and its self time was taken.
			c.m.selfLate.Inc()
			return
		}
		if len(c.selfPend) >= c.cfg.MaxPendingEdges {
			c.m.selfDropped.Inc()
			return
		}
		e = &selfEntry{expires: now.Add(time.Duration(c.cfg.EdgeWait) + treeWait)}
		c.selfPend[k] = e
		c.selfLongExp = append(c.selfLongExp, expiry{k, e.expires})
	}
	if e.s != nil {
		e.s.parent = true
	}
	switch {
	case e.kids == nil:
		e.kids = e.buf[:0]
	case len(e.kids) >= maxSelfKids:
		c.compactKids(e)
	}
	e.kids = append(e.kids, ch)
}

// compactKids makes room in e.kids: once the parent is known, its
// children are fitted into it and their union kept (exact); while that
// leaves more than half of maxSelfKids, the two closest in time are
// merged: exact for children that overlap (but for their fit into the
// parent), while for children one after another, none overlapping, their
// gap counts as the children's (the self time comes out a little short;
// counted as merged).
func (c *Consumer) compactKids(e *selfEntry) {
	if e.s != nil {
		e.kids = fitKids(e.kids[:0], e.kids, e.service, e.start, e.end)
		e.kids = unionKids(e.kids)
	} else {
		slices.SortFunc(e.kids, func(a, b selfChild) int { return cmp.Compare(a.start, b.start) })
	}
	approx := false
	for len(e.kids) > maxSelfKids/2 {
		best := 0
		for i := 1; i+1 < len(e.kids); i++ {
			if e.kids[i+1].start-e.kids[i].end < e.kids[best+1].start-e.kids[best].end {
				best = i
			}
		}
		a, b := e.kids[best], e.kids[best+1]
		approx = approx || b.start > a.end
		m := selfChild{start: a.start, end: max(a.end, b.end), service: a.service, fixed: a.fixed || b.fixed}
		if a.service != b.service {
			m.service, m.fixed = "", true
		}
		e.kids[best] = m
		e.kids = slices.Delete(e.kids, best+1, best+2)
	}
	if approx {
		c.m.selfMerged.Inc()
	}
}

// fitKids appends to dst the children of a span of service from start to
// end fitted into it: a child of another service that does not fit but is
// no longer than its parent is moved to the parent's middle, as
// internal/hops and Jaeger's clock-skew adjuster do; then each is cut at
// the parent's bounds, and one wholly outside is left out. The children
// returned are fixed. dst may be kids[:0].
func fitKids(dst, kids []selfChild, service string, start, end int64) []selfChild {
	for _, k := range kids {
		s, e := k.start, k.end
		if !k.fixed && k.service != service && (s < start || e > end) && e-s <= end-start {
			d := start + (end-start-(e-s))/2 - s
			s, e = s+d, e+d
		}
		s, e = max(s, start), min(e, end)
		if e > s {
			dst = append(dst, selfChild{start: s, end: e, fixed: true})
		}
	}
	return dst
}

// unionKids sorts kids by start and merges those that overlap or touch.
func unionKids(kids []selfChild) []selfChild {
	if len(kids) == 0 {
		return kids
	}
	slices.SortFunc(kids, func(a, b selfChild) int { return cmp.Compare(a.start, b.start) })
	out := kids[:1]
	for _, k := range kids[1:] {
		last := &out[len(out)-1]
		if k.start <= last.end {
			last.end = max(last.end, k.end)
			continue
		}
		out = append(out, k)
	}
	return out
}

// selfNanos is e's self time: its duration less the union of its
// children's intervals fitted into it. It reorders e.kids.
func (c *Consumer) selfNanos(e *selfEntry) int64 {
	c.kidBuf = unionKids(fitKids(c.kidBuf[:0], e.kids, e.service, e.start, e.end))
	busy := int64(0)
	for _, k := range c.kidBuf {
		busy += k.end - k.start
	}
	return e.end - e.start - busy
}

// takeSelf adds e's self time to its series.
func (c *Consumer) takeSelf(e *selfEntry) {
	e.s.selfSum += time.Duration(c.selfNanos(e)).Seconds()
	e.s.selfCount++
	c.dirty = true
}

// expireSelf takes the self time of the spans whose wait for their
// children is over, and drops the children whose parent has not come.
func (c *Consumer) expireSelf(now time.Time) {
	drain(&c.selfExp, now, func(x expiry) {
		if e, ok := c.selfPend[x.key]; ok && e.expires.Equal(x.expires) {
			delete(c.selfPend, x.key)
			c.takeSelf(e)
			c.m.selfWaited.Inc()
		}
	})
	drain(&c.selfLongExp, now, func(x expiry) {
		if e, ok := c.selfPend[x.key]; ok && e.expires.Equal(x.expires) {
			delete(c.selfPend, x.key)
			c.m.selfOrphan.Add(float64(len(e.kids)))
		}
	})
}
