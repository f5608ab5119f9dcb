package limits

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// benchSeries is the active series of each benchmark tenant.
const benchSeries = 10_000

// BenchmarkEnforcer measures the hot path of ingest: one sample's
// SeriesSeen (an active series, the common case) and AllowSamples of that
// one sample, alternating between two tenants, serially and from
// GOMAXPROCS goroutines at once. Limits are set but never reached.
//
//	go test ./internal/tenant/limits -run '^$' -bench '^BenchmarkEnforcer$' -benchtime 2s -cpu 1,2
func BenchmarkEnforcer(b *testing.B) {
	setup := func(b *testing.B) (*Enforcer, [2]string, []uint64) {
		o, err := New(Limits{
			IngestionRate: 1e12, IngestionBurstSize: 1 << 30,
			MaxActiveSeries: 1 << 30, MaxSeriesPerMetric: 1 << 30,
		}, "", 0, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		e := NewEnforcer(o, EnforcerOptions{}, nil)
		tenants := [2]string{"team-a", "team-b"}
		hashes := make([]uint64, benchSeries)
		for i := range hashes {
			hashes[i] = rand.Uint64()
		}
		now := time.Now()
		for _, t := range tenants {
			for _, h := range hashes {
				if err := e.SeriesSeen(t, "up", h, now); err != nil {
					b.Fatal(err)
				}
			}
		}
		return e, tenants, hashes
	}
	b.Run("serial", func(b *testing.B) {
		e, tenants, hashes := setup(b)
		b.ReportAllocs()
		now := time.Now()
		i := 0
		for b.Loop() {
			t := tenants[i&1]
			if err := e.SeriesSeen(t, "up", hashes[i%benchSeries], now); err != nil {
				b.Fatal(err)
			}
			if err := e.AllowSamples(t, 1); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})
	b.Run("parallel", func(b *testing.B) {
		e, tenants, hashes := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			now := time.Now()
			i := rand.IntN(benchSeries)
			for pb.Next() {
				t := tenants[i&1]
				if err := e.SeriesSeen(t, "up", hashes[i%benchSeries], now); err != nil {
					b.Error(err)
					return
				}
				if err := e.AllowSamples(t, 1); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})
}

// BenchmarkAppendable measures the wrapper on a write of 100 samples of
// active series (Append, hash and series check per sample, one rate check
// at Commit) over a storage that keeps nothing, against the same storage
// unwrapped.
//
//	go test ./internal/tenant/limits -run '^$' -bench '^BenchmarkAppendable$' -benchtime 2s
func BenchmarkAppendable(b *testing.B) {
	ls := make([]labels.Labels, 100)
	for i := range ls {
		ls[i] = labels.FromStrings("__name__", "DCGM_FI_DEV_GPU_UTIL", "Hostname", fmt.Sprintf("gpu-node-%02d", i/8), "gpu", fmt.Sprint(i%8), "job", "dcgm")
	}
	o, err := New(Limits{IngestionRate: 1e12, IngestionBurstSize: 1 << 30, MaxActiveSeries: 1 << 20}, "", 0, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := NewEnforcer(o, EnforcerOptions{}, nil)
	ctx := withTenant(b.Context(), "team-a")
	for _, wrapped := range []bool{false, true} {
		var app storage.AppendableV2 = discard{}
		if wrapped {
			app = Appendable(app, e, tenantOf)
		}
		b.Run(fmt.Sprintf("wrapped=%t", wrapped), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a := app.AppenderV2(ctx)
				for _, l := range ls {
					if _, err := a.Append(0, l, 0, 1000, 1, nil, nil, storage.AOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				if err := a.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(ls))/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// discard is a storage that keeps nothing.
type discard struct{}

func (discard) AppenderV2(context.Context) storage.AppenderV2 { return discardApp{} }

type discardApp struct{}

func (discardApp) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AOptions) (storage.SeriesRef, error) {
	return 1, nil
}
func (discardApp) Commit() error   { return nil }
func (discardApp) Rollback() error { return nil }
