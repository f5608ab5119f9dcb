package sim

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/store"
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

// BenchmarkHourIntoStore runs a simulated hour of the default cluster into
// an embedded store through Run, one commit per scrape round: the path
// `vigil demo` takes.
//
//	go test ./internal/sim -run '^$' -bench HourIntoStore -benchtime 3x
func BenchmarkHourIntoStore(b *testing.B) {
	s, err := New(Config{Seed: 1, Duration: time.Hour}, DemoScenario())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	samples := 0
	for b.Loop() {
		clock := NewClock(s.Config().Start)
		st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(b.TempDir()), clock.Now, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		samples = 0
		err = s.Run(context.Background(), st, RunOptions{Clock: clock, OnScrape: func(_ context.Context, sc Scrape) error {
			samples += sc.Samples
			return nil
		}})
		if err := errors.Join(err, st.Close()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(samples), "samples/op")
	b.ReportMetric(float64(samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
