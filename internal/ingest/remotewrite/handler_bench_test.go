package remotewrite

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/store"
)

// BenchmarkHandlerV1 measures the receiver in-process, without the
// network, over the embedded store with `vigil serve`'s defaults: the
// load of the peer benchmark (test/ingestbench) cut to 10 rounds of
// 100,000 dcgm-exporter-like series, 1,000 series per request, 4
// concurrent senders. Each iteration stores the whole load in a fresh
// store; opening and closing it is not timed. Besides samples/s it reports
// the process's CPU time per sample, which other load on the machine
// disturbs less. Profile it with
// -cpuprofile or -memprofile to see where ingestion spends its time.
//
//	go test ./internal/ingest/remotewrite -run '^$' -bench HandlerV1 -benchtime 1x -cpuprofile cpu.out
func BenchmarkHandlerV1(b *testing.B) {
	const (
		series  = 100_000
		rounds  = 10
		senders = 4
	)
	load, err := remotewritetest.NewLoad(series, 1000, rounds, 15*time.Second, time.Now().Truncate(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var cpu time.Duration // process CPU time of the timed parts
	for b.Loop() {
		b.StopTimer()
		st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(b.TempDir()), nil, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		h, err := New(Options{Appendable: st, Series: st, Limits: DefaultLimits()})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := processCPU(b)
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for r := range rounds {
					for i := s; i < load.Batches; i += senders {
						req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(load.Body(r, i)))
						req.Header.Set("Content-Type", "application/x-protobuf")
						req.Header.Set("Content-Encoding", "snappy")
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code != http.StatusNoContent {
							b.Errorf("round %d batch %d: %d %s", r, i, rec.Code, rec.Body)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		cpu += processCPU(b) - cpu0
		b.StopTimer()
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	samples := float64(load.Samples(0, rounds) * b.N)
	b.ReportMetric(samples/b.Elapsed().Seconds(), "samples/s")
	// CPU time per sample depends less than wall time on what else runs.
	b.ReportMetric(float64(cpu.Nanoseconds())/samples, "cpu-ns/sample")
}

// processCPU returns the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
