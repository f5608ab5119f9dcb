package traces

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/traces/tracestest"
)

// benchBatches prepares n batches of 100 spans: 10 traces of 10 spans
// across the 5 services, with their SDK's and Kubernetes attributes.
func benchBatches(n int) []ptrace.Traces {
	gen := tracestest.NewGen(7, t0.Add(time.Minute), 10*time.Millisecond)
	batches, _ := gen.Batches(n, 10, 10)
	return batches
}

// BenchmarkStoreSpans writes prepared batches of 100 spans straight to the
// store, as the OTLP receiver would after decoding and redaction; the
// receiver's own overhead is measured against it. It reports spans/s, the
// bytes on disk per span once flushed and compacted, and the process's RSS.
//
//	go test ./internal/traces -run '^$' -bench BenchmarkStoreSpans -benchtime 2000x
func BenchmarkStoreSpans(b *testing.B) {
	batches := benchBatches(2000)
	s := open(b, func(c *Config) { c.CacheBytes = DefaultConfig().CacheBytes })
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		if err := s.ConsumeTraces(ctx, batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	spans := float64(100 * i)
	b.ReportMetric(spans/b.Elapsed().Seconds(), "spans/s")
	// CPU time of the whole process (Pebble's flushes and compactions
	// included) per span: the figure that does not depend on what else
	// runs on a shared machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/spans, "cpu-µs/span")
	stored := 100 * min(i, len(batches))
	require.NoError(b, s.db.Flush())
	require.NoError(b, s.db.Compact(ctx, []byte{0}, []byte{0xff}, false))
	tables, err := s.tableBytes()
	require.NoError(b, err)
	b.ReportMetric(float64(tables)/float64(stored), "disk-B/span")
	if rss, ok := procStatus("VmRSS"); ok {
		b.ReportMetric(float64(rss)/(1<<20), "RSS-MiB")
	}
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus reads a size in bytes from /proc/self/status (VmRSS, VmHWM).
func procStatus(field string) (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}
