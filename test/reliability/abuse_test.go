package reliability

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

// clientFrom returns an HTTP client whose connections come from ip, a
// loopback address (Linux routes all of 127.0.0.0/8 to lo), so that the
// server sees it as another host.
func clientFrom(ip string, keepAlive bool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: d.DialContext, MaxIdleConnsPerHost: 256, DisableKeepAlives: !keepAlive,
	}}
}

// op is one request of the victim; it returns an error unless answered
// with a 2xx.
type op func(ctx context.Context) error

func get(c *http.Client, u string) op {
	return func(ctx context.Context) error {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		return answered(do(ctx, c, req))
	}
}

// answered is the error of a request not answered with a 2xx.
func answered(code int, err error) error {
	if err == nil && code/100 != 2 {
		err = fmt.Errorf("status %d", code)
	}
	return err
}

// writeOp sends one small Remote-Write request per call, each with a
// later timestamp.
func writeOp(c *http.Client, base string) op {
	var n atomic.Int64
	start := time.Now().Add(-5 * time.Minute).UnixMilli()
	return func(ctx context.Context) error {
		i := n.Add(1)
		body := rw1(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
			Labels:  labelsOf("victim_writes", "job", "victim"),
			Samples: []prompb.Sample{{Timestamp: start + i, Value: float64(i)}},
		}}})
		return postWrite(ctx, c, base, body)
	}
}

func rw1(req *prompb.WriteRequest) []byte {
	b, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	return snappy.Encode(nil, b)
}

func postWrite(ctx context.Context, c *http.Client, base string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentTypeV1)
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	return answered(do(ctx, c, req))
}

// measure runs o n times, gap apart, and returns the latencies and the
// errors.
func measure(ctx context.Context, o op, n int, gap time.Duration) ([]time.Duration, []error) {
	var lat []time.Duration
	var errs []error
	for range n {
		start := time.Now()
		err := o(ctx)
		lat = append(lat, time.Since(start))
		if err != nil {
			errs = append(errs, err)
		}
		time.Sleep(gap)
	}
	return lat, errs
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func p99(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)*99-1)/100]
}

// abuseRow is one line of the abuse table.
type abuseRow struct {
	scenario, victim        string
	idle, idleP50           time.Duration
	abused, abusedP50       time.Duration
	victimFailed, victimOps int
	// ratios are every round's p99 ratio, in order.
	ratios                  []float64
	abuserOK, abuserRefused int64
}

func (r abuseRow) ratio() float64 { return float64(r.abused) / float64(r.idle) }

func abuseTable(rows []abuseRow) string {
	var b strings.Builder
	b.WriteString("| abuse | victim's request | victim p50 / p99 idle | victim p50 / p99 abused | p99 ratio (median; every round) | victim failures (worst round) | abuser's answered / refused |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		var each []string
		for _, x := range r.ratios {
			each = append(each, fmt.Sprintf("%.1f", x))
		}
		fmt.Fprintf(&b, "| %s | %s | %s / %s | %s / %s | **%.1f×** (%s) | %d of %d | %d / %d |\n", r.scenario, r.victim,
			r.idleP50.Round(100*time.Microsecond), r.idle.Round(100*time.Microsecond), r.abusedP50.Round(100*time.Microsecond), r.abused.Round(100*time.Microsecond),
			r.ratio(), strings.Join(each, ", "), r.victimFailed, r.victimOps, r.abuserOK, r.abuserRefused)
	}
	return b.String()
}

// abuser runs loop in n goroutines until stop is called, counting the
// answers it gets (ok) and the refusals (429 and 503).
type abuser struct {
	ok, refused atomic.Int64
	cancel      context.CancelFunc
	wg          sync.WaitGroup
}

func startAbuser(n int, loop func(ctx context.Context) (int, error)) *abuser {
	ctx, cancel := context.WithCancel(context.Background())
	a := &abuser{cancel: cancel}
	for range n {
		a.wg.Go(func() {
			for ctx.Err() == nil {
				code, err := loop(ctx)
				switch {
				case err != nil:
				case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
					a.refused.Add(1)
				case code/100 == 2:
					a.ok.Add(1)
				}
			}
		})
	}
	return a
}

func (a *abuser) stop() { a.cancel(); a.wg.Wait() }

func do(ctx context.Context, c *http.Client, req *http.Request) (int, error) {
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestAbuse runs each abuse of issue 17 against the real binary, from
// 127.0.0.1, while a victim client on 127.0.0.2 (another host to the
// server) goes on with its own requests. The victim's requests must all
// succeed; their p99 under abuse against idle, as a ratio, goes to the
// table ($VIGIL_RELIABILITY_OUT/abuse.md).
func TestAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("minutes of load")
	}
	v := startVigil(t, "")
	now := time.Now().Truncate(time.Second)
	// An hour of 15 s samples of 400 series, for the heavy queries.
	v.writeHour(t, "abuse_load", now)
	v.mustWriteV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: labelsOf("victim_up", "job", "victim"),
		Samples: []prompb.Sample{{Timestamp: now.UnixMilli(), Value: 1}}}}})

	victim := clientFrom("127.0.0.2", true)
	probe := clientFrom("127.0.0.2", false) // a kubelet probe: a new connection each time
	abuseC := clientFrom("127.0.0.1", true)
	queryUp := v.URL + "/api/v1/query?" + url.Values{"query": {"victim_up"}, "time": {strconv.FormatInt(now.Unix(), 10)}}.Encode()
	heavy := v.URL + "/api/v1/query_range?" + url.Values{
		"query": {"sum by (series) (rate(abuse_load[5m])) * on (series) group_left count_over_time(abuse_load[1h])"},
		"start": {strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)}, "end": {strconv.FormatInt(now.Unix(), 10)}, "step": {"15"},
	}.Encode()

	// 20k samples per abusive write, built once (so that the abusers cost
	// this process little CPU): the same bodies again and again.
	var bodies [][]byte
	for b := range 8 {
		var req prompb.WriteRequest
		for s := range 20000 {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labelsOf("abuse_writes", "series", strconv.Itoa(s)),
				Samples: []prompb.Sample{{Timestamp: now.Add(time.Duration(b) * time.Second).UnixMilli(), Value: float64(s)}}})
		}
		bodies = append(bodies, rw1(&req))
	}
	var seq atomic.Int64
	abusiveWrite := func(ctx context.Context) (int, error) {
		hr, _ := http.NewRequest(http.MethodPost, v.URL+"/api/v1/write", bytes.NewReader(bodies[seq.Add(1)%int64(len(bodies))]))
		hr.Header.Set("Content-Type", contentTypeV1)
		hr.Header.Set("Content-Encoding", "snappy")
		return do(ctx, abuseC, hr) // and again at once, ignoring Retry-After
	}

	type scenario struct {
		name   string
		start  func() *abuser
		victim map[string]op
	}
	scenarios := []scenario{
		{"30 looping heavy range queries", func() *abuser {
			return startAbuser(30, func(ctx context.Context) (int, error) {
				hr, _ := http.NewRequest(http.MethodGet, heavy, nil)
				return do(ctx, abuseC, hr)
			})
		}, map[string]op{"instant query": get(victim, queryUp)}},
		{"120 writers of 20k samples, no backoff", func() *abuser { return startAbuser(120, abusiveWrite) },
			map[string]op{"1-sample remote write": writeOp(victim, v.URL)}},
		{"520 half-sent requests", func() *abuser {
			a := &abuser{cancel: func() {}}
			var conns []net.Conn
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}
			for range 520 {
				c, err := d.Dial("tcp", strings.TrimPrefix(v.URL, "http://"))
				if err != nil {
					continue
				}
				_, _ = io.WriteString(c, "POST /api/v1/write HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n")
				conns = append(conns, c)
			}
			a.ok.Store(int64(len(conns)))
			a.cancel = func() {
				for _, c := range conns {
					_ = c.Close()
				}
			}
			return a
		}, map[string]op{"/-/ready on a new connection": get(probe, v.URL+"/-/ready"), "instant query": get(victim, queryUp)}},
	}
	// Each scenario alternates idle and abused rounds, three under make
	// reliability; the table shows the round of the median p99 ratio.
	rounds := 1
	if os.Getenv("VIGIL_RELIABILITY_OUT") != "" {
		rounds = 3
	}
	var rows []abuseRow
	ctx := t.Context()
	const n, gap = 200, 20 * time.Millisecond
	for _, sc := range scenarios {
		byVictim := map[string][]abuseRow{}
		for range rounds {
			// Idle: once what came before (the setup, the last abuse) has
			// settled.
			time.Sleep(3 * time.Second)
			idle := map[string][]time.Duration{}
			for name, o := range sc.victim {
				lat, errs := measure(ctx, o, n, gap)
				require.Empty(t, errs, "%s idle", name)
				idle[name] = lat
			}
			a := sc.start()
			time.Sleep(2 * time.Second) // the abuse in full swing
			for name, o := range sc.victim {
				lat, errs := measure(ctx, o, n, gap)
				byVictim[name] = append(byVictim[name], abuseRow{scenario: sc.name, victim: name,
					idle: p99(idle[name]), idleP50: p50(idle[name]), abused: p99(lat), abusedP50: p50(lat),
					victimFailed: len(errs), victimOps: n, abuserOK: a.ok.Load(), abuserRefused: a.refused.Load()})
			}
			a.stop()
			v.requireUp(t)
		}
		for _, name := range slices.Sorted(maps.Keys(byVictim)) {
			rs := byVictim[name]
			slices.SortFunc(rs, func(a, b abuseRow) int { return cmp.Compare(a.ratio(), b.ratio()) })
			med := rs[len(rs)/2]
			for _, r := range rs {
				med.ratios = append(med.ratios, r.ratio())
				if r.victimFailed > med.victimFailed {
					med.victimFailed = r.victimFailed
				}
			}
			rows = append(rows, med)
		}
	}
	writeTable(t, "abuse.md", abuseTable(rows))
	for _, r := range rows {
		require.Zero(t, r.victimFailed, "%s: the victim's %s failed", r.scenario, r.victim)
	}
}
