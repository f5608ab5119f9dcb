package microsvc

import (
	"context"
	"testing"
)

// BenchmarkHour generates a simulated hour of Sock Shop with a CPU hog as
// OpenMetrics text, discarded.
//
//	go test ./internal/sim/microsvc -run '^$' -bench Hour -benchtime 3x
func BenchmarkHour(b *testing.B) {
	g, err := New(Config{Seed: 1}, FaultSpec{Kind: FaultCPU})
	if err != nil {
		b.Fatal(err)
	}
	var samples int
	b.ReportAllocs()
	for b.Loop() {
		cw := &countingWriter{}
		if err := g.WriteOpenMetrics(context.Background(), cw); err != nil {
			b.Fatal(err)
		}
		samples = cw.samples
	}
	b.ReportMetric(float64(samples), "samples/op")
	b.ReportMetric(float64(samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// countingWriter counts the sample lines written through it.
type countingWriter struct {
	samples int
	bol     bool
	comment bool
}

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, ch := range p {
		if !c.bol {
			c.bol, c.comment = true, ch == '#'
		}
		if ch == '\n' {
			if !c.comment {
				c.samples++
			}
			c.bol = false
		}
	}
	return len(p), nil
}
