package limits

import (
	"strings"
	"sync"
	"sync/atomic"
)

// seriesShards splits a tenant's series so that appends of different
// series rarely wait for one another, and a purge holds each lock briefly.
const seriesShards = 16

// seriesSet tracks one tenant's active series: the last time each was
// seen, by its labels' hash, and how many each metric name has. An entry
// is 16 bytes (the hash and a seriesEntry); with the map's overhead a
// series costs about 38 bytes of heap (BenchmarkSeriesMemory), and a
// metric name one entry more.
//
// Locks are taken in the order shard, then names.
type seriesSet struct {
	shards [seriesShards]seriesShard
	total  atomic.Int64

	names metricNames
}

type seriesShard struct {
	mu sync.Mutex
	m  map[uint64]seriesEntry
	// peak is the most entries m has held since it was made: Go maps do
	// not shrink, so purge makes a new one when most have gone.
	peak int
	_    [40]byte // keeps shards on their own cache lines
}

// seriesEntry is 8 bytes: seconds since the Enforcer's base time, and the
// metric name's id.
type seriesEntry struct {
	last   uint32
	metric uint32
}

// metricNames interns metric names and counts each one's series; an id is
// reused once its name has no series left.
type metricNames struct {
	mu     sync.Mutex
	ids    map[string]uint32
	counts []uint32
	names  []string
	free   []uint32
}

// refusal is why seen did not admit a new series.
type refusal uint8

const (
	admitted refusal = iota
	overActive
	overPerMetric
)

// seen records that the series hash of metric was seen at at. A series
// already tracked always passes; a new one is refused when the tenant has
// maxActive series or the metric maxPerMetric (0: unlimited). created tells
// whether the series was new.
func (s *seriesSet) seen(metric string, hash uint64, at uint32, maxActive, maxPerMetric int) (created bool, why refusal) {
	sh := &s.shards[hash%seriesShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.m[hash]; ok {
		if at > e.last {
			e.last = at
			sh.m[hash] = e
		}
		return false, admitted
	}
	if !s.reserve(maxActive) {
		return false, overActive
	}
	id, ok := s.names.add(metric, maxPerMetric)
	if !ok {
		s.total.Add(-1)
		return false, overPerMetric
	}
	if sh.m == nil {
		sh.m = map[uint64]seriesEntry{}
	}
	sh.m[hash] = seriesEntry{last: at, metric: id}
	sh.peak = max(sh.peak, len(sh.m))
	return true, admitted
}

// reserve counts one more series unless there are maxActive already.
func (s *seriesSet) reserve(maxActive int) bool {
	if maxActive <= 0 {
		s.total.Add(1)
		return true
	}
	for {
		n := s.total.Load()
		if n >= int64(maxActive) {
			return false
		}
		if s.total.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// forget removes the series hash (a rolled-back append made it); it
// reports whether it was there.
func (s *seriesSet) forget(hash uint64) bool {
	sh := &s.shards[hash%seriesShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[hash]
	if !ok {
		return false
	}
	delete(sh.m, hash)
	s.names.mu.Lock()
	s.names.release(e.metric)
	s.names.mu.Unlock()
	s.total.Add(-1)
	return true
}

// purge removes the series last seen before cutoff and returns how many.
func (s *seriesSet) purge(cutoff uint32) int {
	removed := 0
	var ids []uint32
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		ids = ids[:0]
		for h, e := range sh.m {
			if e.last < cutoff {
				delete(sh.m, h)
				ids = append(ids, e.metric)
			}
		}
		if len(ids) > 0 {
			s.names.mu.Lock()
			for _, id := range ids {
				s.names.release(id)
			}
			s.names.mu.Unlock()
			s.total.Add(-int64(len(ids)))
			removed += len(ids)
		}
		if sh.peak > 64 && len(sh.m) < sh.peak/4 {
			m := make(map[uint64]seriesEntry, len(sh.m))
			for h, e := range sh.m {
				m[h] = e
			}
			sh.m, sh.peak = m, len(m)
		}
		sh.mu.Unlock()
	}
	return removed
}

// count returns the series of metric (for tests and the API).
func (s *seriesSet) count(metric string) int {
	s.names.mu.Lock()
	defer s.names.mu.Unlock()
	id, ok := s.names.ids[metric]
	if !ok {
		return 0
	}
	return int(s.names.counts[id])
}

// add counts one more series of name unless it has maxPerMetric already,
// and returns the name's id.
func (n *metricNames) add(name string, maxPerMetric int) (uint32, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ok := n.ids[name]
	if ok {
		if maxPerMetric > 0 && int(n.counts[id]) >= maxPerMetric {
			return 0, false
		}
		n.counts[id]++
		return id, true
	}
	// The caller's string may point into a buffer it reuses.
	name = strings.Clone(name)
	if k := len(n.free); k > 0 {
		id = n.free[k-1]
		n.free = n.free[:k-1]
		n.names[id], n.counts[id] = name, 1
	} else {
		id = uint32(len(n.names))
		n.names = append(n.names, name)
		n.counts = append(n.counts, 1)
	}
	if n.ids == nil {
		n.ids = map[string]uint32{}
	}
	n.ids[name] = id
	return id, true
}

// release counts one series fewer of the name id; n.mu is held.
func (n *metricNames) release(id uint32) {
	if n.counts[id] == 0 {
		return
	}
	n.counts[id]--
	if n.counts[id] == 0 {
		delete(n.ids, n.names[id])
		n.names[id] = ""
		n.free = append(n.free, id)
	}
}
