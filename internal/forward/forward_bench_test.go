package forward

import (
	"testing"
	"time"
)

// Run with:
//
//	go test ./internal/forward -run '^$' -bench . -benchtime 2000x

// BenchmarkForward sends batches of 100 spans to a Vigil OTLP receiver on
// 127.0.0.1 and reports the spans per second that arrive.
func BenchmarkForward(b *testing.B) {
	for _, p := range []int{0, 2} {
		p := protocols[p]
		b.Run(p.name, func(b *testing.B) {
			s := &sink{}
			be := startBackend(b, s)
			f := startForwarder(b, Config{Endpoint: p.url(be), QueueSize: 10_000}, nil)
			td := genTraces(1, 100)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := f.ConsumeTraces(b.Context(), td); err != nil {
					b.Fatal(err)
				}
				n += 100
				for f.q.len() > 5000 {
					time.Sleep(time.Millisecond)
				}
			}
			for {
				if got, _ := s.counts(); got >= n {
					break
				}
				time.Sleep(time.Millisecond)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
			s.mu.Lock()
			s.traces = nil
			s.mu.Unlock()
		})
	}
}
