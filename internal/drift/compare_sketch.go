package drift

import (
	"math"
	"slices"
)

// addAll adds values to a sample as s.add does one by one, leaving the same
// state (TestAddAllMatchesAdd), faster: values are appended a run at a
// time, and in a sketch a full level is radix-sorted before it is
// compacted, where sketch.add sorts it by comparison. That sort was most of
// the cost of reading a file too large to keep exactly.
func (s *sample) addAll(values []float64, tmp *[]uint64) {
	if s.sk == nil {
		room := max(0, s.limit-len(s.vals))
		if len(values) <= room {
			s.vals = append(s.vals, values...)
			s.n += int64(len(values))
			return
		}
		s.vals = append(s.vals, values[:room]...)
		s.n += int64(room)
		values = values[room:]
		// As s.add when the exact store is full: the values held go
		// into a new sketch, in order, before the next one.
		held := s.vals
		s.vals = nil
		s.sk = &sketch{levels: [][]float64{make([]float64, 0, SketchK)}, odd: []bool{false}}
		s.sk.addRuns(held, tmp)
	}
	s.n += int64(len(values))
	s.sk.addRuns(values, tmp)
}

// addRuns is sketch.add of each value in turn.
func (s *sketch) addRuns(values []float64, tmp *[]uint64) {
	for len(values) > 0 {
		l0 := s.levels[0]
		k := min(SketchK-len(l0), len(values))
		s.levels[0] = append(l0, values[:k]...)
		values = values[k:]
		s.compact(tmp)
	}
}

// compact is sketch.add's compaction of full levels, sorting a level by
// radix, or, above level 0, by merging: there a full level is two sorted
// runs, each the survivors of a sorted level below.
func (s *sketch) compact(tmp *[]uint64) {
	for h := 0; h < len(s.levels) && len(s.levels[h]) >= SketchK; h++ {
		if h+1 == len(s.levels) {
			s.levels = append(s.levels, make([]float64, 0, SketchK))
			s.odd = append(s.odd, false)
		}
		l := s.levels[h]
		if half := len(l) / 2; h > 0 && slices.IsSorted(l[:half]) && slices.IsSorted(l[half:]) {
			*tmp = mergeHalves(l, half, *tmp)
		} else {
			*tmp = sortFloats(l, *tmp)
		}
		off := 0
		if s.odd[h] {
			off = 1
		}
		s.odd[h] = !s.odd[h]
		for i := off; i < len(l); i += 2 {
			s.levels[h+1] = append(s.levels[h+1], l[i])
		}
		s.levels[h] = l[:0]
	}
}

// mergeHalves sorts l, whose l[:half] and l[half:] are each sorted, with
// tmp as scratch (the merged bits), and returns tmp.
func mergeHalves(l []float64, half int, tmp []uint64) []uint64 {
	if cap(tmp) < len(l) {
		tmp = make([]uint64, len(l))
	}
	out := tmp[:len(l)]
	a, b := l[:half], l[half:]
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j] < a[i] {
			out[k] = math.Float64bits(b[j])
			j++
		} else {
			out[k] = math.Float64bits(a[i])
			i++
		}
		k++
	}
	for ; i < len(a); i, k = i+1, k+1 {
		out[k] = math.Float64bits(a[i])
	}
	for ; j < len(b); j, k = j+1, k+1 {
		out[k] = math.Float64bits(b[j])
	}
	for i, u := range out {
		l[i] = math.Float64frombits(u)
	}
	return tmp
}
