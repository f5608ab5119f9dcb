package remotewrite

import (
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// The head checks a sample against what is committed, not against the
// rest of its own batch: a second value for a timestamp that the same
// request gave a series already would be dropped at commit, silently, and
// the request answered 204. So a request is checked against itself first:
// a repeat with the same value is one sample, a repeat with another value
// is a duplicate_timestamp rejection, as a repeat of a committed sample is.

// point is a sample's timestamp and a key of its value: the float's bits,
// or a hash of the histogram's encoding.
type point struct {
	t   int64
	key uint64
}

// Verdicts of a sample against the request's earlier samples of its series.
const (
	fresh  = iota // not given before: append it
	repeat        // the same value given before: one sample
	dup           // another value given before: reject it
)

// repeats tracks the series of one request.
type repeats struct {
	// last maps a series' label hash to the last entry of the request
	// with it; prev links each entry to the earlier one with its hash
	// (-1: none), so a series that appears again finds its earlier
	// entries.
	last map[uint64]int32
	prev []int32
	// verdict holds the verdicts of the entry being checked, per point.
	verdict []uint8
	given   map[int64]uint64
}

// earlier returns, for entry i (the hash of its labels h), the request's
// earlier entries of the same series, newest first, and records entry i.
// same(j) tells whether entry j has exactly entry i's labels (a hash can
// collide).
func (r *repeats) earlier(i int, h uint64, same func(j int) bool) []int32 {
	if r.last == nil {
		r.last = map[uint64]int32{}
	}
	for len(r.prev) <= i {
		r.prev = append(r.prev, -1)
	}
	j, ok := r.last[h]
	r.last[h] = int32(i)
	if !ok {
		return nil
	}
	r.prev[i] = j
	var out []int32
	for ; j >= 0; j = r.prev[j] {
		if same(int(j)) {
			out = append(out, j)
		}
	}
	return out
}

// check returns the verdict of each of pts, the points of one entry in
// the request's order, after the points of the series' earlier entries
// (before). The common case, one entry per series with increasing
// timestamps, needs no map.
func (r *repeats) check(pts []point, before func(yield func(point))) []uint8 {
	r.verdict = slices.Grow(r.verdict[:0], len(pts))[:len(pts)]
	clear(r.verdict)
	if before == nil && increasing(pts) {
		return r.verdict
	}
	if r.given == nil {
		r.given = map[int64]uint64{}
	}
	clear(r.given)
	if before != nil {
		before(func(p point) {
			if _, ok := r.given[p.t]; !ok {
				r.given[p.t] = p.key
			}
		})
	}
	for k, p := range pts {
		key, ok := r.given[p.t]
		switch {
		case !ok:
			r.given[p.t] = p.key
		case key == p.key:
			r.verdict[k] = repeat
		default:
			r.verdict[k] = dup
		}
	}
	return r.verdict
}

func increasing(pts []point) bool {
	for k := 1; k < len(pts); k++ {
		if pts[k].t <= pts[k-1].t {
			return false
		}
	}
	return true
}

// floatKey is the key of a float value: its bits (a stale marker is its
// own value, as the head compares them).
func floatKey(v float64) uint64 { return math.Float64bits(v) }

// histogramKey is the key of a histogram: a hash of its encoding.
func histogramKey(m interface{ Marshal() ([]byte, error) }) uint64 {
	b, err := m.Marshal()
	if err != nil {
		return 0
	}
	return xxhash.Sum64(b)
}
