package sim

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkHour generates a simulated hour of the default 10-node cluster
// (the nvlink_degraded scenario) as OpenMetrics text, discarded.
//
//	go test ./internal/sim -run '^$' -bench Hour -benchtime 3x
func BenchmarkHour(b *testing.B) {
	s, err := New(Config{Seed: 1, Duration: time.Hour}, DemoScenario())
	if err != nil {
		b.Fatal(err)
	}
	var samples int
	b.ReportAllocs()
	for b.Loop() {
		cw := &countingWriter{}
		if err := s.WriteOpenMetrics(context.Background(), cw); err != nil {
			b.Fatal(err)
		}
		samples = cw.lines
	}
	b.ReportMetric(float64(samples), "samples/op")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/simulated-hour")
}

// countingWriter counts the lines written through it.
type countingWriter struct{ lines int }

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.lines++
		}
	}
	return io.Discard.Write(p)
}
