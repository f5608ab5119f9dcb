package authbench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/vigil-obs/vigil/internal/certtest"
	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/peertest"
)

const (
	series    = 20_000
	rounds    = 20
	batchSize = 1000
	senders   = 4
	interval  = 15 * time.Second
	// queries is the number of instant queries of one run, one at a
	// time over a kept-alive connection.
	queries = 300
	// pairs is how many times the two modes alternate.
	pairs = 5
	// password is the benchmark user's.
	password = "bench-password"
)

// vigilConfig leaves the store to the benchmark's series, as ingestbench.
const vigilConfig = `self_monitoring:
  enabled: false
evaluation:
  enabled: false
`

// mode is one way of serving: plain HTTP, or TLS with basic auth.
type mode struct {
	name   string
	scheme string
	args   []string
	client func(senders int) *http.Client
}

// run is what one run of one mode measured.
type run struct {
	mode    string
	rate    float64       // remote-write samples/s
	p50     time.Duration // instant query latency
	p99     time.Duration
	elapsed time.Duration
}

// BenchmarkAuthOverhead measures the cost of --web.config.file (TLS 1.3
// and a basic-auth user with a bcrypt hash of the default cost) on the
// HTTP listener: remote-write throughput of 20,000 dcgm-exporter-like
// series × 20 rounds sent by 4 senders over kept-alive connections, and
// the latency of 300 instant queries one after another. The two modes
// alternate (off, on, off, on, …) five times, each run a fresh `vigil
// serve` on a fresh data directory with the same load generator; the
// figures are the medians of the per-pair ratios (on / off).
//
//	go test ./test/authbench -run '^$' -bench AuthOverhead -benchtime 1x -timeout 30m
func BenchmarkAuthOverhead(b *testing.B) {
	b.ReportAllocs()
	certs := certtest.New(b)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		b.Fatal(err)
	}
	web := certs.WriteFile(b, "web.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  min_version: TLS13\n"+
		"basic_auth_users:\n  bench: "+string(hash)+"\n")
	cfg := certs.WriteFile(b, "vigil.yaml", vigilConfig)
	peertest.Vigil(b) // built before anything is timed
	off := mode{name: "off", scheme: "http", args: nil, client: remotewritetest.NewClient}
	on := mode{name: "tls+basic", scheme: "https", args: []string{"--web.config.file", web}, client: func(n int) *http.Client {
		c := remotewritetest.NewClient(n)
		c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: certs.Pool(b), MinVersion: tls.VersionTLS13}
		c.Transport = &basicAuth{next: c.Transport.(*http.Transport)}
		return c
	}}
	load, err := remotewritetest.NewLoad(series, batchSize, rounds, interval, time.Now().Truncate(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	var runs []run
	for b.Loop() {
		runs = runs[:0]
		for range pairs {
			for _, m := range []mode{off, on} {
				runs = append(runs, measure(b, m, cfg, load))
			}
		}
	}
	var rateRatios, p50Ratios, p99Ratios []float64
	for i := 0; i+1 < len(runs); i += 2 {
		rateRatios = append(rateRatios, runs[i+1].rate/runs[i].rate)
		p50Ratios = append(p50Ratios, float64(runs[i+1].p50)/float64(runs[i].p50))
		p99Ratios = append(p99Ratios, float64(runs[i+1].p99)/float64(runs[i].p99))
	}
	b.ReportMetric(median(rateRatios), "rw-throughput-on/off")
	b.ReportMetric(median(p50Ratios), "query-p50-on/off")
	b.ReportMetric(median(p99Ratios), "query-p99-on/off")

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nauthentication and TLS overhead: --web.config.file (TLS 1.3, bcrypt basic auth) vs none\n")
	fmt.Fprintf(&sb, "remote write: %d series × %d rounds, %d requests of %d series, %d senders; %d instant queries, one at a time\n", series, rounds, rounds*load.Batches, batchSize, senders, queries)
	fmt.Fprintf(&sb, "machine: %s/%s, %d CPUs\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pair\tmode\tsamples/s\tquery p50\tquery p99\t")
	for i, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t\n", i/2+1, r.mode, r.rate, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
	}
	tw.Flush()
	fmt.Fprintf(&sb, "\non/off per pair: throughput %s → median %.3f; query p50 %s → median %.3f; p99 %s → median %.3f\n",
		fmtRatios(rateRatios), median(rateRatios), fmtRatios(p50Ratios), median(p50Ratios), fmtRatios(p99Ratios), median(p99Ratios))
	fmt.Print(sb.String())
}

// measure starts vigil serve in mode m on a fresh directory, sends the
// load, checks it is stored, times the queries and stops it.
func measure(b *testing.B, m mode, cfg string, load *remotewritetest.Load) run {
	b.Helper()
	dir, err := os.MkdirTemp(b.TempDir(), m.name+"-")
	if err != nil {
		b.Fatal(err)
	}
	addr := peertest.FreeAddr(b)
	base := m.scheme + "://" + addr
	probe := m.client(1)
	defer probe.CloseIdleConnections()
	args := append([]string{"serve", "--config", cfg, "--data-dir", dir, "--listen", addr, "--otlp-grpc-listen", "", "--otlp-http-listen", ""}, m.args...)
	proc := peertest.Start(b, base, addr, func() bool {
		resp, err := probe.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, peertest.Vigil(b), args...)
	defer func() {
		if err := proc.Stop(); err != nil {
			b.Errorf("stop vigil (%s): %v\n%s", m.name, err, proc.Output())
		}
		_ = os.RemoveAll(dir)
	}()
	client := m.client(senders)
	defer client.CloseIdleConnections()
	ctx := b.Context()
	start := time.Now()
	if err := load.Send(ctx, client, base+"/api/v1/write", senders, 0, load.Rounds); err != nil {
		b.Fatalf("%s: %v", m.name, err)
	}
	elapsed := time.Since(start)
	r := run{mode: m.name, rate: float64(load.Samples(0, load.Rounds)) / elapsed.Seconds(), elapsed: elapsed}

	// Every sample of one metric arrived: the query answers the count.
	q := fmt.Sprintf("sum(count_over_time(DCGM_FI_DEV_GPU_UTIL[%ds]))", load.Rounds*int(load.Interval.Seconds()))
	want := fmt.Sprint(load.Series / 20 * load.Rounds)
	var lat []time.Duration
	for i := range queries {
		t0 := time.Now()
		got, err := instant(ctx, probe, base, q, load.End)
		lat = append(lat, time.Since(t0))
		if err != nil || (i == 0 && got != want) {
			b.Fatalf("%s: query %s: got %q, want %q: %v", m.name, q, got, want, err)
		}
	}
	slices.Sort(lat)
	r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	return r
}

// instant evaluates q at at and returns the first sample's value.
func instant(ctx context.Context, c *http.Client, base, q string, at time.Time) (string, error) {
	u := base + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + fmt.Sprint(at.Unix())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
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
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return "", err
	}
	if len(out.Data.Result) == 0 {
		return "", nil
	}
	return fmt.Sprint(out.Data.Result[0].Value[1]), nil
}

// basicAuth adds the benchmark user's credentials to every request.
type basicAuth struct{ next *http.Transport }

func (a *basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth("bench", password)
	return a.next.RoundTrip(r)
}

func (a *basicAuth) CloseIdleConnections() { a.next.CloseIdleConnections() }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, " ")
}
