package promcompat

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// benchEvalTimes are the instant evaluation times of the latency benchmark:
// a few of evalTimes, spread over the dump.
var benchEvalTimes = []time.Duration{65 * time.Minute, 101 * time.Minute, 206 * time.Minute, 242 * time.Minute}

// latencyReps is how many times every request is timed on each server.
const latencyReps = 10

// benchRequest is one timed request of the battery: a query at one
// evaluation time, or over one range.
type benchRequest struct {
	query  int // index in the battery
	path   string
	params url.Values
}

// batteryRequests lists every query at benchEvalTimes and the range
// queries over every window of rangeSpecs.
func batteryRequests(queries []batteryQuery) []benchRequest {
	var reqs []benchRequest
	for i, q := range queries {
		for _, d := range benchEvalTimes {
			reqs = append(reqs, benchRequest{query: i, path: "/api/v1/query", params: url.Values{"query": {q.expr}, "time": {msParam(evalAt(d))}}})
		}
		if q.mode != "range" {
			continue
		}
		for _, r := range rangeSpecs {
			reqs = append(reqs, benchRequest{query: i, path: "/api/v1/query_range", params: url.Values{
				"query": {q.expr}, "start": {msParam(evalAt(r.start))}, "end": {msParam(evalAt(r.end))},
				"step": {strconv.FormatFloat(r.step.Seconds(), 'f', -1, 64)},
			}})
		}
	}
	return reqs
}

// timeRequest posts one request and returns the time until the whole
// answer was read; an answer that is not a success fails.
func timeRequest(ctx context.Context, client *http.Client, base string, r benchRequest) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+r.path, strings.NewReader(r.params.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"status":"success"`)) {
		return 0, fmt.Errorf("%s %s: %s: %.300s", r.path, r.params.Get("query"), resp.Status, body)
	}
	return took, nil
}

// BenchmarkBatteryLatency compares the query latency of Vigil and
// Prometheus 2.42 over the compatibility battery: the same dump in both
// (promtool backfill, vigil import), every query of testdata/queries.promql
// at four evaluation times and the range queries over both windows of
// rangeSpecs, each request timed latencyReps times on each server. The
// servers alternate request by request (Vigil first in odd repetitions,
// Prometheus first in even ones) after one untimed warm-up pass. The total
// ratio is that of the summed latencies, per repetition (median and range);
// the per-query ratios are those of each query's median latencies.
//
//	go test ./test/promcompat -run '^$' -bench BatteryLatency -benchtime 1x -timeout 30m
func BenchmarkBatteryLatency(b *testing.B) {
	b.ReportAllocs()
	queries, err := parseBattery(batteryText)
	if err != nil {
		b.Fatal(err)
	}
	env := startEnv(b)
	reqs := batteryRequests(queries)
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()
	servers := []string{env.vigilURL, env.promURL}
	// took[s][rep][i] is the latency of request i on server s (0 vigil, 1 prometheus).
	took := [2][][]time.Duration{}
	for b.Loop() {
		for _, base := range servers {
			for _, r := range reqs {
				if _, err := timeRequest(b.Context(), client, base, r); err != nil {
					b.Fatalf("warm-up: %v", err)
				}
			}
		}
		for s := range took {
			took[s] = make([][]time.Duration, latencyReps)
			for rep := range latencyReps {
				took[s][rep] = make([]time.Duration, len(reqs))
			}
		}
		for rep := range latencyReps {
			for i, r := range reqs {
				for k := range 2 {
					s := (k + rep) % 2
					d, err := timeRequest(b.Context(), client, servers[s], r)
					if err != nil {
						b.Fatal(err)
					}
					took[s][rep][i] = d
				}
			}
		}
	}
	sum := func(ds []time.Duration) time.Duration {
		var t time.Duration
		for _, d := range ds {
			t += d
		}
		return t
	}
	// Totals per repetition and their ratio.
	var totalRatios []float64
	var totals [2][]time.Duration
	for rep := range latencyReps {
		v, p := sum(took[0][rep]), sum(took[1][rep])
		totals[0], totals[1] = append(totals[0], v), append(totals[1], p)
		totalRatios = append(totalRatios, float64(v)/float64(p))
	}
	total := medianRange(totalRatios)

	// Per query: the sum over its requests of the median latency.
	type queryLatency struct {
		q           batteryQuery
		vigil, prom time.Duration
		ratio       float64
	}
	per := make([]queryLatency, len(queries))
	for i := range per {
		per[i].q = queries[i]
	}
	for i, r := range reqs {
		var lat [2][]float64
		for s := range 2 {
			for rep := range latencyReps {
				lat[s] = append(lat[s], float64(took[s][rep][i]))
			}
		}
		per[r.query].vigil += time.Duration(medianRange(lat[0]).median)
		per[r.query].prom += time.Duration(medianRange(lat[1]).median)
	}
	perRatios := make([]float64, len(per))
	for i := range per {
		per[i].ratio = float64(per[i].vigil) / float64(per[i].prom)
		perRatios[i] = per[i].ratio
	}
	slices.Sort(perRatios)
	pct := func(p float64) float64 { return perRatios[int(p*float64(len(perRatios)-1)+0.5)] }

	b.ReportMetric(total.median, "vigil/prometheus")
	b.ReportMetric(pct(0.5), "query-median-ratio")
	b.ReportMetric(float64(medianDuration(totals[0]).Microseconds())/1000, "vigil-ms/pass")
	b.ReportMetric(float64(medianDuration(totals[1]).Microseconds())/1000, "prometheus-ms/pass")

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nquery latency over the compatibility battery: %d queries, %d requests per pass (instant at %d times, range over %d windows), %d timed passes per server\n",
		len(queries), len(reqs), len(benchEvalTimes), len(rangeSpecs), latencyReps)
	fmt.Fprintf(&sb, "machine: %d CPUs; the client and both servers share the machine, the same for both\n\n", runtime.NumCPU())
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pass\tvigil total\tprometheus total\tvigil/prometheus\t")
	for rep := range latencyReps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.3f\t\n", rep+1, totals[0][rep].Round(time.Microsecond), totals[1][rep].Round(time.Microsecond), totalRatios[rep])
	}
	tw.Flush()
	fmt.Fprintf(&sb, "\ntotal latency vigil/prometheus: median %.3f (%.3f–%.3f) (target ≤ 1.2: %s)\n", total.median, total.min, total.max, map[bool]string{true: "met", false: "MISSED"}[total.median <= 1.2])
	fmt.Fprintf(&sb, "per-query ratio of median latencies: min %.3f, p10 %.3f, p25 %.3f, median %.3f, p75 %.3f, p90 %.3f, max %.3f\n",
		perRatios[0], pct(0.1), pct(0.25), pct(0.5), pct(0.75), pct(0.9), perRatios[len(perRatios)-1])
	slices.SortFunc(per, func(a, b queryLatency) int {
		return cmp.Compare(b.vigil-b.prom, a.vigil-a.prom)
	})
	fmt.Fprintf(&sb, "\nqueries where Vigil loses the most time (median latency summed over the query's requests):\n")
	tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "line\tvigil\tprometheus\tratio\tquery")
	for _, q := range per[:min(8, len(per))] {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.2f\t%s\n", q.q.line, q.vigil.Round(time.Microsecond), q.prom.Round(time.Microsecond), q.ratio, short(q.q.expr, 90))
	}
	tw.Flush()
	fmt.Print(sb.String())
}

// latencyStats are a median and a range.
type latencyStats struct{ median, min, max float64 }

func medianRange(v []float64) latencyStats {
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return latencyStats{median: m, min: s[0], max: s[len(s)-1]}
}

func medianDuration(ds []time.Duration) time.Duration {
	v := make([]float64, len(ds))
	for i, d := range ds {
		v[i] = float64(d)
	}
	return time.Duration(medianRange(v).median)
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
