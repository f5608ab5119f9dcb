package reqpath_test

import (
	"testing"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// BenchmarkWriteFilesHour simulates an hour of the request path at the
// default rate and writes it as OTLP JSON.
//
//	go test ./internal/sim/reqpath -run '^$' -bench WriteFilesHour -benchtime 3x
func BenchmarkWriteFilesHour(b *testing.B) {
	b.ReportAllocs()
	cfg := reqpath.Config{Seed: 1, Start: runStart()}
	g, err := reqpath.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	spans := 0
	for batch := range g.Batches() {
		spans += batch.Traces.SpanCount()
	}
	var w counter
	for b.Loop() {
		w = counter{}
		if err := reqpath.WriteFiles(cfg, &w, &w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w.n)/(1<<20), "MiB/hour")
	b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

// counter counts the bytes written to it.
type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}
