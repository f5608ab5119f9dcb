package remotewrite

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// A sender writes the same series request after request, byte for byte
// the same labels each time. Like the cache of Prometheus's scrape loop
// (the raw series bytes → labels and series reference), the receiver
// remembers each Remote-Write 1.0 series it stored by its labels' bytes
// on the wire: the labels it built and checked from them, and the series
// reference its appendable returned. A series it holds is not built
// again, not checked again (the same bytes give the same labels and the
// same verdict), and is appended by its reference, which the TSDB head
// resolves without hashing the labels and comparing them.
//
// The labels go with the reference, as in Prometheus: a reference the
// head no longer holds (its series was dropped by head GC) is only a
// hint, the head then finds or creates the series from the labels and
// returns its new reference, which replaces the old one. What the
// appendable does with the labels must depend only on them and on the
// write tenant of the request (tenancy stamps __tenant_id__), so the
// tenant is part of the key; redaction and the limits are fixed for the
// handler's life, and the handler is made with its store, whose head
// never gives a reference to two series.
//
// Entries are keyed by a hash of the label bytes and the tenant and
// checked against both (the wire labels against the entry's labels, in
// order), so a hash collision is a miss, never another series. Labels
// that are not sorted by name on the wire are never cached. An entry not
// used for a refCacheIdle period or two is dropped, so the cache holds
// the series written lately, no more than the head holds; a shard holds
// at most its share of max_active_series (refCacheMax without it).

// refShards is the number of independently locked parts of the cache.
const refShards = 64

// refCacheIdle is how often entries unused since the previous sweep are
// dropped.
const refCacheIdle = 15 * time.Minute

// refCacheMax bounds the entries when max_active_series does not.
const refCacheMax = 1 << 22

// refEntry is a series the receiver stored.
type refEntry struct {
	ls     labels.Labels
	hash   uint64 // ls.Hash()
	ref    storage.SeriesRef
	tenant string
	// epoch is the sweep period the entry was last used in.
	epoch uint32
}

type refShard struct {
	mu sync.Mutex
	m  map[uint64]refEntry
	_  [40]byte // keeps shards on their own cache lines
}

type refCache struct {
	perShard int
	epoch    atomic.Uint32
	// swept is when the last sweep began (Unix nanoseconds).
	swept  atomic.Int64
	shards [refShards]refShard
}

func newRefCache(maxSeries uint64, now time.Time) *refCache {
	n := uint64(refCacheMax)
	if maxSeries > 0 {
		n = maxSeries
	}
	c := &refCache{perShard: int(n/refShards) + 1}
	for i := range c.shards {
		c.shards[i].m = map[uint64]refEntry{}
	}
	c.swept.Store(now.UnixNano())
	return c
}

// refKey is the key of a series whose label fields on the wire are raw,
// written by tenant.
func refKey(raw []byte, tenant string) uint64 {
	k := xxhash.Sum64(raw)
	if tenant != "" {
		k ^= xxhash.Sum64String(tenant) * 0x9e3779b97f4a7c15
	}
	return k
}

func (c *refCache) shard(key uint64) *refShard { return &c.shards[key>>58] }

// A nil *refCache caches nothing (the uncached path, for tests).

// get returns the entry of key when it is of tenant and its labels are
// wire, in order.
func (c *refCache) get(key uint64, tenant string, wire []labelV1) (refEntry, bool) {
	if c == nil {
		return refEntry{}, false
	}
	s := c.shard(key)
	epoch := c.epoch.Load()
	s.mu.Lock()
	e, ok := s.m[key]
	if ok && e.epoch != epoch {
		e.epoch = epoch
		s.m[key] = e
	}
	s.mu.Unlock()
	if !ok || e.tenant != tenant || !sameLabels(wire, e.ls) {
		return refEntry{}, false
	}
	return e, true
}

// put records e under key; a shard at its bound first drops what was not
// used in this period, and records nothing when that frees no room.
func (c *refCache) put(key uint64, e refEntry) {
	if c == nil {
		return
	}
	s := c.shard(key)
	e.epoch = c.epoch.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok && len(s.m) >= c.perShard {
		s.sweep(e.epoch)
		if len(s.m) >= c.perShard {
			return
		}
	}
	s.m[key] = e
}

// tick starts a new period once refCacheIdle has passed since the last,
// dropping the entries not used in the last two.
func (c *refCache) tick(now time.Time) {
	if c == nil {
		return
	}
	last := c.swept.Load()
	if now.UnixNano()-last < int64(refCacheIdle) || !c.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	epoch := c.epoch.Add(1)
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.sweep(epoch - 1)
		s.mu.Unlock()
	}
}

// sweep drops the entries last used before period keep.
func (s *refShard) sweep(keep uint32) {
	for k, e := range s.m {
		if e.epoch < keep {
			delete(s.m, k)
		}
	}
}

// len returns the number of entries (for tests).
func (c *refCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// sameLabels reports whether ls holds wire's labels, in wire's order.
func sameLabels(wire []labelV1, ls labels.Labels) bool {
	i, same := 0, true
	ls.Range(func(l labels.Label) {
		if !same {
			return
		}
		if i >= len(wire) || string(wire[i].name) != l.Name || string(wire[i].value) != l.Value {
			same = false
			return
		}
		i++
	})
	return same && i == len(wire)
}
