package limits

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
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

// BenchmarkNoisyNeighbour measures one tenant's hot path (as
// BenchmarkEnforcer/serial) while another tenant, in a second goroutine,
// sends 10× its rate and new series over its series limit, against the
// same with the other tenant idle. The tenants share no lock; the
// difference is the CPU the refusals take (compare on a machine with a
// core free for the abuser).
//
//	go test ./internal/tenant/limits -run '^$' -bench '^BenchmarkNoisyNeighbour$' -benchtime 2s -count 3
func BenchmarkNoisyNeighbour(b *testing.B) {
	for _, abuse := range []bool{false, true} {
		b.Run(fmt.Sprintf("abuser=%t", abuse), func(b *testing.B) {
			e := NewEnforcer(fixed{
				"":       {IngestionRate: 1e12, IngestionBurstSize: 1 << 30, MaxActiveSeries: 1 << 30},
				"abuser": {IngestionRate: 10_000, IngestionBurstSize: 10_000, MaxActiveSeries: 1000},
			}, EnforcerOptions{}, nil)
			hashes := make([]uint64, benchSeries)
			now := time.Now()
			for i := range hashes {
				hashes[i] = rand.Uint64()
				if err := e.SeriesSeen("victim", "up", hashes[i], now); err != nil {
					b.Fatal(err)
				}
			}
			stop := make(chan struct{})
			done := make(chan int)
			if abuse {
				go func() {
					refused := 0
					for i := uint64(0); ; i++ {
						select {
						case <-stop:
							done <- refused
							return
						default:
						}
						// Requests of 1,000 samples as fast as it can (far
						// over 10,000/s), each with a new series.
						if e.AllowSamples("abuser", 1000) != nil {
							refused++
						}
						_ = e.SeriesSeen("abuser", "up", i, now)
					}
				}()
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := e.SeriesSeen("victim", "up", hashes[i%benchSeries], now); err != nil {
					b.Fatal(err)
				}
				if err := e.AllowSamples("victim", 1); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.StopTimer()
			close(stop)
			if abuse {
				b.ReportMetric(float64(<-done), "abuser-refusals")
			}
		})
	}
}

// fixed is a Source of limits that never change, without a lock.
type fixed map[string]Limits

func (f fixed) For(tenant string) Limits {
	if l, ok := f[tenant]; ok {
		return l
	}
	return f[""]
}

// BenchmarkSeriesMemory reports the heap an active series costs, over
// 1,000,000 series of 100 metrics.
//
//	go test ./internal/tenant/limits -run '^$' -bench '^BenchmarkSeriesMemory$' -benchtime 1x
func BenchmarkSeriesMemory(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		e := NewEnforcer(fixed{}, EnforcerOptions{}, nil)
		now := time.Now()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range uint64(n) {
			if err := e.SeriesSeen("t", fmt.Sprint("metric_", i%100), rand.Uint64(), now); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/series")
		runtime.KeepAlive(e)
	}
}
