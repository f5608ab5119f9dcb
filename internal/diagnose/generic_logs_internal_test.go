package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// TestBinomialUpperTail against values worked by hand: all n in the
// after-share q is q^n; the tail at the mean or below is no rise.
func TestBinomialUpperTail(t *testing.T) {
	require.InDelta(t, math.Pow(2.0/3, 20), binomialUpperTail(20, 20, 2.0/3), 1e-12)
	require.InDelta(t, 0.5, binomialUpperTail(1, 1, 0.5), 1e-12)
	// P(X ≥ 9 | 10, 0.5) = (10 + 1)/1024.
	require.InDelta(t, 11.0/1024, binomialUpperTail(9, 10, 0.5), 1e-12)
	require.Equal(t, 1.0, binomialUpperTail(5, 10, 0.5), "at the mean: no rise")
	require.Equal(t, 1.0, binomialUpperTail(2, 10, 0.5))
	// Large counts stay finite and tiny.
	p := binomialUpperTail(650, 1000, 0.5)
	require.Greater(t, p, 0.0)
	require.Less(t, p, 1e-20)
	require.Equal(t, minP, binomialUpperTail(5000, 6000, 0.5), "below float64's range: the floor")
	// The deviate of a one-sided p: 0.00135 is three deviations.
	require.InDelta(t, 3, upperDeviate(0.0013498980316301), 1e-6)
	// Past where 1-2p rounds: 1e-15 is 7.94 deviations, 1e-300 about 37.
	require.InDelta(t, 7.941, upperDeviate(1e-15), 1e-3)
	require.InDelta(t, 37.0, upperDeviate(1e-300), 0.1)
	require.False(t, math.IsInf(upperDeviate(minP), 0))
}

// TestThinQuantiles: a summary quantile's readings with fewer than
// 1/(1-q) requests behind them are blanked, for the steps a sample is
// held for; a quantile with enough requests, or without a _count, is kept.
func TestThinQuantiles(t *testing.T) {
	nan := math.NaN()
	lset := func(name string, pairs ...string) labels.Labels {
		return labels.FromStrings(append([]string{"__name__", name, "service", "cart", "pod", "cart-0"}, pairs...)...)
	}
	// A sample a minute at a 15 s step: each value held four steps. The
	// count rises by 40 a minute, then by 4.
	p99 := []float64{0.01, 0.01, 0.01, 0.01, 0.02, 0.02, 0.02, 0.02, 9, 9, 9, 9}
	p50 := slices.Clone(p99)
	count := []float64{100, 100, 100, 100, 140, 140, 140, 140, 144, 144, 144, 144}
	bare := slices.Clone(p99)
	raw := []rawSeries{
		{lset: lset("rpc_seconds", "quantile", "0.99"), v: p99},
		{lset: lset("rpc_seconds", "quantile", "0.5"), v: p50},
		{lset: lset("rpc_seconds_count"), v: count},
		{lset: lset("other_seconds", "quantile", "0.99"), v: bare},
	}
	got := map[string][]float64{}
	for _, s := range genericSeriesOf(raw, []string{"service"}) {
		got[s.name] = s.v
	}
	requireSeries := func(name string, want []float64) {
		t.Helper()
		require.Len(t, got[name], len(want), name)
		for i := range want {
			if math.IsNaN(want[i]) {
				require.True(t, math.IsNaN(got[name][i]), "%s[%d] = %v, want blank", name, i, got[name][i])
			} else {
				require.Equal(t, want[i], got[name][i], "%s[%d]", name, i)
			}
		}
	}
	// The first minute has no increase to judge by; the second minute's
	// 40 requests hold 0.4 above a p99 (blank) and 20 above the median;
	// the third's 4 requests blank the p99 and keep the median.
	requireSeries(`rpc_seconds{quantile="0.99"}`, []float64{0.01, 0.01, 0.01, 0.01, nan, nan, nan, nan, nan, nan, nan, nan})
	requireSeries(`rpc_seconds{quantile="0.5"}`, []float64{0.01, 0.01, 0.01, 0.01, 0.02, 0.02, 0.02, 0.02, 9, 9, 9, 9})
	requireSeries(`other_seconds{quantile="0.99"}`, bare)
}

// TestThinQuantilesNoRequests: a summary whose _count is still zero has
// observed no request, whatever the step: its quantiles are of nothing
// (a client library reports NaN there) and are blanked, also when the
// count never moves in the window (a service that serves nothing but
// reports a latency, 14 s one minute and 4 ms the next). Half-size: a
// count that starts at zero and then rises keeps the readings from its
// first request on, judged by their rise. Decoy: a count that holds at a
// non-zero value is a sample held over the steps, not no requests, and
// keeps its readings.
func TestThinQuantilesNoRequests(t *testing.T) {
	nan := math.NaN()
	f := func(count, q, want []float64) {
		t.Helper()
		lset := func(name string, pairs ...string) labels.Labels {
			return labels.FromStrings(append([]string{"__name__", name, "service", "consign"}, pairs...)...)
		}
		raw := []rawSeries{{lset: lset("lat_seconds", "quantile", "0.5"), v: slices.Clone(q)}, {lset: lset("lat_seconds_count"), v: count}}
		for _, s := range genericSeriesOf(raw, []string{"service"}) {
			if s.name != `lat_seconds{quantile="0.5"}` {
				continue
			}
			for i := range want {
				if math.IsNaN(want[i]) {
					require.True(t, math.IsNaN(s.v[i]), "[%d] = %v, want blank", i, s.v[i])
				} else {
					require.Equal(t, want[i], s.v[i], "[%d]", i)
				}
			}
			return
		}
		t.Fatal("no quantile series")
	}
	q := []float64{14, 14, 0.004, 0.004, 0.005, 0.005}
	f([]float64{0, 0, 0, 0, 0, 0}, q, []float64{nan, nan, nan, nan, nan, nan})
	f([]float64{0, 0, 0, 0, 10, 10}, q, []float64{nan, nan, nan, nan, 0.005, 0.005})
	f([]float64{50, 50, 50, 50, 50, 50}, q, q)
}

// TestSharedSeries: a node's column that two services report alike ranks
// both alike, and between them each one's own series decides; a series
// that only moves like another's is not shared.
func TestSharedSeries(t *testing.T) {
	flat := func(level, after float64) []float64 {
		v := make([]float64, 20)
		for i := range v {
			v[i] = level + 0.01*float64(i%3)
			if i >= 12 {
				v[i] = after + 0.01*float64(i%3)
			}
		}
		return v
	}
	node := flat(10, 40)
	series := []genericSeries{
		{entity: "alpha", name: "node_cpu", v: slices.Clone(node)},
		{entity: "beta", name: "node_cpu", v: slices.Clone(node)},
		{entity: "alpha", name: "cpu", v: flat(1, 1)},
		{entity: "beta", name: "cpu", v: flat(1, 1.5)},
		{entity: "gamma", name: "cpu", v: flat(1, 1.2)},
		{entity: "gamma", name: "node_cpu", v: flat(10, 10.5)},
	}
	markShared(series)
	require.True(t, series[0].shared)
	require.True(t, series[1].shared)
	require.False(t, series[4].shared)
	require.False(t, series[5].shared, "the same name, not the same readings")
	scores := scoreEntities(series, 12)
	require.Equal(t, []string{"beta", "alpha", "gamma"}, []string{scores[0].entity, scores[1].entity, scores[2].entity})
	require.Equal(t, scores[0].z, scores[1].z, "the node's evidence ranks both alike")
	require.Greater(t, scores[0].own, scores[1].own)
}

// TestHistoryBound: the largest deviate n readings before a change allow,
// from the chance that two readings lie beyond all n on either side.
func TestHistoryBound(t *testing.T) {
	require.InDelta(t, upperDeviate(4.0/30), historyBound(4), 1e-12)
	require.InDelta(t, 1.11, historyBound(4), 0.01)
	require.InDelta(t, 3.36, historyBound(100), 0.01)
	require.Zero(t, historyBound(1), "two readings before: no evidence (p 0.5)")
	for n := 2; n < 500; n++ {
		require.Greater(t, historyBound(n+1), historyBound(n))
	}
}

// TestScoreEntitiesHistory: a larger jump over three readings ranks below
// a smaller one over twenty; the spreads still order changes of the same
// history.
func TestScoreEntitiesHistory(t *testing.T) {
	series := func(pre int, jump float64) []float64 {
		v := make([]float64, 30)
		for i := range v {
			switch {
			case i < 20-pre:
				v[i] = math.NaN()
			case i < 20:
				v[i] = 1 + 0.01*float64(i%3)
			default:
				v[i] = jump
			}
		}
		return v
	}
	scores := scoreEntities([]genericSeries{
		{entity: "sparse", name: "latency", v: series(3, 500)},
		{entity: "steady", name: "latency", v: series(20, 5)},
		{entity: "steadier", name: "latency", v: series(20, 9)},
	}, 20)
	require.Equal(t, []string{"steadier", "steady", "sparse"}, []string{scores[0].entity, scores[1].entity, scores[2].entity})
	require.Greater(t, scores[2].z, scores[0].z, "the sparse one moved most in spreads")
}

// TestRankTies: generic causes of equal confidence keep the generic
// layer's order, not their names'.
func TestRankTies(t *testing.T) {
	var cands []*candidate
	for i, name := range []string{"zeta", "alpha", "mid"} {
		cands = append(cands, &candidate{kind: KindMetricAnomaly, ent: Entity{"service": name}, strength: 0.99, generic: true, order: i + 1})
	}
	rep := &Report{}
	rank(rep, cands)
	require.Len(t, rep.Causes, 3)
	require.Equal(t, []string{"zeta", "alpha", "mid"}, []string{rep.Causes[0].Entity["service"], rep.Causes[1].Entity["service"], rep.Causes[2].Entity["service"]})
}

// TestDispersion: the sums give Pearson's χ² over its degrees of freedom,
// as summing the bins does; steady counts are Poisson (1), a burst is not.
func TestDispersion(t *testing.T) {
	bins := []float64{0, 1, 0, 40, 0, 2, 3, 1, 2, 2}
	k := 4
	var s0, s1, q0, q1 float64
	for i, x := range bins {
		if i < k {
			s0, q0 = s0+x, q0+x*x
		} else {
			s1, q1 = s1+x, q1+x*x
		}
	}
	mu0, mu1 := s0/float64(k), s1/float64(len(bins)-k)
	chi := 0.0
	for i, x := range bins {
		mu := mu1
		if i < k {
			mu = mu0
		}
		chi += (x - mu) * (x - mu) / mu
	}
	require.InDelta(t, chi/float64(len(bins)-2), dispersion(len(bins), float64(k), float64(len(bins)-k), s0, s1, q0, q1), 1e-9)
	require.Greater(t, dispersion(len(bins), float64(k), float64(len(bins)-k), s0, s1, q0, q1), 5.0, "a burst")
	require.Equal(t, 1.0, dispersion(6, 3, 3, 6, 6, 12, 12), "two a step throughout: as Poisson")
}

// TestFisherLowerTail against tables worked by hand: with b's 5 records
// and 21 of 30 records after the split, none of b's after is
// C(25,21)/C(30,21) (= 12650/14307150); a table in its margins' ratio is
// no fall.
func TestFisherLowerTail(t *testing.T) {
	require.InDelta(t, 12650.0/14307150, fisherLowerTail(0, 21, 5, 4), 1e-12)
	// P(X ≤ 1): add 5·C(25,20)/C(30,21) = 5·53130/14307150.
	require.InDelta(t, (12650.0+5*53130)/14307150, fisherLowerTail(1, 20, 4, 5), 1e-12)
	require.Greater(t, fisherLowerTail(10, 10, 10, 10), 0.5, "at the margins' ratio: no fall")
	// P(X ≤ 59) for 59 of b's and 119 of the partner's after, 240 of
	// each before (computed in exact rationals: 7.246974534e-05).
	require.InDelta(t, 7.246974534e-05, fisherLowerTail(59, 119, 240, 240), 1e-12)
	p := fisherLowerTail(0, 900, 900, 900)
	require.GreaterOrEqual(t, p, minP)
	require.Less(t, p, 1e-100)
}

// breakOf is logBreak at every split b's rate allows, its p-value
// uncorrected for them (each split's cost 1).
func breakOf(b, a templateBins) (logTemplateCounts, float64, bool) {
	var sts []stretch
	for k := 1; k < len(b.bins); k++ {
		sts = append(sts, stretch{k: k, e: len(b.bins), cost: 1})
	}
	rates, _ := rateFalls(b, b.binSums(), sts, 1)
	return logBreak(b, b.binSums(), a, 0, sts, rates, 1)
}

// TestStretches: every split, then the stretches that went back, of
// dyadic lengths with a step left after them; the costs are a
// weighted Bonferroni correction (their reciprocals sum to 1, half to
// the splits), and with no room for a stretch the splits take it all.
func TestStretches(t *testing.T) {
	for _, n := range []int{2, 3, 4, 12, 40, 120} {
		sts := stretches(n)
		sum, splits := 0.0, 0.0
		lengths := map[int]bool{}
		for _, st := range sts {
			require.GreaterOrEqual(t, st.k, 1, "n %d: a before", n)
			require.LessOrEqual(t, st.e, n)
			require.Greater(t, st.e, st.k)
			sum += 1 / st.cost
			if st.closed(n) {
				lengths[st.e-st.k] = true
			} else {
				splits += 1 / st.cost
			}
		}
		require.InDelta(t, 1, sum, 1e-9, "n %d", n)
		if len(lengths) == 0 {
			require.InDelta(t, 1, splits, 1e-9, "n %d: the splits alone", n)
		} else {
			require.InDelta(t, 0.5, splits, 1e-9, "n %d", n)
		}
		if n == 40 {
			require.Equal(t, map[int]bool{2: true, 4: true, 8: true, 16: true, 32: true}, lengths)
		}
	}
	require.Len(t, stretches(3), 2, "two splits, no stretch with a step after it")
}

// TestLogBreakWentBackInternal: a line that stopped for a stretch and
// came back, next to its partner that went on, breaks in a stretch that
// ended (end set), surer than any split finds it; a line that only fell
// (a change that lasted) is still found at a split.
func TestLogBreakWentBackInternal(t *testing.T) {
	mk := func(bins ...float64) templateBins {
		tb := templateBins{bins: bins}
		for _, x := range bins {
			tb.total += x
		}
		return tb
	}
	partner := mk(6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6)
	back := mk(6, 6, 6, 6, 6, 6, 0, 0, 0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6, 6)
	sts := stretches(len(back.bins))
	rates, ok := rateFalls(back, back.binSums(), sts, 1)
	require.True(t, ok)
	c, p, ok := logBreak(back, back.binSums(), partner, 0, sts, rates, 1)
	require.True(t, ok)
	require.Equal(t, 6, c.at)
	require.Equal(t, 14, c.end, "the stretch that went back")
	require.Equal(t, []float64{72, 0, 72, 48}, []float64{c.before, c.after, c.partnerBefore, c.partnerAfter})
	_, pSplit, _ := breakOf(back, partner)
	require.Less(t, p, pSplit, "surer than at any split, though it pays for more tries")
	lasted := mk(6, 6, 6, 6, 6, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	rates, ok = rateFalls(lasted, lasted.binSums(), sts, 1)
	require.True(t, ok)
	c, _, ok = logBreak(lasted, lasted.binSums(), partner, 0, sts, rates, 1)
	require.True(t, ok)
	require.Equal(t, 6, c.at)
	require.Zero(t, c.end, "it lasted to the end: a split")
}

// TestShareDispersion: the prefix sums give what the sum over the steps
// gives.
func TestShareDispersion(t *testing.T) {
	b := []float64{2, 14, 4, 12, 0, 16, 4, 4, 2, 6, 6, 2}
	a := []float64{14, 2, 12, 4, 16, 0, 12, 12, 14, 10, 10, 14}
	sh := newShares(b, a)
	for k := 1; k < len(b); k++ {
		r0, r1 := 0.4, 0.2
		chi, used := 0.0, 0
		for i := range b {
			m := a[i] + b[i]
			if m == 0 {
				continue
			}
			used++
			r := r0
			if i >= k {
				r = r1
			}
			d := b[i] - m*r
			chi += d * d / (m * r * (1 - r))
		}
		require.InDelta(t, math.Max(1, chi/float64(used-2)), sh.dispersion(stretch{k: k, e: len(b)}, side{0, len(b)}, r0, r1), 1e-9, "split %d", k)
	}
	require.Equal(t, 1.0, newShares([]float64{1, 1}, []float64{1, 1}).dispersion(stretch{k: 1, e: 2}, side{0, 2}, 0.5, 0.5), "two steps: no dispersion to estimate")
}

// TestLogBreakDispersion: two lines of one path (the same count every
// step) that part are a sure break; two endpoints whose shares of the
// traffic wander from step to step, with the same totals, are a weak
// one: the share's dispersion divides their evidence.
func TestLogBreakDispersion(t *testing.T) {
	locked := templateBins{bins: []float64{8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8}}
	found := templateBins{bins: []float64{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4}}
	wander := templateBins{bins: []float64{2, 14, 4, 12, 0, 16, 4, 4, 2, 6, 6, 2}}
	other := templateBins{bins: []float64{14, 2, 12, 4, 16, 0, 12, 12, 14, 10, 10, 14}}
	for _, tb := range []*templateBins{&locked, &found, &wander, &other} {
		for _, x := range tb.bins {
			tb.total += x
		}
	}
	c, pLocked, ok := breakOf(found, locked)
	require.True(t, ok)
	require.Equal(t, 6, c.at)
	require.Equal(t, 1.0, c.phi, "locked together: as binomial as can be")
	require.Equal(t, []float64{48, 24, 48, 48}, []float64{c.before, c.after, c.partnerBefore, c.partnerAfter})
	c, pWander, ok := breakOf(wander, other)
	require.True(t, ok)
	require.Greater(t, c.phi, 2.0, "the share wanders")
	t.Logf("locked p %.3g, wandering p %.3g (phi %.2f)", pLocked, pWander, c.phi)
	require.Less(t, pLocked, 0.05)
	require.Greater(t, pWander, 5*pLocked, "the same fall in a wandering mix is weaker evidence")
	_, _, ok = breakOf(locked, found)
	require.False(t, ok, "the partner that went on did not fall behind the one that fell")
	rose := templateBins{bins: []float64{8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16}, total: 144}
	_, _, ok = breakOf(locked, rose)
	require.False(t, ok, "a partner that came faster: the other did not come slower")
	fell := templateBins{bins: []float64{8, 8, 8, 8, 8, 8, 2, 2, 2, 2, 2, 2}, total: 60}
	fell2 := templateBins{bins: []float64{8, 8, 8, 8, 8, 8, 2, 2, 2, 2, 2, 2}, total: 60}
	_, _, ok = breakOf(fell, fell2)
	require.False(t, ok, "both fell together: less traffic")
}

// TestBinomialLowerTail against values worked by hand.
func TestBinomialLowerTail(t *testing.T) {
	require.InDelta(t, math.Pow(0.5, 10), binomialLowerTail(0, 10, 0.5), 1e-15)
	require.InDelta(t, 11.0/1024, binomialLowerTail(1, 10, 0.5), 1e-12)
	require.Equal(t, 1.0, binomialLowerTail(5, 10, 0.5), "at the mean: no fall")
	require.InDelta(t, math.Pow(2.0/3, 20), binomialLowerTail(0, 20, 1.0/3), 1e-12)
}

// BenchmarkLogBreaks: one pod's 200 info templates (MaxPerService's
// default) over an hour at 30 s, steady (nearly no template's rate falls,
// so nearly none is paired) and with the pod's traffic halving at 40
// minutes (every template's rate falls: every pair is tried).
//
//	go test ./internal/diagnose -run '^$' -bench LogBreaks
func BenchmarkLogBreaks(b *testing.B) {
	for _, tc := range []struct {
		name string
		fall float64
	}{{"steady", 1}, {"traffic_halves", 0.5}} {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			var series []templateBins
			for i := range 200 {
				tb := templateBins{entity: "cart", severity: "info", template: fmt.Sprint("t", i), source: "cart-0"}
				mean := 1 + float64(i%20)
				for k := range 120 {
					m := mean
					if k >= 80 {
						m *= tc.fall
					}
					x := math.Round(m + math.Sqrt(m)*r.NormFloat64())
					tb.bins = append(tb.bins, math.Max(0, x))
					tb.total += math.Max(0, x)
				}
				series = append(series, tb)
			}
			b.ResetTimer()
			for b.Loop() {
				logBreaks(series, nil, nil, nil, 0, stretches(120))
			}
		})
	}
}
