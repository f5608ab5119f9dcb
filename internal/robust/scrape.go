package robust

import (
	"time"
)

// target is one scrape target as Prometheus sees it: its labels, its
// interval, and what it answered last time (for staleness markers).
type target struct {
	labels   []string // job, instance and the discovery's labels
	honor    bool
	interval time.Duration
	// collect is how often the exporter refreshes its values (dcgm-exporter's
	// collection interval); 0: at every scrape.
	collect     time.Duration
	next        time.Time
	lastCollect time.Time
	cache       []point
	prev        []*series
	up          *series
	// gather writes one scrape's samples; false: the target did not
	// answer (connection refused, node gone).
	gather func(e *emitter) bool
	// down is a span when the exporter restarts: its scrapes fail.
	down []span
	// gone: no longer discovered (the pod was deleted): no scrape, no up.
	gone  func() bool
	ended bool
}

// emitter collects one scrape's samples.
type emitter struct {
	reg *registry
	tg  *target
	pts []point
	kv  []string
}

// add records a sample of family f named name (the family's name, or a
// histogram's _bucket, _sum, _count) with the exporter's labels kv.
func (e *emitter) add(f *family, name string, v float64, kv ...string) {
	e.kv = append(e.kv[:0], kv...)
	s := e.reg.get(f, name, merge(e.kv, e.tg.labels, e.tg.honor))
	e.pts = append(e.pts, point{s: s, v: v})
}

// scrape runs one scrape of tg at at into the round.
func (w *world) scrape(tg *target, at time.Time) {
	ts := at.UnixMilli() + int64(w.scrapeRNG.intn(12))
	if tg.gone != nil && tg.gone() {
		// Dropped by discovery: Prometheus stops the scrape loop and marks
		// the target's series stale.
		if !tg.ended {
			tg.ended = true
			for _, s := range tg.prev {
				w.round = append(w.round, point{s: s, t: ts, v: staleNaN})
			}
			if tg.up != nil {
				w.round = append(w.round, point{s: tg.up, t: ts, v: staleNaN})
			}
			tg.prev = nil
		}
		return
	}
	if w.promDown(at) {
		// Prometheus itself is down: nothing is scraped, and after its
		// restart it remembers nothing of the scrapes before.
		tg.prev = nil
		return
	}
	ok := !w.scrapeRNG.chance(w.var_.missP)
	for _, s := range tg.down {
		ok = ok && !s.has(at)
	}
	var pts []point
	if ok {
		if tg.collect > tg.interval && !tg.lastCollect.IsZero() && at.Sub(tg.lastCollect) < tg.collect {
			pts = tg.cache
		} else {
			e := &emitter{reg: w.reg, tg: tg}
			ok = tg.gather(e)
			if ok {
				pts, tg.cache, tg.lastCollect = e.pts, e.pts, at
			}
		}
	}
	if !ok {
		pts = nil
	}
	cur := make(map[*series]struct{}, len(pts))
	for _, p := range pts {
		cur[p.s] = struct{}{}
	}
	for _, s := range tg.prev {
		if _, still := cur[s]; !still {
			w.round = append(w.round, point{s: s, t: ts, v: staleNaN})
		}
	}
	next := tg.prev[:0]
	for _, p := range pts {
		w.round = append(w.round, point{s: p.s, t: ts, v: p.v})
		next = append(next, p.s)
	}
	tg.prev = next
	if tg.up == nil {
		tg.up = w.reg.get(w.reg.family("up", typeGauge, "Whether the target answered its last scrape."), "up", tg.labels)
	}
	w.round = append(w.round, point{s: tg.up, t: ts, v: b2f(ok)})
}

// promDown tells whether Prometheus itself is restarting at t.
func (w *world) promDown(t time.Time) bool {
	for _, s := range w.var_.promGaps {
		if s.has(t) {
			return true
		}
	}
	return false
}

// schedule gives tg its interval and a phase within it (Prometheus
// spreads targets over the interval by a hash of their labels).
func (w *world) schedule(tg *target, interval time.Duration) {
	tg.interval = interval
	phase := time.Duration(w.scrapeRNG.intn(int(interval/time.Millisecond))) * time.Millisecond
	tg.next = w.c.cfg.Start.Add(phase)
	w.targets = append(w.targets, tg)
}
