package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// plotSteps is about how many points a plot's range query returns.
const plotSteps = 240

// maxLines is the most faulty series a plot draws as lines.
const maxLines = 8

// plotParallel is how many plots of a page are evaluated at once.
const plotParallel = 4

// plotJob is one piece of evidence to plot.
type plotJob struct {
	query  string
	entity map[string]string
	onset  time.Time
	out    *plotView
}

// series is one series of a plot: its name in the legend and its values
// at the plot's steps (NaN: no sample).
type series struct {
	Name   string
	Values []float64
}

// band is the peers' spread at each step: min, lower quartile, median,
// upper quartile and max of the peer series that have a value there.
type band struct {
	Peers                 int
	Min, Q1, Med, Q3, Max []float64
}

// plotData is an evaluated piece of evidence.
type plotData struct {
	Query, PeerQuery string
	From, To, Onset  time.Time
	Step             time.Duration
	Faulty           []series
	// More counts the faulty series beyond maxLines, not drawn.
	More int
	Band *band
	// PeerScope is the namespace the peers were kept to, if any.
	PeerScope string
	// Limit, when set, is a threshold drawn across the plot (an SLO's),
	// labelled LimitLabel.
	Limit      *float64
	LimitLabel string
}

// plotAll evaluates the jobs over w, plotParallel at a time, and renders
// each into its plotView; a query that fails says why in its plot.
func (h *Handler) plotAll(ctx context.Context, jobs []plotJob, w timeRange) {
	h.eachQuery(ctx, len(jobs), func(qctx context.Context, i int) {
		j := jobs[i]
		d, err := h.evaluate(qctx, j, w)
		switch {
		case errors.Is(err, errLoading):
			*j.out = plotView{Query: j.query, Loading: true}
			return
		case err != nil:
			*j.out = plotView{Query: j.query, Err: err.Error()}
			return
		}
		*j.out = drawPlot(d)
	})
}

// eachQuery calls fn for 0..n-1, plotParallel at a time, each under its
// own QueryTimeout, and returns when all have.
func (h *Handler) eachQuery(ctx context.Context, n int, fn func(ctx context.Context, i int)) {
	sem := make(chan struct{}, plotParallel)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			qctx, cancel := context.WithTimeout(ctx, h.opts.QueryTimeout)
			defer cancel()
			fn(qctx, i)
		})
	}
	wg.Wait()
}

// evaluate runs the evidence's query over w for the faulty series, and the
// same query without the entity's matchers for its peers.
func (h *Handler) evaluate(ctx context.Context, j plotJob, w timeRange) (plotData, error) {
	step := max(time.Second, (w.To.Sub(w.From) / plotSteps).Truncate(time.Second))
	d := plotData{Query: j.query, From: w.From, To: w.To, Onset: j.onset, Step: step}
	faulty, err := h.rangeQuery(ctx, j.query, d)
	if err != nil {
		return d, fmt.Errorf("evaluate %s: %w", j.query, err)
	}
	peerQuery, removed, scope := peerQueryOf(j.query, j.entity, faulty)
	names := seriesNames(faulty, removed)
	own := map[uint64]bool{}
	for n, s := range faulty {
		own[s.Metric.Hash()] = true
		d.Faulty = append(d.Faulty, series{Name: names[n], Values: s.values})
	}
	slices.SortStableFunc(d.Faulty, func(a, b series) int { return naturalCompare(a.Name, b.Name) })
	d.Faulty = d.Faulty[:min(maxLines, len(d.Faulty))]
	d.More = max(0, len(faulty)-maxLines)
	if peerQuery == "" {
		return d, nil
	}
	peers, err := h.rangeQuery(ctx, peerQuery, d)
	if err != nil {
		// The proof is the faulty series; a band that cannot be had is
		// said in the legend, not a failed plot.
		h.opts.Logger.Debug("peer query", "query", peerQuery, "err", err)
		return d, nil
	}
	d.PeerQuery, d.PeerScope = peerQuery, scope
	var others [][]float64
	for _, s := range peers {
		if !own[s.Metric.Hash()] {
			others = append(others, s.values)
		}
	}
	if len(others) > 0 {
		d.Band = peerBand(others, steps(d))
	}
	return d, nil
}

// evaluated is one series of a range query, on the plot's steps.
type evaluated struct {
	Metric labels.Labels
	values []float64
}

func steps(d plotData) int { return int(d.To.Sub(d.From)/d.Step) + 1 }

// rangeQuery evaluates qs over d's window and lays each series on the
// plot's steps.
func (h *Handler) rangeQuery(ctx context.Context, qs string, d plotData) ([]evaluated, error) {
	key := "range\x00" + qs + "\x00" + strconv.FormatInt(d.From.UnixMilli(), 10) + "\x00" +
		strconv.FormatInt(d.To.UnixMilli(), 10) + "\x00" + strconv.FormatInt(d.Step.Milliseconds(), 10)
	v, err := h.loads.do(ctx, key, h.opts.QueryTimeout, func(ctx context.Context) (any, error) {
		return h.evalRange(ctx, qs, d)
	})
	if err != nil {
		return nil, err
	}
	// The kept answer is shared: each page gets its own values.
	out := slices.Clone(v.([]evaluated))
	for i := range out {
		out[i].values = slices.Clone(out[i].values)
	}
	return out, nil
}

// evalRange evaluates qs over d's window and steps.
func (h *Handler) evalRange(ctx context.Context, qs string, d plotData) ([]evaluated, error) {
	q, err := h.opts.Store.Engine().NewRangeQuery(ctx, h.opts.Store, nil, qs, d.From, d.To, d.Step)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		if errors.Is(res.Err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("the query ran past %s", h.opts.QueryTimeout)
		}
		return nil, res.Err
	}
	m, ok := res.Value.(promql.Matrix)
	if !ok {
		return nil, fmt.Errorf("a range query returned a %s", res.Value.Type())
	}
	n, start := steps(d), d.From.UnixMilli()
	out := make([]evaluated, 0, len(m))
	for _, s := range m {
		vals := make([]float64, n)
		for k := range vals {
			vals[k] = math.NaN()
		}
		for _, p := range s.Floats {
			if k := int((p.T - start) / d.Step.Milliseconds()); k >= 0 && k < n {
				vals[k] = p.F
			}
		}
		out = append(out, evaluated{Metric: s.Metric.Copy(), values: vals})
	}
	return out, nil
}

// peerQueryOf returns query without the equality matchers that name the
// entity (a matcher whose value is one of the entity's values: node
// gpu-node-06 is Hostname="gpu-node-06" in dcgm-exporter's vocabulary),
// and the matchers it removed. Where the faulty series share a namespace
// the peers are kept to it, so a training job's GPUs are compared with the
// job's other GPUs rather than an idle notebook's. An empty query: there
// is nothing to remove, or the query does not parse.
func peerQueryOf(query string, entity map[string]string, faulty []evaluated) (string, []labels.Label, string) {
	values := map[string]bool{}
	for _, v := range entity {
		values[v] = true
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		return "", nil, ""
	}
	scope := sharedValue(faulty, "namespace")
	var removed []labels.Label
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		kept := vs.LabelMatchers[:0:0]
		dropped, scoped := false, false
		for _, m := range vs.LabelMatchers {
			if m.Type == labels.MatchEqual && m.Name != model.MetricNameLabel && values[m.Value] {
				removed = append(removed, labels.Label{Name: m.Name, Value: m.Value})
				dropped = true
				continue
			}
			scoped = scoped || m.Name == "namespace"
			kept = append(kept, m)
		}
		if dropped && scope != "" && !scoped {
			kept = append(kept, labels.MustNewMatcher(labels.MatchEqual, "namespace", scope))
		}
		vs.LabelMatchers = kept
		return nil
	})
	if len(removed) == 0 {
		return "", nil, ""
	}
	return expr.String(), dedupLabels(removed), scope
}

func sharedValue(ss []evaluated, name string) string {
	v := ""
	for n, s := range ss {
		got := s.Metric.Get(name)
		if got == "" || (n > 0 && got != v) {
			return ""
		}
		v = got
	}
	return v
}

func dedupLabels(ls []labels.Label) []labels.Label {
	slices.SortFunc(ls, func(a, b labels.Label) int { return strings.Compare(a.Name+"\xff"+a.Value, b.Name+"\xff"+b.Value) })
	return slices.Compact(ls)
}

// legendKeys are the labels that tell series apart in a legend, in the
// order they are preferred.
var legendKeys = []string{"node", "Hostname", "instance", "gpu", "pod", "model", "model_name", "service", "service_name", "route", "tenant", "xid", "le"}

// seriesNames names each series for the legend: the entity's matchers
// removed from the query, then up to two labels whose values tell the
// series apart (those of legendKeys first: gpu rather than UUID).
func seriesNames(ss []evaluated, removed []labels.Label) []string {
	varying := map[string]bool{}
	for _, s := range ss {
		s.Metric.Range(func(l labels.Label) {
			if l.Name != model.MetricNameLabel && ss[0].Metric.Get(l.Name) != l.Value {
				varying[l.Name] = true
			}
		})
	}
	var keys []string
	for _, k := range legendKeys {
		if varying[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 { // no label we know: the first that varies
		var rest []string
		for k := range varying {
			rest = append(rest, k)
		}
		sort.Strings(rest)
		keys = rest
	}
	keys = keys[:min(2, len(keys))]
	out := make([]string, len(ss))
	for n, s := range ss {
		var parts []string
		for _, l := range removed {
			if !slices.Contains(keys, l.Name) {
				parts = append(parts, l.Name+"="+l.Value)
			}
		}
		for _, k := range keys {
			if v := s.Metric.Get(k); v != "" {
				parts = append(parts, k+"="+v)
			}
		}
		if len(parts) == 0 {
			parts = append(parts, s.Metric.Get(model.MetricNameLabel))
		}
		out[n] = strings.Join(parts, " ")
	}
	return out
}

// peerBand returns the spread of the peers' values at each of n steps.
func peerBand(peers [][]float64, n int) *band {
	b := &band{Peers: len(peers)}
	for _, s := range []*[]float64{&b.Min, &b.Q1, &b.Med, &b.Q3, &b.Max} {
		*s = make([]float64, n)
	}
	vals := make([]float64, 0, len(peers))
	for k := range n {
		vals = vals[:0]
		for _, p := range peers {
			if !math.IsNaN(p[k]) {
				vals = append(vals, p[k])
			}
		}
		if len(vals) == 0 {
			b.Min[k], b.Q1[k], b.Med[k], b.Q3[k], b.Max[k] = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
			continue
		}
		sort.Float64s(vals)
		b.Min[k], b.Max[k] = vals[0], vals[len(vals)-1]
		b.Q1[k], b.Med[k], b.Q3[k] = quantile(vals, 0.25), quantile(vals, 0.5), quantile(vals, 0.75)
	}
	return b
}

// quantile interpolates the q-quantile of sorted vals, as PromQL's
// quantile does.
func quantile(vals []float64, q float64) float64 {
	rank := q * float64(len(vals)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(vals)-1)
	return vals[lo] + (vals[hi]-vals[lo])*(rank-float64(lo))
}

// naturalCompare orders names with their numbers by value: gpu=2 before
// gpu=10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		na, ra := leadingNumber(a)
		nb, rb := leadingNumber(b)
		if na >= 0 && nb >= 0 {
			if na != nb {
				return cmp.Compare(na, nb)
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// leadingNumber returns the number s starts with and the rest, or -1.
func leadingNumber(s string) (int, string) {
	n := 0
	for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 {
		return -1, s
	}
	v, _ := strconv.Atoi(s[:n])
	return v, s[n:]
}
