package tenancybench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/peertest"
)

const (
	// series, rounds, batchSize, senders and interval are the remote-write
	// load: 100,000 dcgm-exporter-like series (5,000 GPUs on 625 nodes),
	// one sample each per round, in requests of 1,000 series from 4
	// concurrent senders, as Prometheus's queue shards send them.
	series    = 100_000
	rounds    = 8
	batchSize = 1000
	senders   = 4
	interval  = 15 * time.Second
	// queryRounds is how many times each query of the set runs, one at a
	// time over a kept-alive connection.
	queryRounds = 20
	// pairs is how many times the two modes (or the two cases) alternate.
	pairs = 3
	// benchTenant is the tenant the overhead benchmark writes and reads as.
	benchTenant = "bench"
)

// tenancyConfig turns tenancy on with the defaults: every tenant
// unlimited.
const tenancyConfig = baseConfig + `tenancy:
  enabled: true
`

// query is one PromQL query of the set, instant (at the load's end) or
// range (over the load's span, one step per round).
type query struct {
	expr    string
	isRange bool
}

// queries are instant and range queries over the load's series: whole
// metrics aggregated, a top-k, one node's GPUs, rates over a counter.
var queries = []query{
	{expr: `count(DCGM_FI_DEV_GPU_UTIL)`},
	{expr: `sum by (namespace) (DCGM_FI_DEV_POWER_USAGE)`},
	{expr: `topk(10, DCGM_FI_DEV_GPU_TEMP)`},
	{expr: `DCGM_FI_DEV_FB_USED{Hostname="gpu-node-00042"}`},
	{expr: `sum by (namespace) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[1m]))`, isRange: true},
	{expr: `avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)`, isRange: true},
	{expr: `max_over_time(DCGM_FI_DEV_GPU_TEMP{namespace="ml-train"}[1m])`, isRange: true},
}

// overheadMode is one way of serving and sending: tenancy off, or on
// with every request naming the tenant.
type overheadMode struct {
	name, config, tenant string
}

// latencies are the median and 99th percentile of a run's queries of one
// kind.
type latencies struct{ p50, p99 time.Duration }

// overheadRun is what one run of one mode measured.
type overheadRun struct {
	mode            string
	rate            float64         // remote-write samples/s
	write, read     peertest.CPUUse // over the remote write, and over the queries
	instant, ranged latencies
	// answers are a digest of each query's first answer, which must not
	// depend on the mode.
	answers []string
	// perQuery[j] is the median latency of queries[j].
	perQuery []time.Duration
}

// BenchmarkTenancyOverhead measures what tenancy costs remote write and
// PromQL when a single tenant uses it: the same load against `vigil serve`
// with tenancy off and with tenancy on (X-Scope-OrgID on every request,
// every series stamped with __tenant_id__, every query restricted to the
// tenant, the default limits: none). Each run is a fresh process on a
// fresh data directory; the modes alternate off, on, off, on, … three
// times, and the figures are the medians of the per-pair ratios (on/off).
// Both modes must give the same answers.
//
//	go test ./test/tenancybench -run '^$' -bench TenancyOverhead -benchtime 1x -v
func BenchmarkTenancyOverhead(b *testing.B) {
	b.ReportAllocs()
	peertest.Vigil(b) // built before anything is timed
	load, err := remotewritetest.NewLoad(series, batchSize, rounds, interval, time.Now().Truncate(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	modes := []overheadMode{{name: "off", config: baseConfig}, {name: "on", config: tenancyConfig, tenant: benchTenant}}
	var runs []overheadRun
	for b.Loop() {
		runs = runs[:0]
		for range pairs {
			for _, m := range modes {
				runs = append(runs, measureOverhead(b, m, load))
			}
		}
	}
	for _, r := range runs[1:] {
		if !slices.Equal(r.answers, runs[0].answers) {
			b.Fatalf("mode %s answered\n%s\nmode %s answered\n%s", runs[0].mode, strings.Join(runs[0].answers, "\n"), r.mode, strings.Join(r.answers, "\n"))
		}
	}
	reportOverhead(b, runs, load)
}

func reportOverhead(b *testing.B, runs []overheadRun, load *remotewritetest.Load) {
	ratios := map[string][]float64{
		"rw-throughput-on/off":     pairRatios(runs, func(r overheadRun) float64 { return r.rate }),
		"rw-server-cpu-on/off":     pairRatios(runs, func(r overheadRun) float64 { return float64(r.write.Server) }),
		"instant-query-p50-on/off": pairRatios(runs, func(r overheadRun) float64 { return float64(r.instant.p50) }),
		"instant-query-p99-on/off": pairRatios(runs, func(r overheadRun) float64 { return float64(r.instant.p99) }),
		"range-query-p50-on/off":   pairRatios(runs, func(r overheadRun) float64 { return float64(r.ranged.p50) }),
		"range-query-p99-on/off":   pairRatios(runs, func(r overheadRun) float64 { return float64(r.ranged.p99) }),
	}
	names := []string{"rw-throughput-on/off", "rw-server-cpu-on/off", "instant-query-p50-on/off", "instant-query-p99-on/off", "range-query-p50-on/off", "range-query-p99-on/off"}
	for _, n := range names {
		b.ReportMetric(median(ratios[n]), n)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\ntenancy overhead: tenancy on (X-Scope-OrgID, __tenant_id__ stamped and enforced, no limits) vs off\n")
	fmt.Fprintf(&sb, "remote write: %d series × %d rounds, %d requests of %d series, %d senders; queries: %d instant and %d range, %d times each, one at a time\n",
		load.Series, load.Rounds, load.Rounds*load.Batches, load.BatchSize, senders, countQueries(false), countQueries(true), queryRounds)
	fmt.Fprintf(&sb, "machine: %s/%s, %d CPUs; others' CPU: the share of the machine other processes used during the writes, and during the queries\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pair\ttenancy\tsamples/s\tserver CPU µs/sample\tothers' CPU\tinstant p50\tinstant p99\trange p50\trange p99\tothers' CPU\t")
	for i, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.2f\t%.0f%%\t%s\t%s\t%s\t%s\t%.0f%%\t\n", i/2+1, r.mode, r.rate,
			float64(r.write.Server.Microseconds())/float64(load.Samples(0, load.Rounds)), 100*r.write.Foreign,
			r.instant.p50.Round(time.Microsecond), r.instant.p99.Round(time.Microsecond), r.ranged.p50.Round(time.Microsecond), r.ranged.p99.Round(time.Microsecond), 100*r.read.Foreign)
	}
	_ = tw.Flush()
	fmt.Fprintf(&sb, "\non/off per pair → median:\n")
	for _, n := range names {
		fmt.Fprintf(&sb, "  %-26s %s → %.3f\n", n, fmtRatios(ratios[n]), median(ratios[n]))
	}
	fmt.Fprintf(&sb, "\neach query's median latency (the median over the runs of a mode), and the median of its per-pair on/off ratios:\n")
	tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  query\toff\ton\ton/off\t")
	for j, q := range queries {
		var off, on []float64
		for i, r := range runs {
			if i%2 == 0 {
				off = append(off, float64(r.perQuery[j]))
			} else {
				on = append(on, float64(r.perQuery[j]))
			}
		}
		kind := "instant"
		if q.isRange {
			kind = "range"
		}
		fmt.Fprintf(tw, "  %s %s\t%s\t%s\t%.3f\t\n", kind, q.expr, time.Duration(median(off)).Round(time.Microsecond), time.Duration(median(on)).Round(time.Microsecond),
			median(pairRatios(runs, func(r overheadRun) float64 { return float64(r.perQuery[j]) })))
	}
	_ = tw.Flush()
	fmt.Fprintf(&sb, "p99 is of %d instant and %d range queries a run, so it is about the slowest one\n", countQueries(false)*queryRounds, countQueries(true)*queryRounds)
	fmt.Print(sb.String())
}

func countQueries(isRange bool) int {
	n := 0
	for _, q := range queries {
		if q.isRange == isRange {
			n++
		}
	}
	return n
}

// measureOverhead starts vigil serve in mode m, sends the load, checks
// tenancy is in force (on), times the queries and stops it.
func measureOverhead(b *testing.B, m overheadMode, load *remotewritetest.Load) overheadRun {
	b.Helper()
	srv := serve(b, "overhead-"+m.name, m.config, nil)
	defer srv.stop(b)
	ctx := b.Context()
	client := tenantClient(senders, m.tenant)
	defer client.CloseIdleConnections()
	meter, err := peertest.StartCPU(srv.proc.PID())
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := load.Send(ctx, client, srv.proc.URL+"/api/v1/write", senders, 0, load.Rounds); err != nil {
		b.Fatalf("tenancy %s: remote write: %v", m.name, err)
	}
	r := overheadRun{mode: m.name, rate: float64(load.Samples(0, load.Rounds)) / time.Since(start).Seconds()}
	if r.write, err = meter.Stop(); err != nil {
		b.Fatal(err)
	}
	if m.tenant != "" {
		checkIsolation(b, srv.proc.URL, load)
	}

	qc := tenantClient(1, m.tenant)
	defer qc.CloseIdleConnections()
	var inst, rng []time.Duration
	each := make([][]time.Duration, len(queries))
	r.answers = make([]string, len(queries))
	if meter, err = peertest.StartCPU(srv.proc.PID()); err != nil {
		b.Fatal(err)
	}
	for i := range queryRounds {
		for j, q := range queries {
			t0 := time.Now()
			ans, err := promQL(ctx, qc, srv.proc.URL, q, load)
			d := time.Since(t0)
			if err != nil {
				b.Fatalf("tenancy %s: %s: %v", m.name, q.expr, err)
			}
			if i == 0 {
				r.answers[j] = q.expr + ": " + ans
			}
			each[j] = append(each[j], d)
			if q.isRange {
				rng = append(rng, d)
			} else {
				inst = append(inst, d)
			}
		}
	}
	if r.read, err = meter.Stop(); err != nil {
		b.Fatal(err)
	}
	if want := fmt.Sprintf("1 series, 1 points, sum %d", load.Series/20); !strings.HasSuffix(r.answers[0], want) {
		b.Fatalf("tenancy %s: %s, want %s: not every series arrived", m.name, r.answers[0], want)
	}
	for _, ds := range each {
		slices.Sort(ds)
		r.perQuery = append(r.perQuery, quantile(ds, 0.5))
	}
	slices.Sort(inst)
	slices.Sort(rng)
	r.instant = latencies{quantile(inst, 0.5), quantile(inst, 0.99)}
	r.ranged = latencies{quantile(rng, 0.5), quantile(rng, 0.99)}
	return r
}

// checkIsolation makes sure tenancy is in force, outside the timing: a
// query with no tenant gets 401, and another tenant sees none of the
// benchmark tenant's series.
func checkIsolation(b *testing.B, base string, load *remotewritetest.Load) {
	b.Helper()
	q := queries[0]
	if _, err := promQL(b.Context(), tenantClient(1, ""), base, q, load); err == nil || !strings.Contains(err.Error(), "401") {
		b.Fatalf("tenancy on: a query with no tenant: got %v, want 401", err)
	}
	ans, err := promQL(b.Context(), tenantClient(1, "someone-else"), base, q, load)
	if err != nil || ans != "0 series, 0 points, sum 0" {
		b.Fatalf("tenancy on: another tenant's %s: got %q (%v), want nothing", q.expr, ans, err)
	}
}

// promQL runs q and returns a digest of its answer: the series, the
// points and the sum of their values (to 6 significant digits).
func promQL(ctx context.Context, c *http.Client, base string, q query, load *remotewritetest.Load) (string, error) {
	v := url.Values{"query": {q.expr}}
	path := "/api/v1/query"
	if q.isRange {
		path = "/api/v1/query_range"
		v.Set("start", fmt.Sprint(load.End.Add(-time.Duration(load.Rounds-1)*load.Interval).Unix()))
		v.Set("end", fmt.Sprint(load.End.Unix()))
		v.Set("step", fmt.Sprint(int(load.Interval.Seconds())))
	} else {
		v.Set("time", fmt.Sprint(load.End.Unix()))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?"+v.Encode(), nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	return digest(body)
}

// digest summarises a query API answer (vector or matrix).
func digest(body []byte) (string, error) {
	var out struct {
		Data struct {
			Result []struct {
				Value  []any   `json:"value"`
				Values [][]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return "", fmt.Errorf("decode answer: %w", err)
	}
	points, sum := 0, 0.0
	for _, s := range out.Data.Result {
		pts := s.Values
		if s.Value != nil {
			pts = append(pts, s.Value)
		}
		for _, p := range pts {
			if len(p) != 2 {
				return "", fmt.Errorf("decode answer: a point of %d elements", len(p))
			}
			text, _ := p[1].(string)
			f, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return "", fmt.Errorf("decode answer: value %v: %w", p[1], err)
			}
			if !math.IsNaN(f) {
				sum += f
			}
			points++
		}
	}
	return fmt.Sprintf("%d series, %d points, sum %.6g", len(out.Data.Result), points, sum), nil
}
