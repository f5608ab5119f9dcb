package spanmetrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// discard is an AppendableV2 that drops everything.
type discard struct{}

func (discard) AppenderV2(context.Context) storage.AppenderV2 { return discard{} }
func (discard) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AOptions) (storage.SeriesRef, error) {
	return 1, nil
}
func (discard) Commit() error   { return nil }
func (discard) Rollback() error { return nil }

// BenchmarkSpanMetrics measures spans per second through ConsumeTraces:
// the simulated request path, one batch a simulated minute, the totals
// written (into a store that drops them) once per 15 s of the clock.
//
//	go test -run '^$' -bench BenchmarkSpanMetrics -benchtime 20x ./internal/spanmetrics/
func BenchmarkSpanMetrics(b *testing.B) {
	g, err := reqpath.New(reqpath.Config{Seed: 1, Start: simStart, Duration: 5 * time.Minute})
	require.NoError(b, err)
	var batches []ptrace.Traces
	spans := 0
	for bt := range g.Batches() {
		batches = append(batches, bt.Traces)
		spans += bt.Traces.SpanCount()
	}
	clk := &clock{t: simStart}
	c, err := New(DefaultConfig(), discard{}, clk.now, nil, nil)
	require.NoError(b, err)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, td := range batches {
			clk.add(15 * time.Second)
			if err := c.ConsumeTraces(b.Context(), td); err != nil {
				b.Fatal(err)
			}
		}
		n += spans
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
}
