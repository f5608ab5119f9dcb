package tenancybench

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/peertest"
)

const (
	// limitRate is R, the ingestion_rate of both tenants in samples/s,
	// with a burst of one second of it.
	limitRate = 10_000
	// The victim sends R/2: victimShards serial senders (as Prometheus's
	// queue shards), each owning victimBatch series and sending one
	// sample of each every victimPeriod, on a fixed schedule.
	victimShards = 4
	victimBatch  = 250
	victimPeriod = time.Second * victimShards * victimBatch / (limitRate / 2)
	// The abuser offers 10 × R: abuserWorkers senders of requests of
	// abuserBatch series (of abuserSeries), each every abuserPeriod.
	abuserWorkers = 4
	abuserBatch   = 2000
	abuserSeries  = 20_000
	abuserPeriod  = time.Second * abuserWorkers * abuserBatch / (10 * limitRate)
	// window is how long one measured case lasts; gap separates cases.
	window = 20 * time.Second
	gap    = time.Second
	// writeTimeout bounds one write request.
	writeTimeout = 10 * time.Second
)

// limitsFile gives both tenants the same ingestion rate, in Mimir's
// runtime-file format.
var limitsFile = fmt.Sprintf(`overrides:
  abuser:
    ingestion_rate: %d
    ingestion_burst_size: %d
  victim:
    ingestion_rate: %d
    ingestion_burst_size: %d
`, limitRate, limitRate, limitRate, limitRate)

const neighbourConfig = baseConfig + `tenancy:
  enabled: true
  limits_file: $DIR/limits.yml
  limits_reload_period: 1s
`

// victimRun is what the victim saw in one window.
type victimRun struct {
	abused                bool
	sent, acked, failed   int // requests; acked: 2xx within the window
	late                  int // 2xx after the window ended
	ackedSamples          int
	p50, p99, max         time.Duration
	failure               string // the first failure
	abuserSent, accepted  int    // abuser samples offered and stored
	tooMany, abuserOthers int    // abuser requests answered 429, or otherwise refused
	reason                string // the first 429's body
	abuserOther           string // the abuser's first other failure
	cpu                   peertest.CPUUse
}

// BenchmarkNoisyNeighbour measures whether one tenant over its ingestion
// rate slows another. Both tenants have ingestion_rate R = 10,000
// samples/s in the runtime limits file of one `vigil serve`. The victim
// sends R/2 on a fixed schedule; over each 20 s window it measures its
// write latency (from each request's scheduled time, so a stall is not
// hidden by the sender waiting) and its samples acknowledged within the
// window, first with the abuser idle, then with the abuser offering 10 × R,
// alternating three times. It reports the medians of the per-pair ratios
// (abusive/idle), the spread of the idle windows (the noise), and the
// abuser's 429s with one reason.
//
//	go test ./test/tenancybench -run '^$' -bench NoisyNeighbour -benchtime 1x -v
func BenchmarkNoisyNeighbour(b *testing.B) {
	peertest.Vigil(b) // built before anything is timed
	abuse, err := remotewritetest.NewLoad(abuserSeries, abuserBatch, 1, interval, time.Now().Truncate(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	var runs []victimRun
	for b.Loop() {
		runs = neighbourRuns(b, abuse)
	}
	reportNeighbour(b, runs)
}

// neighbourRuns starts the server, warms both tenants' series up, and
// measures the idle and abusive windows in turn.
func neighbourRuns(b *testing.B, abuse *remotewritetest.Load) []victimRun {
	srv := serve(b, "neighbour", neighbourConfig, map[string]string{"limits.yml": limitsFile})
	defer srv.stop(b)
	v := newVictim(srv.proc.URL)
	defer v.client.CloseIdleConnections()
	a := &abuser{client: tenantClient(abuserWorkers, "abuser"), url: srv.proc.URL + "/api/v1/write", load: abuse}
	defer a.client.CloseIdleConnections()
	ctx := b.Context()
	// Warm-up: both tenants' series exist before the first window, and
	// both buckets refill before it starts.
	measureWindow(ctx, b, srv.proc.PID(), v, a, 3*time.Second)
	time.Sleep(2 * time.Second)
	var runs []victimRun
	for range pairs {
		for _, abused := range []bool{false, true} {
			var ab *abuser
			if abused {
				ab = a
			}
			runs = append(runs, measureWindow(ctx, b, srv.proc.PID(), v, ab, window))
			time.Sleep(gap)
		}
	}
	return runs
}

// measureWindow runs the victim for d, and the abuser alongside when a
// is not nil.
func measureWindow(ctx context.Context, b *testing.B, pid int, v *victim, a *abuser, d time.Duration) victimRun {
	meter, err := peertest.StartCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(20 * time.Millisecond)
	end := start.Add(d)
	var ar abuserRun
	var wg sync.WaitGroup
	if a != nil {
		wg.Go(func() { ar = a.run(ctx, start, end) })
	}
	r := v.run(ctx, start, end)
	wg.Wait()
	r.abused = a != nil
	r.abuserSent, r.accepted, r.tooMany, r.abuserOthers, r.reason = ar.sent, ar.accepted, ar.tooMany, ar.others, ar.reason
	r.abuserOther = ar.other
	if r.cpu, err = meter.Stop(); err != nil {
		b.Fatal(err)
	}
	return r
}

func reportNeighbour(b *testing.B, runs []victimRun) {
	var idleP99, idleAcked []float64
	for _, r := range runs {
		if !r.abused {
			idleP99 = append(idleP99, float64(r.p99))
			idleAcked = append(idleAcked, float64(r.ackedSamples))
		}
	}
	p99Ratios := pairRatios(runs, func(r victimRun) float64 { return float64(r.p99) })
	ackedRatios := pairRatios(runs, func(r victimRun) float64 { return float64(r.ackedSamples) })
	tooMany, others, reason, other, accepted, abusedFor := 0, 0, "", "", 0, 0.0
	var failures []string
	for _, r := range runs {
		tooMany += r.tooMany
		others += r.abuserOthers
		if reason == "" {
			reason = r.reason
		}
		if other == "" {
			other = r.abuserOther
		}
		if r.abused {
			accepted += r.accepted
			abusedFor += window.Seconds()
		}
		if r.failure != "" {
			failures = append(failures, r.failure)
		}
	}
	b.ReportMetric(median(p99Ratios), "victim-p99-abusive/idle")
	b.ReportMetric(median(ackedRatios), "victim-acked-abusive/idle")
	b.ReportMetric(spread(idleP99), "victim-p99-idle-spread")
	b.ReportMetric(spread(idleAcked), "victim-acked-idle-spread")
	b.ReportMetric(float64(tooMany), "abuser-429s")

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nnoisy neighbour: both tenants ingestion_rate %d samples/s (burst %d); victim sends %d samples/s (%d senders × %d series every %s); abuser offers %d samples/s (%d senders × %d series every %s)\n",
		limitRate, limitRate, limitRate/2, victimShards, victimBatch, victimPeriod, 10*limitRate, abuserWorkers, abuserBatch, abuserPeriod)
	fmt.Fprintf(&sb, "one vigil serve, windows of %s, idle and abusive alternating; latency from each request's scheduled time\n", window)
	fmt.Fprintf(&sb, "machine: %s/%s, %d CPUs; server cores: vigil's CPU time per second, load generator cores: this process's (victim and abuser); others' CPU: the share of the machine other processes used\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pair\tabuser\tvictim requests\tacked samples\tfailed\tlate\tp50\tp99\tmax\tabuser offered/s\tabuser stored/s\tabuser 429s\tserver cores\tload generator cores\tothers' CPU\t")
	for i, r := range runs {
		state := "idle"
		if r.abused {
			state = "10×R"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%.0f\t%.0f\t%d\t%.2f\t%.2f\t%.0f%%\t\n", i/2+1, state, r.sent, r.ackedSamples, r.failed, r.late,
			r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond),
			float64(r.abuserSent)/window.Seconds(), float64(r.accepted)/window.Seconds(), r.tooMany, r.cpu.Cores(), r.cpu.Client.Seconds()/r.cpu.Wall.Seconds(), 100*r.cpu.Foreign)
	}
	_ = tw.Flush()
	fmt.Fprintf(&sb, "\nabusive/idle per pair → median: victim p99 %s → %.3f; victim acked samples %s → %.3f\n",
		fmtRatios(p99Ratios), median(p99Ratios), fmtRatios(ackedRatios), median(ackedRatios))
	fmt.Fprintf(&sb, "noise, (max − min)/median of the idle windows: victim p99 %.3f, acked samples %.3f\n", spread(idleP99), spread(idleAcked))
	verdict := "within"
	if d := median(p99Ratios) - 1; d > spread(idleP99) || 1-median(ackedRatios) > spread(idleAcked) {
		verdict = "OUTSIDE"
	}
	fmt.Fprintf(&sb, "victim under abuse: %s the idle noise\n", verdict)
	if abusedFor > 0 {
		fmt.Fprintf(&sb, "abuser: %d requests answered 429; stored %.0f samples/s while abusive (limit %d, burst %d); one reason: %s\n",
			tooMany, float64(accepted)/abusedFor, limitRate, limitRate, reason)
	}
	if others > 0 {
		fmt.Fprintf(&sb, "abuser: %d requests failed otherwise; the first: %s\n", others, other)
	}
	fmt.Print(sb.String())
	checkNeighbour(b, tooMany, reason, failures)
}

// checkNeighbour fails the benchmark when the limit was not in force, its
// refusals did not say why, or the victim, under its own limit, was
// refused.
func checkNeighbour(b *testing.B, tooMany int, reason string, failures []string) {
	if tooMany == 0 {
		b.Errorf("the abuser got no 429 at 10 × its ingestion_rate")
	} else if !strings.Contains(reason, `tenant "abuser"`) || !strings.Contains(reason, "ingestion_rate") {
		b.Errorf("the 429's reason %q does not name the tenant and the limit", reason)
	}
	if len(failures) > 0 {
		b.Errorf("the victim, under its limit, had failed writes; the first of each window: %s", strings.Join(failures, "; "))
	}
}

// victim sends R/2 on a fixed schedule, each shard serially with its own
// series, as a Prometheus queue shard does.
type victim struct {
	client *http.Client
	url    string
	// reqs[s] is shard s's request, its samples rewritten for each send
	// (only shard s's goroutine touches it).
	reqs [victimShards]prompb.WriteRequest
	n    atomic.Int64 // the sample value, a counter
}

func newVictim(base string) *victim {
	v := &victim{client: tenantClient(victimShards, "victim"), url: base + "/api/v1/write"}
	lsets := remotewritetest.GPUSeries(victimShards * victimBatch)
	for s := range v.reqs {
		ts := make([]prompb.TimeSeries, victimBatch)
		for i := range ts {
			ts[i] = prompb.TimeSeries{Labels: lsets[s*victimBatch+i], Samples: make([]prompb.Sample, 1)}
		}
		v.reqs[s].Timeseries = ts
	}
	return v
}

// encode returns shard s's request with samples at at.
func (v *victim) encode(s int, at time.Time) ([]byte, error) {
	val := float64(v.n.Add(1))
	for i := range v.reqs[s].Timeseries {
		v.reqs[s].Timeseries[i].Samples[0] = prompb.Sample{Value: val, Timestamp: at.UnixMilli()}
	}
	raw, err := proto.Marshal(&v.reqs[s])
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return snappy.Encode(nil, raw), nil
}

// shardRun is what one victim shard saw in one window.
type shardRun struct {
	lat                       []time.Duration
	sent, acked, failed, late int
	failure                   string
}

// run sends from every shard on its schedule from start until end, and
// waits for the answers.
func (v *victim) run(ctx context.Context, start, end time.Time) victimRun {
	res := make([]shardRun, victimShards)
	var wg sync.WaitGroup
	for s := range victimShards {
		wg.Go(func() { res[s] = v.shard(ctx, s, start, end) })
	}
	wg.Wait()
	var r victimRun
	var lat []time.Duration
	for _, s := range res {
		lat = append(lat, s.lat...)
		r.sent += s.sent
		r.acked += s.acked
		r.failed += s.failed
		r.late += s.late
		if r.failure == "" {
			r.failure = s.failure
		}
	}
	r.ackedSamples = r.acked * victimBatch
	slices.Sort(lat)
	r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	if len(lat) > 0 {
		r.max = lat[len(lat)-1]
	}
	return r
}

// shard is shard s's sender: one request every victimPeriod (shards
// staggered), sent at once when it is behind, none begun after end.
func (v *victim) shard(ctx context.Context, s int, start, end time.Time) shardRun {
	var r shardRun
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k)*victimPeriod + time.Duration(s)*victimPeriod/victimShards)
		if !at.Before(end) || !time.Now().Before(end) {
			return r
		}
		body, err := v.encode(s, at)
		if err != nil {
			r.failed++
			r.failure = err.Error()
			continue
		}
		if !sleepUntil(ctx, at) {
			return r
		}
		rctx, cancel := context.WithTimeout(ctx, writeTimeout)
		ans, err := postWrite(rctx, v.client, v.url, body)
		cancel()
		done := time.Now()
		r.sent++
		r.lat = append(r.lat, done.Sub(at))
		switch {
		case err != nil || ans.code/100 != 2:
			r.failed++
			if r.failure == "" {
				r.failure = fmt.Sprintf("%d %s %v", ans.code, ans.body, err)
			}
		case done.After(end):
			r.late++
		default:
			r.acked++
		}
	}
}

// abuser offers 10 × R: its workers cycle over the pre-encoded requests of
// its series (the same timestamps every pass, so what is stored again is
// a duplicate that changes nothing).
type abuser struct {
	client *http.Client
	url    string
	load   *remotewritetest.Load
	next   atomic.Int64
}

// abuserRun is what the abuser's requests of one window got.
type abuserRun struct {
	sent, accepted  int    // samples
	tooMany, others int    // requests
	reason, other   string // the first 429's body; the first other failure
}

// run sends from every worker on its schedule from start until end. A
// worker more than a second behind its schedule drops what it missed.
func (a *abuser) run(ctx context.Context, start, end time.Time) abuserRun {
	var mu sync.Mutex
	var r abuserRun
	var wg sync.WaitGroup
	for w := range abuserWorkers {
		wg.Go(func() {
			for at := start.Add(time.Duration(w) * abuserPeriod / abuserWorkers); at.Before(end); at = at.Add(abuserPeriod) {
				if time.Since(at) > time.Second {
					at = time.Now()
				}
				if !sleepUntil(ctx, at) || !time.Now().Before(end) {
					return
				}
				body := a.load.Body(0, int(a.next.Add(1))%a.load.Batches)
				rctx, cancel := context.WithTimeout(ctx, writeTimeout)
				ans, err := postWrite(rctx, a.client, a.url, body)
				cancel()
				mu.Lock()
				r.sent += abuserBatch
				switch {
				case err == nil && ans.code/100 == 2:
					r.accepted += abuserBatch
				case err == nil && ans.code == http.StatusTooManyRequests:
					r.tooMany++
					if r.reason == "" {
						r.reason = ans.body
					}
				default:
					r.others++
					if r.other == "" {
						r.other = fmt.Sprintf("%d %s %v", ans.code, ans.body, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return r
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
