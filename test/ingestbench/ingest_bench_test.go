package ingestbench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/peertest"
)

const (
	// batchSize is the series of one request, as Prometheus's default
	// queue_config.max_samples_per_send (2,000) halved for one sample per series.
	batchSize = 1000
	// senders is the number of concurrent senders, like Prometheus queue shards.
	senders = 4
	// interval is the scrape interval between rounds.
	interval = 15 * time.Second
)

// ingestRun is what one run of one peer measured.
type ingestRun struct {
	peer         string
	samples      int
	first, total time.Duration // the first round (series creation) and all rounds
	rss, peakRSS int64         // after ingest settled; peak over the run
	series       int
	cpu          peertest.CPUUse // over the whole ingest
}

func (r ingestRun) rate() float64 { return float64(r.samples) / r.total.Seconds() }

// cpuRate is the samples per second of the server's CPU time.
func (r ingestRun) cpuRate() float64 { return float64(r.samples) / r.cpu.Server.Seconds() }

// steadyRate is the samples per second of rounds 2 to the last.
func (r ingestRun) steadyRate() float64 {
	return float64(r.samples-r.series) / (r.total - r.first).Seconds()
}

// ingest starts p on a fresh data directory, sends load with `senders`
// senders, checks that every sample is stored, measures what it can and
// stops p. With settle > 0 it waits that long after the last request
// before reading the RSS.
func ingest(b *testing.B, p peer, load *remotewritetest.Load, settle time.Duration) ingestRun {
	b.Helper()
	dir, err := os.MkdirTemp(b.TempDir(), p.name+"-")
	if err != nil {
		b.Fatal(err)
	}
	proc := p.start(b, dir)
	defer stop(b, proc, p.name, dir)
	client := remotewritetest.NewClient(senders)
	defer client.CloseIdleConnections()
	url := proc.URL + "/api/v1/write"
	ctx := b.Context()

	meter, err := peertest.StartCPU(proc.PID())
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := load.Send(ctx, client, url, senders, 0, 1); err != nil {
		b.Fatalf("%s: %v", p.name, err)
	}
	first := time.Since(start)
	if err := load.Send(ctx, client, url, senders, 1, load.Rounds); err != nil {
		b.Fatalf("%s: %v", p.name, err)
	}
	run := ingestRun{
		peer: p.name, samples: load.Samples(0, load.Rounds), first: first, total: time.Since(start),
		series: load.Series,
	}
	if run.cpu, err = meter.Stop(); err != nil {
		b.Fatal(err)
	}
	if settle > 0 {
		time.Sleep(settle)
		if run.rss, run.peakRSS, err = peertest.ProcMemory(proc.PID()); err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
	}
	// Every sample of one metric of every GPU, all rounds: nothing was lost.
	expr := fmt.Sprintf("sum(count_over_time(DCGM_FI_DEV_GPU_UTIL[%ds]))", load.Rounds*int(load.Interval.Seconds()))
	if err := waitStored(ctx, proc.URL, expr, load.End, float64(load.Series/20*load.Rounds)); err != nil {
		b.Fatalf("%s holds less than was sent: %v", p.name, err)
	}
	return run
}

// BenchmarkRemoteWriteThroughput compares the remote-write ingest
// throughput of Vigil, Prometheus 2.42 and VictoriaMetrics 1.79: 100,000
// dcgm-exporter-like series (10 labels each), 30 rounds 15 s apart ending
// now, each round one sample for every series in 100 requests of 1,000
// series, sent by 4 concurrent senders. The requests are encoded before
// anything is timed. The peers alternate (Vigil, Prometheus,
// VictoriaMetrics, Vigil, …) five times, each run a fresh process on a
// fresh data directory; the figures are the medians of the per-run ratios
// and their range.
//
//	go test ./test/ingestbench -run '^$' -bench RemoteWriteThroughput -benchtime 1x -timeout 60m
func BenchmarkRemoteWriteThroughput(b *testing.B) {
	const (
		series = 100_000
		rounds = 30
		pairs  = 5
	)
	b.ReportAllocs()
	vigil, prom, vm := peers(b)
	begin := time.Now()
	load, err := remotewritetest.NewLoad(series, batchSize, rounds, interval, time.Now().Truncate(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("load: %d series × %d rounds = %d samples in %d requests of %d series, %.1f MiB snappy, encoded in %s",
		series, rounds, load.Samples(0, rounds), rounds*load.Batches, batchSize, float64(load.Bytes())/(1<<20), time.Since(begin).Round(time.Millisecond))
	var runs []ingestRun
	for b.Loop() {
		runs = runs[:0]
		for range pairs {
			for _, p := range []peer{vigil, prom, vm} {
				runs = append(runs, ingest(b, p, load, 0))
			}
		}
	}
	rates, cpuRates := map[string][]float64{}, map[string][]float64{}
	for _, r := range runs {
		rates[r.peer] = append(rates[r.peer], r.rate())
		cpuRates[r.peer] = append(cpuRates[r.peer], r.cpuRate())
	}
	vp, vv := summarize(ratios(rates["vigil"], rates["prometheus"])), summarize(ratios(rates["vigil"], rates["victoriametrics"]))
	b.ReportMetric(summarize(rates["vigil"]).median, "vigil-samples/s")
	b.ReportMetric(summarize(rates["prometheus"]).median, "prometheus-samples/s")
	b.ReportMetric(summarize(rates["victoriametrics"]).median, "vm-samples/s")
	b.ReportMetric(vp.median, "vigil/prometheus")
	b.ReportMetric(vv.median, "vigil/vm")

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nremote-write ingest throughput: %d series, %d rounds × %d requests of %d series, %d senders\n", series, rounds, load.Batches, batchSize, senders)
	fmt.Fprintf(&sb, "machine: %s\n\n", machine())
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tpeer\tsamples/s\tround 1 (new series)\trounds 2–30 samples/s\ttotal\tserver CPU\tsamples/CPU-s\tclient CPU\tother load\t")
	for i, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%.0f\t%s\t%s\t%.0f\t%s\t%.0f%%\t\n", i/3+1, r.peer, r.rate(), r.first.Round(time.Millisecond), r.steadyRate(),
			r.total.Round(time.Millisecond), r.cpu.Server.Round(10*time.Millisecond), r.cpuRate(), r.cpu.Client.Round(10*time.Millisecond), 100*r.cpu.Foreign)
	}
	tw.Flush()
	fmt.Fprintf(&sb, "\nmedian samples/s (min–max): vigil %s, prometheus %s, victoriametrics %s\n",
		fmtRate(rates["vigil"]), fmtRate(rates["prometheus"]), fmtRate(rates["victoriametrics"]))
	fmt.Fprintf(&sb, "vigil/prometheus per run: %s → median %s (target ≥ 0.95: %s)\n", fmtRatios(ratios(rates["vigil"], rates["prometheus"])), vp, verdict(vp.median >= 0.95))
	fmt.Fprintf(&sb, "vigil/victoriametrics per run: %s → median %s\n", fmtRatios(ratios(rates["vigil"], rates["victoriametrics"])), vv)
	fmt.Fprintf(&sb, "samples per server CPU-second, vigil/prometheus per run: %s → median %s; vigil/victoriametrics: %s → median %s\n",
		fmtRatios(ratios(cpuRates["vigil"], cpuRates["prometheus"])), summarize(ratios(cpuRates["vigil"], cpuRates["prometheus"])),
		fmtRatios(ratios(cpuRates["vigil"], cpuRates["victoriametrics"])), summarize(ratios(cpuRates["vigil"], cpuRates["victoriametrics"])))
	fmt.Fprintf(&sb, "(other load: the share of the machine's CPU that processes other than the server and the load generator used during the run)\n")
	fmt.Print(sb.String())
}

// BenchmarkRSSPerSeries compares the resident memory per active series of
// Vigil and Prometheus 2.42 after remote-write ingest: at 100,000 series (5
// rounds) and at 1,000,000 series (3 rounds, to keep the run short on 2
// cores), VmRSS read from /proc 2 s after the last request, divided by the
// series. The peers alternate three times, each run a fresh process on a
// fresh data directory.
//
//	go test ./test/ingestbench -run '^$' -bench RSSPerSeries -benchtime 1x -timeout 60m
func BenchmarkRSSPerSeries(b *testing.B) {
	for _, c := range []struct {
		name           string
		series, rounds int
	}{
		{"series=100k", 100_000, 5},
		{"series=1M", 1_000_000, 3},
	} {
		b.Run(c.name, func(b *testing.B) { benchRSS(b, c.series, c.rounds) })
	}
}

func benchRSS(b *testing.B, series, rounds int) {
	const (
		pairs  = 3
		settle = 2 * time.Second
	)
	b.ReportAllocs()
	vigil, prom, _ := peers(b)
	begin := time.Now()
	load, err := remotewritetest.NewLoad(series, batchSize, rounds, interval, time.Now().Truncate(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("load: %d series × %d rounds, %.1f MiB snappy, encoded in %s", series, rounds, float64(load.Bytes())/(1<<20), time.Since(begin).Round(time.Millisecond))
	var runs []ingestRun
	for b.Loop() {
		runs = runs[:0]
		for range pairs {
			for _, p := range []peer{vigil, prom} {
				runs = append(runs, ingest(b, p, load, settle))
			}
		}
	}
	perSeries := map[string][]float64{}
	for _, r := range runs {
		perSeries[r.peer] = append(perSeries[r.peer], float64(r.rss)/float64(series))
	}
	ratio := summarize(ratios(perSeries["vigil"], perSeries["prometheus"]))
	b.ReportMetric(summarize(perSeries["vigil"]).median, "vigil-B/series")
	b.ReportMetric(summarize(perSeries["prometheus"]).median, "prometheus-B/series")
	b.ReportMetric(ratio.median, "vigil/prometheus")

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nRSS per active series: %d series, %d rounds (one sample per series each), VmRSS %s after the last request\n", series, rounds, settle)
	fmt.Fprintf(&sb, "machine: %s\n\n", machine())
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tpeer\tVmRSS MiB\tbytes/series\tpeak VmHWM MiB\tingest samples/s\t")
	for i, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t\n", i/2+1, r.peer, float64(r.rss)/(1<<20), float64(r.rss)/float64(series), float64(r.peakRSS)/(1<<20), r.rate())
	}
	tw.Flush()
	fmt.Fprintf(&sb, "\nmedian bytes/series (min–max): vigil %s, prometheus %s\n", fmtRate(perSeries["vigil"]), fmtRate(perSeries["prometheus"]))
	fmt.Fprintf(&sb, "vigil/prometheus per run: %s → median %s (target ≤ 1.0: %s)\n", fmtRatios(ratios(perSeries["vigil"], perSeries["prometheus"])), ratio, verdict(ratio.median <= 1.0))
	fmt.Print(sb.String())
}

func fmtRate(v []float64) string {
	s := summarize(v)
	return fmt.Sprintf("%.0f (%.0f–%.0f)", s.median, s.min, s.max)
}

func fmtRatios(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, " ")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
