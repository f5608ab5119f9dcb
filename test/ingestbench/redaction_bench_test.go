package ingestbench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/peertest"
)

// BenchmarkRemoteWriteRedaction measures what redacting every label value
// costs remote-write ingest: Vigil as configured by default (label values
// redacted) against Vigil with redaction.unredacted_paths: [remote_write],
// the same load, fresh processes alternating three times; the ratio of
// samples/s and of samples per server CPU-second, median and range.
//
//	go test ./test/ingestbench -run '^$' -bench RemoteWriteRedaction -benchtime 1x -timeout 30m
func BenchmarkRemoteWriteRedaction(b *testing.B) {
	const (
		series = 100_000
		rounds = 10
		pairs  = 3
	)
	dir := b.TempDir()
	plain := filepath.Join(dir, "unredacted.yaml")
	redacted := filepath.Join(dir, "redacted.yaml")
	if err := os.WriteFile(redacted, []byte(vigilConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte(vigilConfig+"redaction:\n  unredacted_paths: [remote_write]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	peertest.Vigil(b)
	on := peer{"redacted", func(tb testing.TB, d string) *peertest.Proc {
		return peertest.StartVigil(tb, "--config", redacted, "--data-dir", d)
	}}
	off := peer{"unredacted", func(tb testing.TB, d string) *peertest.Proc {
		return peertest.StartVigil(tb, "--config", plain, "--data-dir", d)
	}}
	load, err := remotewritetest.NewLoad(series, batchSize, rounds, interval, time.Now().Truncate(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	var runs []ingestRun
	for b.Loop() {
		runs = runs[:0]
		for range pairs {
			for _, p := range []peer{on, off} {
				runs = append(runs, ingest(b, p, load, 0))
			}
		}
	}
	rates, cpuRates := map[string][]float64{}, map[string][]float64{}
	for _, r := range runs {
		rates[r.peer] = append(rates[r.peer], r.rate())
		cpuRates[r.peer] = append(cpuRates[r.peer], r.cpuRate())
	}
	wall, cpu := summarize(ratios(rates["redacted"], rates["unredacted"])), summarize(ratios(cpuRates["redacted"], cpuRates["unredacted"]))
	b.ReportMetric(wall.median, "redacted/unredacted")
	fmt.Printf("\nremote write with label values redacted vs not (%d series × %d rounds, %d pairs; %s)\n", series, rounds, pairs, machine())
	fmt.Printf("samples/s: redacted %s, unredacted %s; ratio per pair %s → median %s\n",
		fmtRate(rates["redacted"]), fmtRate(rates["unredacted"]), fmtRatios(ratios(rates["redacted"], rates["unredacted"])), wall)
	fmt.Printf("samples per server CPU-second: ratio per pair %s → median %s\n", fmtRatios(ratios(cpuRates["redacted"], cpuRates["unredacted"])), cpu)
}
