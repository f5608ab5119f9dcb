package detect

import "testing"

// Run with:
//
//	go test -run '^$' -bench . -benchmem ./internal/detect
//
// 240 points are two hours at a 30 s step, or one hour at 15 s.

func BenchmarkOnset(b *testing.B) {
	for _, bc := range []struct {
		name string
		xs   []float64
	}{
		{"noise240", noise(1, 240)},
		{"step240", step(1, 240, 180, 6)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Onset(bc.xs, OnsetOptions{})
			}
			b.ReportMetric(float64(b.N*len(bc.xs))/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

func BenchmarkChangeProb240(b *testing.B) {
	xs := step(1, 240, 180, 6)
	b.ReportAllocs()
	for b.Loop() {
		ChangeProb(xs, DefaultHazardLambda)
	}
	b.ReportMetric(float64(b.N*len(xs))/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkPeerZ8(b *testing.B) {
	vals := []float64{50, 49, 51, 48, 52, 61, 49.5, 50.5}
	b.ReportAllocs()
	for b.Loop() {
		PeerZ(vals, DefaultFloor)
	}
}

func BenchmarkCommonOnset13x240(b *testing.B) {
	series := make([][]float64, 13)
	for k := range series {
		if k < 4 {
			series[k] = step(uint64(k), 240, 180, 6)
		} else {
			series[k] = noise(uint64(k), 240)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		CommonOnset(series, OnsetOptions{})
	}
}
