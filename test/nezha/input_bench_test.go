package nezha

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/realdata/nezha"
)

// BenchmarkDiagnoseInputTraces times `vigil diagnose --input` on the
// Train Ticket day's traces as OTLP JSON: the spans of the fault whose
// case holds the most, as a Collector's file exporter behind its batch
// processor writes them, and the same spans in 10 and in 1,000 lines. Each
// variant runs as its own process, alternating, three times; the table
// gives the median wall time, spans and lines read per second, the peak
// RSS (VmHWM, read every 10 ms while the process runs), and the ratio of 1,000 lines to 10 (the reading must grow with the
// spans, not the lines).
func BenchmarkDiagnoseInputTraces(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "realdata", "nezha", "2023-01-29")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("no Train Ticket day at %s", dir)
	}
	d, err := nezha.Load(dir)
	require.NoError(b, err)
	require.True(b, d.HasTraces())
	bin, err := peertest.BuildVigil()
	require.NoError(b, err)
	// The case with the most spans: from the previous injection to 5
	// minutes past this one.
	var from, to time.Time
	best := 0
	for i, f := range d.Faults {
		lo := f.At.Add(-10 * time.Minute)
		if i > 0 {
			lo = d.Faults[i-1].At.Add(time.Minute)
		}
		if n := d.CountSpans(lo, f.At.Add(5*time.Minute)); n > best {
			best, from, to = n, lo, f.At.Add(5*time.Minute)
		}
	}
	type variant struct {
		name  string
		batch nezha.Batch
		path  string
		spans int
		lines int
		wall  []time.Duration
		rss   []int64
	}
	vs := []*variant{
		{name: "Collector batches", batch: nezha.CollectorBatch},
		{name: "10 lines", batch: nezha.Batch{Spans: (best + 9) / 10}},
		{name: "1,000 lines", batch: nezha.Batch{Spans: (best + 999) / 1000}},
	}
	tmp := b.TempDir()
	for i, v := range vs {
		v.path = filepath.Join(tmp, fmt.Sprintf("case%d.otlp.json", i))
		f, err := os.Create(v.path)
		require.NoError(b, err)
		v.spans, v.lines, err = d.WriteTracesBatched(f, from, to, v.batch)
		require.NoError(b, err)
		require.NoError(b, f.Close())
	}
	for b.Loop() {
		for range 3 {
			for _, v := range vs {
				cmd := exec.CommandContext(b.Context(), bin, "diagnose", "--input", v.path, "--at", to.Format(time.RFC3339),
					"--window", to.Sub(from).String(), "--step", "15s", "--entity-label", nezha.EntityLabel)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				start := time.Now()
				require.NoError(b, cmd.Start())
				// The child's own peak, read while it runs: its rusage's
				// maxrss would count this process's pages from before its
				// exec (Go starts children with vfork).
				var hwm int64
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
			poll:
				for {
					select {
					case err := <-done:
						require.NoError(b, err, "%s", out.String())
						break poll
					case <-time.After(10 * time.Millisecond):
						if _, h, err := peertest.ProcMemory(cmd.Process.Pid); err == nil {
							hwm = max(hwm, h)
						}
					}
				}
				v.wall = append(v.wall, time.Since(start))
				v.rss = append(v.rss, hwm)
			}
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	fmt.Printf("\nvigil diagnose --input on Train Ticket's traces (%d spans, %s to %s; %d CPUs; runs alternate, median of %d)\n",
		best, from.Format("15:04:05"), to.Format("15:04:05"), runtime.NumCPU(), len(vs[0].wall))
	fmt.Printf("%-18s %7s %8s %9s %11s %10s %9s\n", "lines", "lines", "spans", "wall", "spans/s", "lines/s", "peak RSS")
	for _, v := range vs {
		w := median(v.wall).Seconds()
		fmt.Printf("%-18s %7d %8d %8.2fs %11.0f %10.0f %6d MiB\n", v.name, v.lines, v.spans, w, float64(v.spans)/w, float64(v.lines)/w, slices.Max(v.rss)>>20)
	}
	ratios := make([]float64, len(vs[1].wall))
	for i := range ratios {
		ratios[i] = vs[2].wall[i].Seconds() / vs[1].wall[i].Seconds()
	}
	slices.Sort(ratios)
	fmt.Printf("1,000 lines / 10 lines, same spans: median ×%.2f (runs %.2f–%.2f)\n", ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
	b.ReportMetric(ratios[len(ratios)/2], "ratio_1000_vs_10_lines")
}
