package petshop

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/openmetrics"
)

// step is the data set's aggregation interval.
const step = 5 * time.Minute

// defaultHistory is how much of the normal period goes before an issue.
// Twelve hours: the generic layer's baseline is the robust level and
// spread of every step before the onset, and half a day of the normal
// period's traffic swings gives it a spread the issue day's level can be
// judged against (the traversal baseline trains on the whole normal
// period, about a day and a half); much more adds daily swings in which
// the common onset may find an earlier change than the issue, and makes
// each issue's file larger (about 150 steps of some 600 series).
const defaultHistory = 12 * time.Hour

// convertOptions tune convertIssue.
type convertOptions struct {
	// history is how much of the normal period's end goes before the
	// issue window (defaultHistory when 0).
	history time.Duration
	// noGraph leaves the service-graph series out (to see what the walk
	// adds).
	noGraph bool
	// noFailed leaves petshop_failed_requests out (availability only as
	// the ratio).
	noFailed bool
}

// converted is what convertIssue wrote: the evaluation time and the
// window that covers the history and the issue window.
type converted struct {
	at     int64 // Unix seconds: the issue window's last step + 1 step
	window time.Duration
	steps  int
	series int
}

// timeline is the history (the normal period's tail, shifted in time to
// end one step before the issue window) followed by the issue window.
type timeline struct {
	ts             []int64
	normal, issue  *frame
	nNormal        int // rows of ts from the normal period
	normalFirstRow int // the normal frame's first row used
}

// newTimeline lines up the normal period's last history with the issue.
func newTimeline(normal, is *frame, history time.Duration) (*timeline, error) {
	if len(is.ts) == 0 {
		return nil, fmt.Errorf("%s: the issue window has no row", is.path)
	}
	if len(normal.ts) == 0 {
		return &timeline{ts: slices.Clone(is.ts), normal: normal, issue: is}, nil // no history
	}
	sec := int64(step / time.Second)
	last := normal.ts[len(normal.ts)-1]
	shift := is.ts[0] - sec - last
	first := slices.IndexFunc(normal.ts, func(t int64) bool { return t > last-int64(history/time.Second) })
	tl := &timeline{normal: normal, issue: is, normalFirstRow: first}
	for _, t := range normal.ts[first:] {
		tl.ts = append(tl.ts, t+shift)
	}
	tl.nNormal = len(tl.ts)
	tl.ts = append(tl.ts, is.ts...)
	return tl, nil
}

// values is key's series over the timeline, NaN where a part lacks it.
func (tl *timeline) values(k seriesKey) []float64 {
	out := make([]float64, 0, len(tl.ts))
	nv := tl.normal.get(k)
	for i := range tl.nNormal {
		if nv == nil {
			out = append(out, math.NaN())
			continue
		}
		out = append(out, nv[tl.normalFirstRow+i])
	}
	iv := tl.issue.get(k)
	for i := range tl.issue.ts {
		if iv == nil {
			out = append(out, math.NaN())
			continue
		}
		out = append(out, iv[i])
	}
	return out
}

// keys are the columns of either part, in the issue's order then the
// normal period's.
func (tl *timeline) keys() []seriesKey {
	out := slices.Clone(tl.issue.cols)
	for _, k := range tl.normal.cols {
		if _, ok := tl.issue.idx[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// omWriter writes OpenMetrics families.
type omWriter struct {
	w      *bufio.Writer
	buf    []byte
	ts     []int64
	series int
}

// family starts a metric family.
func (o *omWriter) family(name, typ, help string) {
	fmt.Fprintf(o.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// put writes one series' samples, skipping NaN (no sample).
func (o *omWriter) put(name string, lbls [][2]string, vals []float64) {
	var head []byte
	head = append(head, name...)
	head = append(head, '{')
	for i, l := range lbls {
		if i > 0 {
			head = append(head, ',')
		}
		head = append(head, l[0]...)
		head = append(head, `="`...)
		head = append(head, openmetrics.EscapeLabelValue(l[1])...)
		head = append(head, '"')
	}
	head = append(head, "} "...)
	wrote := false
	for i, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		wrote = true
		o.buf = append(o.buf[:0], head...)
		o.buf = openmetrics.AppendValue(o.buf, v)
		o.buf = append(o.buf, ' ')
		o.buf = openmetrics.AppendSeconds(o.buf, o.ts[i]*1000)
		o.buf = append(o.buf, '\n')
		_, _ = o.w.Write(o.buf) // a bufio.Writer keeps its first error for Flush
	}
	if wrote {
		o.series++
	}
}

// convertIssue writes an issue of sc, with the normal period's tail
// before it, as OpenMetrics text that `vigil diagnose --input` reads:
// per node, gauges with the entity label service (petshop_latency_seconds
// by statistic, petshop_requests per step, petshop_availability_ratio),
// and, unless o.noGraph, the call graph as the OpenTelemetry servicegraph
// connector's counters.
func convertIssue(w io.Writer, sc *scenario, is *issue, o convertOptions) (converted, error) {
	if o.history <= 0 {
		o.history = defaultHistory
	}
	tl, err := newTimeline(sc.normal, is.metrics, o.history)
	if err != nil {
		return converted{}, fmt.Errorf("convert %s/%s: %w", is.split, is.name, err)
	}
	ow := &omWriter{w: bufio.NewWriterSize(w, 1<<20), ts: tl.ts}
	writeNodeSeries(ow, tl)
	if !o.noFailed {
		writeFailed(ow, tl)
	}
	if !o.noGraph {
		writeGraph(ow, tl, sc.graph)
	}
	_, _ = ow.w.WriteString("# EOF\n") // Flush reports an error
	if err := ow.w.Flush(); err != nil {
		return converted{}, fmt.Errorf("convert %s/%s: write: %w", is.split, is.name, err)
	}
	sec := int64(step / time.Second)
	at := tl.ts[len(tl.ts)-1] + sec
	return converted{at: at, window: time.Duration(at-tl.ts[0]) * time.Second, steps: len(tl.ts), series: ow.series}, nil
}

// metricName is the OpenMetrics name of a PetShop metric and statistic,
// and whether the statistic is a label of it.
func metricName(metric, stat string) (string, bool) {
	switch {
	case metric == "latency":
		return "petshop_latency_seconds", true
	case metric == "requests" && stat == "Sum":
		return "petshop_requests", false
	case metric == "availability" && stat == "Average":
		return "petshop_availability_ratio", false
	}
	var b strings.Builder
	b.WriteString("petshop_")
	for _, r := range metric {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String(), true
}

// writeNodeSeries writes every column of the timeline as a gauge with the
// service label.
func writeNodeSeries(ow *omWriter, tl *timeline) {
	byName := map[string][]seriesKey{}
	var names []string
	for _, k := range tl.keys() {
		n, _ := metricName(k.metric, k.stat)
		if _, ok := byName[n]; !ok {
			names = append(names, n)
		}
		byName[n] = append(byName[n], k)
	}
	for _, n := range names {
		ow.family(n, "gauge", "PetShop "+byName[n][0].metric+" of a node, per 5-minute step.")
		for _, k := range byName[n] {
			vals := tl.values(k)
			lbls := [][2]string{{"service", k.node}}
			if _, withStat := metricName(k.metric, k.stat); withStat {
				lbls = append(lbls, [2]string{"statistic", k.stat})
			}
			if k.metric == "availability" {
				for i := range vals {
					vals[i] /= 100
				}
			}
			ow.put(n, lbls, vals)
		}
	}
}

// writeFailed writes, per node with requests and availability, the
// failed requests per step: requests × (1 − availability). The ratio alone
// hides a failure from the generic layer where the node never failed
// before: a series that did not move gets a spread of 1 in its own unit
// (internal/diagnose genericBaseline), and a ratio that sat at 1 and fell
// to 0.7 moves 0.3 of it; counted in failed requests, the same drop is as
// many spreads as requests failed.
func writeFailed(ow *omWriter, tl *timeline) {
	var nodes []string
	for _, k := range tl.keys() {
		if k.metric == "requests" && k.stat == "Sum" {
			nodes = append(nodes, k.node)
		}
	}
	ow.family("petshop_failed_requests", "gauge", "PetShop requests of a node that failed, per 5-minute step: requests × (1 − availability).")
	for _, n := range nodes {
		reqs := tl.values(seriesKey{n, "requests", "Sum"})
		avail := tl.values(seriesKey{n, "availability", "Average"})
		vals := make([]float64, len(reqs))
		for i := range reqs {
			vals[i] = reqs[i] * min(1, max(0, 1-avail[i]/100)) // NaN where either is missing
		}
		ow.put("petshop_failed_requests", [][2]string{{"service", n}}, vals)
	}
}

// edgeSeries are the cumulative servicegraph counters of one edge.
type edgeSeries struct {
	client, server           string
	reqs, failed, sum, count []float64
}

// graphEdges turns the call graph into servicegraph counters: each edge
// R → C (R calls C) counts, per step, C's requests (1 where C has no
// requests value), (1 − availability) of them as failed, and C's mean
// latency times its requests as server seconds (nothing where C has no
// latency).
func graphEdges(tl *timeline, g *callGraph) []edgeSeries {
	var out []edgeSeries
	for _, client := range g.nodes {
		for _, server := range g.calls[client] {
			if server == client {
				continue
			}
			reqs := tl.values(seriesKey{server, "requests", "Sum"})
			avail := tl.values(seriesKey{server, "availability", "Average"})
			lat := tl.values(seriesKey{server, "latency", "Average"})
			e := edgeSeries{client: client, server: server}
			var cr, cf, cs, cc float64
			for i := range tl.ts {
				n := reqs[i]
				if math.IsNaN(n) || n < 0 {
					n = 1
				}
				cr += n
				if a := avail[i]; !math.IsNaN(a) {
					cf += n * min(1, max(0, 1-a/100))
				}
				if l := lat[i]; !math.IsNaN(l) && l >= 0 && n > 0 {
					cs += l * n
					cc += n
				}
				e.reqs = append(e.reqs, cr)
				e.failed = append(e.failed, cf)
				e.sum = append(e.sum, cs)
				e.count = append(e.count, cc)
			}
			out = append(out, e)
		}
	}
	return out
}

// writeGraph writes the call graph as servicegraph series.
func writeGraph(ow *omWriter, tl *timeline, g *callGraph) {
	edges := graphEdges(tl, g)
	lbl := func(e edgeSeries, extra ...[2]string) [][2]string {
		return append([][2]string{{"client", e.client}, {"server", e.server}}, extra...)
	}
	ow.family("traces_service_graph_request", "counter", "Requests from client to server (PetShop: the server's requests).")
	for _, e := range edges {
		ow.put("traces_service_graph_request_total", lbl(e), e.reqs)
	}
	ow.family("traces_service_graph_request_failed", "counter", "Failed requests from client to server (PetShop: (1 − availability) × requests).")
	for _, e := range edges {
		ow.put("traces_service_graph_request_failed_total", lbl(e), e.failed)
	}
	ow.family("traces_service_graph_request_server_seconds", "histogram", "Seconds the server spent (PetShop: latency Average × requests).")
	for _, e := range edges {
		ow.put("traces_service_graph_request_server_seconds_bucket", lbl(e, [2]string{"le", "+Inf"}), e.count)
		ow.put("traces_service_graph_request_server_seconds_sum", lbl(e), e.sum)
		ow.put("traces_service_graph_request_server_seconds_count", lbl(e), e.count)
	}
}
