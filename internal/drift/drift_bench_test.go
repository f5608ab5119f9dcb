package drift

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// Streaming Compare against a straightforward two-pass implementation (read
// every value into memory, then sort and count), alternating A B per
// configuration; rows/s counts the rows of both files:
//
//	go test ./internal/drift -run '^$' -bench . -benchtime 3x -count 3
func BenchmarkCompare(b *testing.B) {
	const rows = 100_000
	for _, cols := range []int{10, 50} {
		ref, cur := benchCSV(rows, cols, 0, 1), benchCSV(rows, cols, 0.2, 2)
		for _, m := range []Method{MethodPSI, MethodKS} {
			b.Run(fmt.Sprintf("method=%s/features=%d/impl=stream", m, cols), func(b *testing.B) {
				open := func(data []byte) Opener {
					return func() (Source, error) { return NewCSV(bytes.NewReader(data)) }
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Compare(b.Context(), open(ref), open(cur), Options{Method: m}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(2*rows*b.N)/b.Elapsed().Seconds(), "rows/s")
			})
			b.Run(fmt.Sprintf("method=%s/features=%d/impl=twopass", m, cols), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					twoPass(b, ref, cur, m)
				}
				b.ReportMetric(float64(2*rows*b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

func benchCSV(rows, cols int, shift float64, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	var buf bytes.Buffer
	for j := range cols {
		if j > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "f%d", j)
	}
	buf.WriteByte('\n')
	var num []byte
	for range rows {
		for j := range cols {
			if j > 0 {
				buf.WriteByte(',')
			}
			num = strconv.AppendFloat(num[:0], rng.NormFloat64()+shift, 'f', 4, 64)
			buf.Write(num)
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// twoPass is the baseline: load each file's columns, then compute.
func twoPass(b *testing.B, ref, cur []byte, m Method) {
	load := func(data []byte) [][]float64 {
		r := csv.NewReader(bytes.NewReader(data))
		head, err := r.Read()
		if err != nil {
			b.Fatal(err)
		}
		cols := make([][]float64, len(head))
		for {
			rec, err := r.Read()
			if err == io.EOF {
				return cols
			}
			if err != nil {
				b.Fatal(err)
			}
			for i, s := range rec {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil {
					b.Fatal(err)
				}
				cols[i] = append(cols[i], v)
			}
		}
	}
	rc, cc := load(ref), load(cur)
	for j := range rc {
		slices.Sort(rc[j])
		switch m {
		case MethodPSI:
			edges := make([]float64, 0, 9)
			for i := 1; i < 10; i++ {
				edges = append(edges, rc[j][i*len(rc[j])/10])
			}
			rb, cb := make([]float64, 10), make([]float64, 10)
			for _, v := range rc[j] {
				rb[binOf(edges, v)]++
			}
			for _, v := range cc[j] {
				cb[binOf(edges, v)]++
			}
			_ = PSI(shareOf(rb), shareOf(cb))
		case MethodKS:
			slices.Sort(cc[j])
			_ = ksStat(weights(rc[j]), weights(cc[j]))
		}
	}
}
