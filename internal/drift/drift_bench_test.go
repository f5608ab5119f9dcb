package drift

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Streaming Compare against a straightforward two-pass implementation
// (encoding/csv and strconv.ParseFloat, every value in memory, then sort
// and count), both reading the same CSV files from disk (the page cache),
// alternating A B per configuration. rows/s counts the rows of both files
// on the wall clock; cpu-ns/row is the process's CPU time (user and
// system) per row, which a busy shared machine inflates less; peak-RSS-MiB
// is the process's resident high-water mark during the sub-benchmark
// (reset at its start, Linux):
//
//	go test ./internal/drift -run '^$' -bench BenchmarkCompare -benchtime 3x -count 3
func BenchmarkCompare(b *testing.B) {
	const rows = 100_000
	dir := b.TempDir()
	for _, cols := range []int{10, 50} {
		ref := writeBenchCSV(b, filepath.Join(dir, fmt.Sprintf("ref%d.csv", cols)), rows, cols, 0, 1)
		cur := writeBenchCSV(b, filepath.Join(dir, fmt.Sprintf("cur%d.csv", cols)), rows, cols, 0.2, 2)
		for _, m := range []Method{MethodPSI, MethodKS} {
			b.Run(fmt.Sprintf("method=%s/features=%d/impl=stream", m, cols), func(b *testing.B) {
				measure(b, 2*rows, func() {
					if _, err := Compare(b.Context(), FileOpener(ref), FileOpener(cur), Options{Method: m}); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run(fmt.Sprintf("method=%s/features=%d/impl=twopass", m, cols), func(b *testing.B) {
				measure(b, 2*rows, func() { twoPass(b, ref, cur, m) })
			})
		}
	}
}

// measure runs fn in the benchmark loop and reports rows/s, CPU time per
// row and the peak RSS.
func measure(b *testing.B, rows int, fn func()) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	cpu := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	n := float64(rows) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpuTime()-cpu)/n, "cpu-ns/row")
	if rss := peakRSS(); rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS sets the process's resident high-water mark to its current
// RSS (Linux ≥ 4.0; elsewhere nothing).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's resident high-water mark (VmHWM) in bytes; 0
// where /proc has none.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// writeBenchCSV writes rows×cols values of N(shift, 1) with four decimals.
func writeBenchCSV(b *testing.B, path string, rows, cols int, shift float64, seed uint64) string {
	b.Helper()
	if err := os.WriteFile(path, benchCSV(rows, cols, shift, seed), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
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

// twoPass is the baseline: load each file's columns with encoding/csv and
// strconv, then sort and compute.
func twoPass(b *testing.B, ref, cur string, m Method) {
	load := func(path string) [][]float64 {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		r := csv.NewReader(bufio.NewReader(f))
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
