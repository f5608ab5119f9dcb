package store

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// remoteSettle is how far behind the wall clock a sample may still reach
// the backend: samples that come late (a remote-write queue's backlog, a
// scrape's delay) within Prometheus's default lookback are seen; later
// ones are not, as a rule evaluated then would not see them either.
const remoteSettle = 5 * time.Minute

// settledRead is the read time of an answer from a store whose data no
// longer change (Settled): all it holds is settled.
const settledRead = math.MaxInt64

// cachedSeries is one series' samples of a read, sorted by time.
type cachedSeries struct {
	lset labels.Labels
	pts  fsamples
}

// cacheEntry is the kept answer of a selector: every sample in [mint,
// maxt], read at the wall clock's read (ms). span is the widest window
// asked of the selector, which the entry keeps as it slides on. Its
// series are never modified once kept (an answer handed out may still be
// read).
type cacheEntry struct {
	mint, maxt int64
	span       int64
	read       int64
	series     []cachedSeries
	samples    int64
	used       uint64
}

// unsettled is the first instant of e whose samples may still change:
// those remoteSettle or more behind the wall clock of e's read had reached
// the backend then, and those after maxt were not asked for. A live
// reader (maxt at the wall clock) thus reads the last remoteSettle again;
// a replay of a past range (maxt far behind it) only what is new.
func (e *cacheEntry) unsettled() int64 {
	return min(e.maxt+1, e.read-remoteSettle.Milliseconds())
}

// sampleCache keeps the latest answer of each selector, the least recently
// used going first past limit samples. Its methods are safe for
// concurrent use, and a nil cache keeps nothing.
type sampleCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	total   int64
	limit   int64
	clock   uint64
}

func newSampleCache(limit int64) *sampleCache {
	return &sampleCache{limit: limit, entries: map[string]*cacheEntry{}}
}

// read answers the samples of sel in [mint, maxt], read at the wall clock's
// read (ms), series sorted by labels. The kept answer of sel gives what
// of the window it holds settled, and fetch(from) reads the rest, [from,
// maxt]; a window that starts before the kept answer, or after its end,
// is fetched whole. One selector asked for several windows (a rule's 5
// minutes, the diagnosis's hour) is fetched once: its entry keeps the
// widest, and the narrower ones are cut from it. A window behind the kept
// one is answered, not kept.
func (c *sampleCache) read(sel string, mint, maxt, read int64, fetch func(from int64) ([]cachedSeries, error)) ([]cachedSeries, error) {
	prev := c.get(sel)
	if prev == nil || prev.mint > mint || prev.maxt+1 < mint {
		series, err := fetch(mint)
		if err != nil {
			return nil, err
		}
		if prev == nil || maxt >= prev.maxt {
			span := maxt - mint
			if prev != nil {
				span = max(span, prev.span)
			}
			c.put(sel, &cacheEntry{mint: mint, maxt: maxt, span: span, read: read, series: series})
		}
		return series, nil
	}
	from := max(mint, prev.unsettled())
	var fetched []cachedSeries
	if from <= maxt {
		var err error
		if fetched, err = fetch(from); err != nil {
			return nil, err
		}
	}
	switch {
	case maxt < prev.maxt:
		return mergeCached(prev.series, fetched, mint, min(from, maxt+1)), nil
	case from > maxt:
		return window(prev.series, mint, maxt), nil
	}
	span := max(prev.span, maxt-mint)
	lo := max(prev.mint, maxt-span)
	e := &cacheEntry{mint: lo, maxt: maxt, span: span, read: read, series: mergeCached(prev.series, fetched, lo, from)}
	c.put(sel, e)
	return window(e.series, mint, maxt), nil
}

// window is series cut to [mint, maxt], sharing their samples.
func window(series []cachedSeries, mint, maxt int64) []cachedSeries {
	out := make([]cachedSeries, 0, len(series))
	for _, cs := range series {
		lo, _ := slices.BinarySearchFunc(cs.pts, mint, func(s fsample, t int64) int { return cmp.Compare(s.t, t) })
		hi, _ := slices.BinarySearchFunc(cs.pts, maxt+1, func(s fsample, t int64) int { return cmp.Compare(s.t, t) })
		if hi > lo {
			out = append(out, cachedSeries{lset: cs.lset, pts: cs.pts[lo:hi:hi]})
		}
	}
	return out
}

// mergeCached is the kept answer's samples in [mint, from) with the fresh
// ones (from from on), series sorted by labels: a series the fresh read
// no longer has keeps its older samples. Neither input is modified (a
// previous answer's series may still be read).
func mergeCached(old, fresh []cachedSeries, mint, from int64) []cachedSeries {
	out := make([]cachedSeries, 0, max(len(old), len(fresh)))
	keep := func(cs cachedSeries, tail fsamples) {
		lo, _ := slices.BinarySearchFunc(cs.pts, mint, func(s fsample, t int64) int { return cmp.Compare(s.t, t) })
		hi, _ := slices.BinarySearchFunc(cs.pts, from, func(s fsample, t int64) int { return cmp.Compare(s.t, t) })
		pts := make(fsamples, 0, hi-lo+len(tail))
		pts = append(append(pts, cs.pts[lo:hi]...), tail...)
		if len(pts) > 0 {
			out = append(out, cachedSeries{lset: cs.lset, pts: pts})
		}
	}
	i, j := 0, 0
	for i < len(old) || j < len(fresh) {
		switch {
		case j == len(fresh) || (i < len(old) && labels.Compare(old[i].lset, fresh[j].lset) < 0):
			keep(old[i], nil)
			i++
		case i == len(old) || labels.Compare(old[i].lset, fresh[j].lset) > 0:
			out = append(out, fresh[j])
			j++
		default:
			keep(old[i], fresh[j].pts)
			i++
			j++
		}
	}
	return out
}

func (c *sampleCache) get(k string) *cacheEntry {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e != nil {
		c.clock++
		e.used = c.clock
	}
	return e
}

func (c *sampleCache) put(k string, e *cacheEntry) {
	if c == nil {
		return
	}
	for _, s := range e.series {
		e.samples += int64(len(s.pts))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[k]; old != nil {
		c.total -= old.samples
		delete(c.entries, k)
	}
	if e.samples > c.limit {
		return
	}
	for c.total+e.samples > c.limit {
		var lru string
		first := true
		for key, o := range c.entries {
			if first || o.used < c.entries[lru].used {
				lru, first = key, false
			}
		}
		c.total -= c.entries[lru].samples
		delete(c.entries, lru)
	}
	c.clock++
	e.used = c.clock
	c.entries[k] = e
	c.total += e.samples
}
