package remotewrite

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"
)

func pts(tv ...float64) []point {
	var out []point
	for i := 0; i+1 < len(tv); i += 2 {
		out = append(out, point{t: int64(tv[i]), key: floatKey(tv[i+1])})
	}
	return out
}

func TestRepeatsWithinOneEntry(t *testing.T) {
	var r repeats
	// Increasing: the fast path, all fresh.
	require.Equal(t, []uint8{fresh, fresh, fresh}, r.check(pts(1, 5, 2, 5, 3, 5), nil))
	// A second value, the same value, then an out-of-order fresh one.
	require.Equal(t, []uint8{fresh, dup, repeat, fresh}, r.check(pts(2, 1, 2, 9, 2, 1, 1, 4), nil))
	// The first value given wins, whatever comes later.
	require.Equal(t, []uint8{fresh, dup, dup}, r.check(pts(7, 1, 7, 2, 7, 3), nil))
	// A stale marker is its own value, distinct from any NaN.
	stale := math.Float64frombits(value.StaleNaN)
	require.Equal(t, []uint8{fresh, repeat, dup}, r.check(pts(1, stale, 1, stale, 1, math.NaN()), nil))
}

func TestRepeatsAcrossEntries(t *testing.T) {
	var r repeats
	a := labels.FromStrings("__name__", "m", "k", "a")
	b := labels.FromStrings("__name__", "m", "k", "b")
	entries := []labels.Labels{a, b, a, a}
	same := func(ls labels.Labels) func(int) bool {
		return func(j int) bool { return labels.Equal(entries[j], ls) }
	}
	require.Empty(t, r.earlier(0, a.Hash(), same(a)))
	require.Empty(t, r.earlier(1, b.Hash(), same(b)))
	require.Equal(t, []int32{0}, r.earlier(2, a.Hash(), same(a)))
	require.Equal(t, []int32{2, 0}, r.earlier(3, a.Hash(), same(a)), "newest first")
	// A hash that matches labels that differ is no repeat.
	var r2 repeats
	require.Empty(t, r2.earlier(0, a.Hash(), same(a)))
	require.Empty(t, r2.earlier(1, a.Hash(), func(int) bool { return false }))

	before := func(yield func(point)) {
		for _, p := range pts(10, 1, 20, 2) {
			yield(p)
		}
	}
	require.Equal(t, []uint8{repeat, dup, fresh}, r.check(pts(10, 1, 20, 3, 30, 3), before))
}
