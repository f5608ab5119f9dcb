package drift

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// sortSamples sorts the values of exact samples in place, one sample per
// core at a time (sample.sorted then finds them sorted).
func sortSamples(ss []*sample) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(ss)) {
		wg.Go(func() {
			var tmp []uint64
			for i := next.Add(1) - 1; i < int64(len(ss)); i = next.Add(1) - 1 {
				if ss[i].exact() {
					tmp = sortFloats(ss[i].vals, tmp)
				}
			}
		})
	}
	wg.Wait()
}

// radixMin is the length from which sortFloats sorts by radix.
const radixMin = 512

// sortFloats sorts v (no NaN) in increasing order, as slices.Sort does
// (−0 before +0, which compare equal), with tmp as scratch; it returns tmp,
// grown if it had to be. Long slices are sorted by an LSD radix sort on
// their bit patterns made monotone (the sign bit set for positives, every
// bit flipped for negatives), a byte at a time, skipping bytes all values
// share: linear, several times faster than comparison sorting for the
// 10⁵–10⁶ values per feature of a typical file.
func sortFloats(v []float64, tmp []uint64) []uint64 {
	n := len(v)
	if n < radixMin {
		slices.Sort(v)
		return tmp
	}
	if cap(tmp) < n {
		tmp = make([]uint64, n)
	}
	// The keys take the values' place: a float64 and a uint64 have the
	// same size and alignment.
	keys := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(v))), n)
	var counts [8][256]int
	for i, u := range keys {
		u ^= uint64(int64(u)>>63) | 1<<63
		keys[i] = u
		for d := range 8 {
			counts[d][byte(u>>(8*d))]++
		}
	}
	src, dst := keys, tmp[:n]
	for d := range 8 {
		c := &counts[d]
		shift := 8 * uint(d)
		if c[byte(src[0]>>shift)] == n {
			continue
		}
		sum := 0
		for j, k := range c {
			c[j] = sum
			sum += k
		}
		for _, u := range src {
			j := byte(u >> shift)
			dst[c[j]] = u
			c[j]++
		}
		src, dst = dst, src
	}
	for i, u := range src {
		keys[i] = u ^ (^uint64(int64(u)>>63) | 1<<63)
	}
	return tmp
}
