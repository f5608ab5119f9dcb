package diagnose

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// logStep is the finest bin the log tests count in: the span metrics'
// flush interval, the cadence at which Vigil writes what it derives from
// traces, and so the finest on which the logs can be set against them.
const logStep = 15 * time.Second

// metricLogTemplates is internal/logsignals' count of records by entity,
// level and template (Drain); metricLogSuccessions its count of records
// of a template (next) that came next after one of another (template) in
// the same span.
const (
	metricLogTemplates   = "vigil_log_templates_total"
	metricLogSuccessions = "vigil_log_template_successions_total"
	// metricLogSpanFirst counts spans by name and the template of their
	// first record; metricSpanCalls (the span metrics') all spans by
	// name, those whose first record never came included.
	metricLogSpanFirst = "vigil_log_span_first_total"
	metricSpanCalls    = "traces_span_metrics_calls_total"
)

// logTemplateCounts is one template series' records before and after the
// step it rose at, or, for a break, fell at next to its partner's.
type logTemplateCounts struct {
	entity, severity, template string
	before, after              float64
	// at is the first step after the split; end, for a change that went
	// back within the window, the first step after it (0: it lasted to
	// the end); phi the counts' dispersion about the two rates (1: as
	// Poisson as can be). "Before" and "after" are then the rest of the
	// window and the stretch [at, end).
	at, end int
	phi     float64
	// partner is set for a break: the template whose records went on
	// (partnerBefore, partnerAfter) while this one's fell. For a broken
	// succession (after set), template is the one that no longer came
	// next after the template follows, and the partner's counts are
	// follows' records that something else (or nothing) followed.
	partner                     string
	partnerBefore, partnerAfter float64
	follows                     string
	// span is set for a broken span-first: the spans of that name no
	// longer began with the template (partner: the other spans of it).
	span string
}

// logScore is an entity's strongest template change: its one-sided
// p-value, corrected for the splits and the entity's templates (and, for
// a break, partners) tested (Bonferroni), and as a standard normal deviate
// (what ranks next to the metrics' spreads).
type logScore struct {
	logTemplateCounts
	p, z float64
	// tested is how many of the entity's templates were tested for a rise,
	// pairs how many (template, partner) pairs for a break; t0 and t1 the
	// time the logs cover before and after the split (for a change that
	// went back, around the stretch and in it, which ended at until).
	tested, pairs int
	t0, t1        time.Duration
	until         time.Time
}

// stretch is a part [k, e) of the covered steps that a test sets against
// the rest: after a split at k to the end (e = n: a change that lasted),
// or to an earlier step (a change that went back within the window: a
// fault that ended, a restart that cured it). Set against the window's
// whole rest, such a change is diluted by the steps after it, however
// sharp it was: a template that stopped for two minutes of a ten-minute
// window and came back is a third as far from its rate.
type stretch struct {
	k, e int
	// cost is what the stretch's p-value is multiplied by for the
	// stretches tried (a weighted Bonferroni correction: the costs'
	// reciprocals sum to 1).
	cost float64
}

// stretches are the stretches of n covered steps the tests try: every
// split to the end and, where a step is left after them, every stretch of
// 2, 4, 8, 16, ... steps (the dyadic lengths of a multiscale scan: their
// number grows as n·log n, and a change that went back after L steps
// holds one of at least L/2 steps). Each starts after the first step:
// there is a before. The splits share half of the test's level and the stretches that went back the
// other half (weighted Bonferroni): a change that lasts pays twice its
// splits' number, as it did alone, rather than every stretch's.
func stretches(n int) []stretch {
	out := make([]stretch, 0, n)
	for k := 1; k < n; k++ {
		out = append(out, stretch{k: k, e: n})
	}
	splits := len(out)
	for l := 2; l+1 < n; l *= 2 {
		for k := 1; k+l < n; k++ {
			out = append(out, stretch{k: k, e: k + l})
		}
	}
	closed := len(out) - splits
	for i := range out {
		switch {
		case closed == 0:
			out[i].cost = float64(splits)
		case i < splits:
			out[i].cost = 2 * float64(splits)
		default:
			out[i].cost = 2 * float64(closed)
		}
	}
	return out
}

// closed tells a stretch that ended before the last of n steps.
func (st stretch) closed(n int) bool { return st.e < n }

// side is the steps [lo, hi) a stretch within them is set against (the
// rest of them: before and after it).
type side struct{ lo, hi int }

// sides are what a stretch of n steps is tested against: a split, the
// steps before it; a stretch that went back, the steps before it and,
// apart, the steps after it. Its change must hold against both (an
// intersection–union test: its p-value is the larger of the two), so
// that a change that lasted is not read as its opposite in the steps
// before it (a line that came faster from minute 20 makes minutes 0–16
// a fall against the rest of the window, but not against minute 0).
func (st stretch) sides(n int) []side {
	if !st.closed(n) {
		return []side{{0, n}}
	}
	return []side{{0, st.e}, {st.k, n}}
}

// binSums are a series' prefix sums, of its records and of their squares
// over the share of the step covered: any stretch's in constant time.
type binSums struct {
	x, sq []float64 // Σ over [:i]
	w0    float64   // the share of the first step covered
}

func (b templateBins) binSums() binSums {
	sq, _ := b.squares()
	s := binSums{x: make([]float64, len(b.bins)+1), sq: make([]float64, len(b.bins)+1), w0: b.cover0()}
	for i, v := range b.bins {
		s.x[i+1], s.sq[i+1] = s.x[i]+v, s.sq[i]+sq[i]
	}
	return s
}

// sum, squares and time are the records, squares and covered time (in
// steps) of [lo, hi).
func (s binSums) sum(lo, hi int) float64     { return math.Max(0, s.x[hi]-s.x[lo]) }
func (s binSums) squares(lo, hi int) float64 { return math.Max(0, s.sq[hi]-s.sq[lo]) }
func (s binSums) time(lo, hi int) float64 {
	t := float64(hi - lo)
	if lo == 0 && hi > 0 {
		t -= 1 - s.w0
	}
	return t
}

// counts are a stretch's records in it and in the rest of a side, the
// times of the two and the records' dispersion about their two rates.
func (s binSums) counts(st stretch, sd side) (in, rest, tIn, tRest, phi float64) {
	in, all := s.sum(st.k, st.e), s.sum(sd.lo, sd.hi)
	sqIn, sqAll := s.squares(st.k, st.e), s.squares(sd.lo, sd.hi)
	tIn, tAll := s.time(st.k, st.e), s.time(sd.lo, sd.hi)
	rest = math.Max(0, all-in)
	return in, rest, tIn, tAll - tIn, dispersion(sd.hi-sd.lo, tAll-tIn, tIn, rest, in, math.Max(0, sqAll-sqIn), sqIn)
}

// templateBins is one template series' records per covered step.
type templateBins struct {
	entity, severity, template string
	// source is the series' labels but its level and template: the pod
	// (or process) whose code path the templates trace.
	source string
	// follows is, for a succession series, the template whose records
	// this one's came next after in their spans; span, for a span-first
	// series, the name of the spans whose first record it counts.
	follows, span string
	bins          []float64
	total         float64
	// w0 is the share of the first step that the logs cover (0: all of
	// it, as 1): its count is of that time only.
	w0 float64
}

// cover0 is the share of the first step covered (w0, 1 where unset).
func (b templateBins) cover0() float64 {
	if b.w0 <= 0 {
		return 1
	}
	return b.w0
}

// squares is Σ x²/w over the bins, each count over the share of its step
// covered (for the dispersion: a count of part of a step is compared
// with the rate over that part), and the bins' time in steps.
func (b templateBins) squares() (sq []float64, steps float64) {
	sq = make([]float64, len(b.bins))
	w := b.cover0()
	for i, x := range b.bins {
		sq[i] = x * x
		if i == 0 {
			sq[i] /= w
		}
	}
	return sq, float64(len(b.bins)-1) + w
}

// warnOrAbove tells the levels whose records say something went wrong.
func warnOrAbove(severity string) bool {
	switch severity {
	case "warn", "error", "fatal":
		return true
	}
	return false
}

// logTemplateScores tests the template series of the entities for two
// changes. A rise: records at warning level or above that came faster.
// Counts are Poisson: with the same rate throughout, the records after a
// split are binomial among all of the series' records, with the share of
// the covered time that lies after it. A break: records below warning (a
// step of the normal path) that fell behind a partner's from the same
// source, as when a request fails between two log statements and the
// second is no longer written while the first still is (logBreak). Each
// series is split at every step the logs cover (a change in the logs need
// not wait for the metrics' onset, which 1-minute rows put a minute
// late), and its best split's p-value is multiplied by the number of
// splits tried and by the entity's templates (a rise) or pairs (a break)
// tested. An entity's score is the better of its two, doubled when both
// were tested. The covered time is where the logs are: from the family's
// first sample (the window's start when it had samples before it) to its
// last; a template not seen in that time had no records. A rise of records
// below warning is traffic, a fall of warnings a recovery: neither is
// judged. Entities with no template tested, or whose best p is 0.5 or
// more, get no score.
func (v *view) logTemplateScores(ctx context.Context, names []string) (map[string]logScore, error) {
	if !v.have.Has(metricLogTemplates) {
		return nil, nil
	}
	startMs, endMs := v.start.Add(-lookbackFor(v.step)).UnixMilli(), v.at.UnixMilli()
	q, err := v.src.Querier(startMs, endMs)
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	type sample struct {
		t int64
		v float64
	}
	type rawTemplate struct {
		entity, severity, template, follows, source string
		// span is set for a span-first series (the span's name) and for
		// a calls series (calls set).
		span    string
		calls   bool
		samples []sample
	}
	var all []rawTemplate
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	families := metricLogTemplates + "|" + metricLogSuccessions
	if v.have.Has(metricLogSpanFirst) {
		families += "|" + metricLogSpanFirst + "|" + metricSpanCalls
	}
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, families))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		lset := s.Labels()
		if lset.Get("otel_metric_overflow") != "" {
			continue
		}
		r := rawTemplate{severity: lset.Get("severity"), template: lset.Get("template"),
			source: labels.NewBuilder(lset).Del(model.MetricNameLabel, "severity", "template", "next").Labels().String()}
		switch lset.Get(model.MetricNameLabel) {
		case metricLogSuccessions:
			r.template, r.follows = lset.Get("next"), r.template
			if r.template == "" || r.follows == "" {
				continue
			}
		case metricLogSpanFirst:
			if r.span = lset.Get("span_name"); r.span == "" || r.template == "" {
				continue
			}
		case metricSpanCalls:
			if r.span, r.calls = lset.Get("span_name"), true; r.span == "" {
				continue
			}
		}
		for _, l := range names {
			if r.entity = lset.Get(l); r.entity != "" {
				break
			}
		}
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue
			}
			t, f := it.At()
			if t > endMs || value.IsStaleNaN(f) {
				continue
			}
			r.samples = append(r.samples, sample{t, f})
			if r.follows == "" && r.span == "" {
				first, last = min(first, t), max(last, t)
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", metricLogTemplates, err)
		}
		if r.entity != "" && len(r.samples) > 0 {
			all = append(all, r)
		}
	}
	if err := ss.Err(); err != nil {
		return nil, fmt.Errorf("select %s: %w", metricLogTemplates, err)
	}
	if len(all) == 0 || first > last {
		return nil, nil
	}
	// The covered steps: b0 the first whose records are known from the
	// coverage's start on, for w0 of its length (a step covered for less
	// than half of it is left out: its few records say too little of a
	// rate), b1 the last.
	c0 := max(first, v.start.UnixMilli())
	// The counts are binned at the view's step, or at logStep where the
	// view's is coarser (minute rows of metrics): records are written as
	// they come, not on the metrics' grid, and a change in them shows
	// within seconds. The split found is reported on the view's steps.
	lstep := min(v.step, logStep)
	stepMs, base := lstep.Milliseconds(), v.start.UnixMilli()
	ln := int((v.at.UnixMilli()-base)/stepMs) + 1
	stepOf := func(t int64) int { return int(ceilDivMs(t-base, stepMs)) } // the step whose (t-step, t] holds t
	b0, b1 := stepOf(c0), min(stepOf(last), ln-1)
	w0 := float64(base+int64(b0)*stepMs-c0) / float64(stepMs)
	if w0 < 0.5 {
		b0, w0 = b0+1, 1
	}
	if b1-b0 < 1 {
		return nil, nil
	}
	// A stretch where no template of any entity was written for two steps
	// running is not covered (the log pipeline was down, or the data set
	// keeps no logs there): its steps are left out, not counted as steps
	// with no records. A single empty step is kept (a batch that came a
	// moment late). keep holds the steps counted, pos each step's place
	// among them (-1: left out).
	has := make([]bool, b1-b0+1)
	for _, r := range all {
		if r.follows != "" || r.span != "" {
			continue
		}
		for _, smp := range r.samples {
			if b := stepOf(smp.t); b >= b0 && b <= b1 {
				has[b-b0] = true
			}
		}
	}
	var keep []int
	pos := make([]int, len(has))
	for i := range has {
		pos[i] = -1
		if i == 0 || has[i] || has[i-1] {
			pos[i] = len(keep)
			keep = append(keep, i)
		}
	}
	if len(keep) < 2 {
		return nil, nil
	}
	sts := stretches(len(keep)) // the splits, and the stretches that ended before the last step
	var series, succ, spanFirst []templateBins
	calls := map[[2]string]*templateBins{} // by entity and span name: all its kinds and statuses
	for _, r := range all {
		bins := make([]float64, len(keep))
		// Each sample's rise over the one before it (a drop is a restart:
		// it counts from zero); a first sample counts its own value when
		// it is later than the coverage's start (the writer's leading
		// zero comes before a series' first records).
		prev := math.NaN()
		total := 0.0
		for _, s := range r.samples {
			inc := 0.0
			switch {
			case math.IsNaN(prev):
				if s.t > c0 {
					inc = s.v
				}
			case s.v >= prev:
				inc = s.v - prev
			default:
				inc = s.v
			}
			prev = s.v
			if b := stepOf(s.t); b >= b0 && b <= b1 && inc > 0 && pos[b-b0] >= 0 {
				bins[pos[b-b0]] += inc
				total += inc
			}
		}
		if total == 0 {
			continue
		}
		tb := templateBins{entity: r.entity, severity: r.severity, template: r.template, follows: r.follows, span: r.span, source: r.source, bins: bins, total: total, w0: w0}
		switch {
		case r.calls:
			k := [2]string{r.entity, r.span}
			if c := calls[k]; c != nil {
				for i, x := range bins {
					c.bins[i] += x
				}
				c.total += total
			} else {
				tb.template = r.span
				calls[k] = &tb
			}
		case r.span != "":
			spanFirst = append(spanFirst, tb)
		case r.follows != "":
			succ = append(succ, tb)
		default:
			series = append(series, tb)
		}
	}
	// The tests place their splits among the steps kept (at: the first
	// kept step after the split), mapped back below.
	rises, tested := logRises(series, 0, sts)
	breaks, pairs := logBreaks(series, succ, spanFirst, calls, 0, sts)
	out := map[string]logScore{}
	for _, e := range slices.Sorted(maps.Keys(tested)) {
		s, ok := rises[e]
		if ok {
			s.p = math.Min(1, s.p*float64(tested[e]))
		}
		if b, bok := breaks[e]; bok {
			b.p = math.Min(1, b.p*float64(pairs[e]))
			if !ok || b.p < s.p {
				s, ok = b, true
			}
		}
		if !ok {
			continue
		}
		s.tested, s.pairs = tested[e], pairs[e]
		if s.tested > 0 && s.pairs > 0 {
			s.p = math.Min(1, 2*s.p) // two tests
		}
		if s.p >= 0.5 {
			continue
		}
		s.z = upperDeviate(s.p)
		end := len(keep)
		if s.end > 0 {
			end = s.end
			// The end of the stretch's last step.
			s.until = time.UnixMilli(base + int64(b0+keep[end-1])*stepMs).UTC()
		}
		covered := float64(len(keep)-1) + w0
		s.t1 = time.Duration(end-s.at) * lstep
		s.t0 = time.Duration((covered - float64(end-s.at)) * float64(lstep))
		// The view's step whose (t-step, t] holds the split's first step's
		// end.
		s.at = int(ceilDivMs(int64(b0+keep[s.at])*stepMs, v.step.Milliseconds()))
		out[e] = s
	}
	return out, nil
}

// logRises tests each series at warning level or above for a rise of its
// records, at every stretch of sts; it returns each entity's best (its p corrected
// for the stretches, not yet for its templates) and, for every entity with a
// series, how many were tested.
func logRises(series []templateBins, b0 int, sts []stretch) (map[string]logScore, map[string]int) {
	best := map[string]logScore{}
	tested := map[string]int{}
	for _, r := range series {
		if _, ok := tested[r.entity]; !ok {
			tested[r.entity] = 0
		}
		if !warnOrAbove(r.severity) {
			continue
		}
		tested[r.entity]++
		n := len(r.bins)
		sums := r.binSums()
		c := logTemplateCounts{entity: r.entity, severity: r.severity, template: r.template}
		bestP := 2.0
		for _, st := range sts {
			p, phi := 0.0, 1.0
			for _, sd := range st.sides(n) {
				in, rest, tIn, tRest, f := sums.counts(st, sd)
				p, phi = math.Max(p, math.Min(1, st.cost*binomialUpperTail(in/f, (in+rest)/f, tIn/(tIn+tRest)))), math.Max(phi, f)
				if p >= bestP {
					break
				}
			}
			if p < bestP {
				after := sums.sum(st.k, st.e)
				bestP, c.before, c.after, c.at, c.end, c.phi = p, math.Max(0, r.total-after), after, b0+st.k, 0, phi
				if st.closed(n) {
					c.end = b0 + st.e
				}
			}
		}
		p := math.Min(1, bestP)
		if cur, ok := best[r.entity]; !ok || p < cur.p || (p == cur.p && c.after > cur.after) {
			best[r.entity] = logScore{logTemplateCounts: c, p: p}
		}
	}
	return best, tested
}

// logBreaks tests each series below warning level against every other
// series below warning of its source for a break (logBreak), and each
// succession below warning (records of a template that came next after
// one of another in the same span) against the rest of the records it
// came next after (successionBreaks), and each span-first series against
// the other spans of its name (spanFirstBreaks); it returns each entity's
// best (its p corrected for the splits, not yet for its pairs) and how
// many pairs, successions and span-first series each entity had tested. Since a break's p-value is at
// least its own rate's fall's, a template whose rate fell at no split by
// enough to score after the corrections (p ≥ 0.5 over the splits and the
// entity's pairs) is not paired at all: in a healthy service that is
// nearly every template, so the pairs cost little.
func logBreaks(series, succ, spanFirst []templateBins, calls map[[2]string]*templateBins, b0 int, sts []stretch) (map[string]logScore, map[string]int) {
	bySource := map[string][]int{}
	for i, r := range series {
		if !warnOrAbove(r.severity) {
			bySource[r.source] = append(bySource[r.source], i)
		}
	}
	pairs := map[string]int{}
	for _, idx := range bySource {
		for _, i := range idx {
			pairs[series[i].entity] += len(idx) - 1
		}
	}
	for _, r := range succ {
		if !warnOrAbove(r.severity) {
			pairs[r.entity]++
		}
	}
	for _, s := range spanFirst {
		if !warnOrAbove(s.severity) && calls[[2]string{s.entity, s.span}] != nil {
			pairs[s.entity]++
		}
	}
	best := map[string]logScore{}
	keep := func(c logTemplateCounts, p float64) {
		p = math.Min(1, p)
		if cur, had := best[c.entity]; !had || p < cur.p {
			best[c.entity] = logScore{logTemplateCounts: c, p: p}
		}
	}
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		idx := bySource[src]
		for _, i := range idx {
			r := series[i]
			bound := 0.5 / float64(max(1, pairs[r.entity]))
			sums := r.binSums()
			rates, any := rateFalls(r, sums, sts, bound)
			if !any {
				continue
			}
			for _, j := range idx {
				if j == i {
					continue
				}
				if c, p, ok := logBreak(r, sums, series[j], b0, sts, rates, bound); ok {
					keep(c, p)
				}
			}
		}
	}
	successionBreaks(series, succ, b0, sts, pairs, keep)
	spanFirstBreaks(spanFirst, calls, b0, sts, pairs, keep)
	return best, pairs
}

// breakBehindRest tests whether s fell behind the rest of all (all's
// records less s's, per step): the bound its tests must reach to score
// after the corrections, its own rate's fall (rateFalls), then logBreak
// against the rest. rest names the rest in the result.
func breakBehindRest(s, all templateBins, rest string, b0 int, sts []stretch, pairs map[string]int) (logTemplateCounts, float64, bool) {
	bound := 0.5 / float64(max(1, pairs[s.entity]))
	sums := s.binSums()
	rates, any := rateFalls(s, sums, sts, bound)
	if !any {
		return logTemplateCounts{}, 0, false
	}
	r := templateBins{entity: all.entity, severity: all.severity, template: rest, source: all.source, bins: make([]float64, len(all.bins)), w0: s.w0}
	for k, x := range all.bins {
		r.bins[k] = math.Max(0, x-s.bins[k])
		r.total += r.bins[k]
	}
	return logBreak(s, sums, r, b0, sts, rates, bound)
}

// successionBreaks tests each succession below warning (b's records that
// came next after a's in the same span) for a break against the rest of
// a's records (those that something else, or nothing, came next after):
// the same two tests as logBreak's, b's own rate's fall and its fall
// behind the rest. Where a request fails between two log statements of
// one span, the second no longer comes next after the first, however
// the traffic of the service's other code paths mixes: the share is
// per record of a, not per minute of the service's lines. Both must be
// below warning; a's records must have gone on after the split (the
// rest has some), so that a code path no longer called breaks nothing.
func successionBreaks(series, succ []templateBins, b0 int, sts []stretch, pairs map[string]int, keep func(logTemplateCounts, float64)) {
	type key struct{ source, template string }
	from := map[key]int{}
	for i, r := range series {
		if !warnOrAbove(r.severity) {
			from[key{r.source, r.template}] = i
		}
	}
	for _, s := range succ {
		i, ok := from[key{s.source, s.follows}]
		if warnOrAbove(s.severity) || !ok {
			continue
		}
		a := series[i]
		if c, p, ok := breakBehindRest(s, a, a.template, b0, sts, pairs); ok {
			c.follows = s.follows
			keep(c, p)
		}
	}
}

// spanFirstBreaks tests each span-first series below warning (spans of a
// name whose first record was of a template) for a break against the
// rest of the spans of that name (the span metrics' calls): as a
// succession is tested, the span's start being the step before. A
// request that fails before the first statement of its span writes no
// record there at all, and only the span tells that it came.
func spanFirstBreaks(spanFirst []templateBins, calls map[[2]string]*templateBins, b0 int, sts []stretch, pairs map[string]int, keep func(logTemplateCounts, float64)) {
	for _, s := range spanFirst {
		a := calls[[2]string{s.entity, s.span}]
		if warnOrAbove(s.severity) || a == nil {
			continue
		}
		if c, p, ok := breakBehindRest(s, *a, s.span, b0, sts, pairs); ok {
			c.span = s.span
			keep(c, p)
		}
	}
}

// rateFalls is, for each stretch of sts, the p-value of b's records'
// fall in it (binomial with the stretch's share of the covered time,
// divided by the quasi-Poisson dispersion about the two rates; against
// each of its sides, the larger), or NaN where it is above bound (no
// break in that stretch can score) or b had no record on a side; and
// whether any is not.
func rateFalls(b templateBins, sums binSums, sts []stretch, bound float64) ([]float64, bool) {
	n := len(b.bins)
	out := make([]float64, len(sts))
	any := false
	for i, st := range sts {
		out[i] = math.NaN()
		p := 0.0
		for _, sd := range st.sides(n) {
			in, rest, tIn, tRest, f := sums.counts(st, sd)
			if sums.sum(sd.lo, st.k)+sums.sum(st.e, sd.hi) == 0 {
				p = 2
				break
			}
			x, m, q := in/f, (in+rest)/f, tIn/(tIn+tRest)
			if x >= m*q || st.cost*binomialPoint(x, m, q) > bound {
				p = 2 // the tail is at least its first term: it cannot score
				break
			}
			p = math.Max(p, st.cost*binomialLowerTail(x, m, q))
		}
		if p <= bound {
			out[i], any = p, true
		}
	}
	return out, any
}

// logBreak tests whether template b fell behind partner a of the same
// source. Two things must hold, and the p-value is the larger of the two
// tests' (an intersection–union test: the pair is as sure as its weaker
// half). First, b's records came slower: Poisson, as a rise is tested
// (rateFalls: the records after the split binomial with the covered
// time's share after it, bursts divided out by the quasi-Poisson
// dispersion), so that a partner that merely came faster breaks nothing.
// Second, they fell behind a's: the counts of the two before and after
// the split are a 2×2 table of Poisson counts, and with the two rates in a
// constant ratio (b's records a fixed share of the pair's, whatever the
// traffic did) Fisher's exact test gives the chance of so few of b's after
// the split (hypergeometric, conditional on the margins), so that all of a
// service's lines falling together (less traffic) breaks nothing either.
// A pair whose share wanders from step to step within a side (two
// endpoints whose traffic mixes anew each minute) is weaker evidence than
// one locked together (two lines of one code path): the table's cells are
// divided by the share's quasi-binomial dispersion (Pearson's χ² over its
// degrees of freedom, at least 1). Every split where rates has b's fall
// (rateFalls), both had records before and a has some after is tried; it
// returns the best, with its p-value uncorrected for the splits, and false
// when no split shows b falling behind by a p-value of bound or less (more
// cannot score after the corrections).
func logBreak(b templateBins, sb binSums, a templateBins, b0 int, sts []stretch, rates []float64, bound float64) (logTemplateCounts, float64, bool) {
	n := len(b.bins)
	var sh *shares // made when a stretch first needs it
	var sa binSums
	var best logTemplateCounts
	bestP := 2.0
	for i, st := range sts {
		pRate := rates[i]
		if math.IsNaN(pRate) || pRate >= bestP {
			continue
		}
		if sh == nil {
			s := newShares(b.bins, a.bins)
			sh, sa = &s, a.binSums()
		}
		p, phi := pRate, 1.0
		for _, sd := range st.sides(n) {
			bAfter, aAfter := sb.sum(st.k, st.e), sa.sum(st.k, st.e)
			bBefore, aBefore := sb.sum(sd.lo, sd.hi)-bAfter, sa.sum(sd.lo, sd.hi)-aAfter
			if aBefore <= 0 || aAfter == 0 || bBefore <= 0 || bAfter/(bAfter+aAfter) >= bBefore/(bBefore+aBefore) ||
				st.cost*fisherPoint(bAfter, aAfter, bBefore, aBefore) > math.Min(bestP, bound) {
				p = 2 // the tail is at least its first term, and no dispersion lowers it: it cannot score
				break
			}
			f := sh.dispersion(st, sd, bBefore/(bBefore+aBefore), bAfter/(bAfter+aAfter))
			p, phi = math.Max(p, st.cost*fisherLowerTail(bAfter/f, aAfter/f, bBefore/f, aBefore/f)), math.Max(phi, f)
		}
		if p < bestP {
			bestP = p
			bAfter, aAfter := sb.sum(st.k, st.e), sa.sum(st.k, st.e)
			best = logTemplateCounts{entity: b.entity, severity: b.severity, template: b.template,
				before: math.Max(0, b.total-bAfter), after: bAfter, at: b0 + st.k, phi: phi,
				partner: a.template, partnerBefore: math.Max(0, a.total-aAfter), partnerAfter: aAfter}
			if st.closed(n) {
				best.end = b0 + st.e
			}
		}
	}
	return best, bestP, bestP <= 1
}

// shares holds the prefix sums that give the quasi-binomial dispersion of
// b's share of a pair's records at any split in constant time: over the
// steps with records (m = a+b > 0), Σ b²/m, Σ b, Σ m and their number.
type shares struct {
	b2m, b, m []float64
	used      []int
}

func newShares(b, a []float64) shares {
	n := len(b)
	s := shares{b2m: make([]float64, n+1), b: make([]float64, n+1), m: make([]float64, n+1), used: make([]int, n+1)}
	for i := range n {
		s.b2m[i+1], s.b[i+1], s.m[i+1], s.used[i+1] = s.b2m[i], s.b[i], s.m[i], s.used[i]
		if m := a[i] + b[i]; m > 0 {
			s.b2m[i+1] += b[i] * b[i] / m
			s.b[i+1] += b[i]
			s.m[i+1] += m
			s.used[i+1]++
		}
	}
	return s
}

// dispersion is the quasi-binomial dispersion of b's share per step about
// the share around stretch st (r0) and in it (r1): Σ (b−m·r)²/(m·r·(1−r))
// over the steps with records, over their number less two, at least 1
// (Σ (b−m·r)²/(m·r·(1−r)) = (Σ b²/m − 2r·Σ b + r²·Σ m)/(r(1−r)) on a side).
// A side whose share is 0 or 1 adds nothing: at the side's own share, its
// counts' ratio, no step contradicts it.
func (s shares) dispersion(st stretch, sd side, r0, r1 float64) float64 {
	part := func(lo, hi int, r float64) float64 {
		if r <= 0 || r >= 1 || hi <= lo {
			return 0
		}
		return math.Max(0, (s.b2m[hi]-s.b2m[lo]-2*r*(s.b[hi]-s.b[lo])+r*r*(s.m[hi]-s.m[lo]))/(r*(1-r)))
	}
	used := s.used[sd.hi] - s.used[sd.lo]
	if used < 3 {
		return 1
	}
	return math.Max(1, (part(sd.lo, st.k, r0)+part(st.k, st.e, r1)+part(st.e, sd.hi, r0))/float64(used-2))
}

// fisherPoint is the hypergeometric probability of exactly x in
// fisherLowerTail's table: the first term of its tail, so a lower bound of
// it.
func fisherPoint(x, y, c, d float64) float64 {
	nb, nAfter, n := x+c, x+y, x+y+c+d
	return math.Exp(lchoose(nb, x) + lchoose(n-nb, nAfter-x) - lchoose(n, nAfter))
}

// binomialPoint is P(X = k) for X ~ Binomial(n, q), 0 < q < 1: the first
// term of binomialLowerTail's sum, so a lower bound of it.
func binomialPoint(k, n, q float64) float64 {
	if q <= 0 || q >= 1 {
		return 0
	}
	return math.Exp(lchoose(n, k) + k*math.Log(q) + (n-k)*math.Log1p(-q))
}

// lchoose is log C(n, k) through the log-gamma function (fractional
// counts too).
func lchoose(n, k float64) float64 {
	a, _ := math.Lgamma(n + 1)
	b, _ := math.Lgamma(k + 1)
	c, _ := math.Lgamma(n - k + 1)
	return a - b - c
}

// fisherLowerTail is one-sided Fisher's exact test of the table
//
//	          after  before
//	b         x      c
//	partner   y      d
//
// P(X ≤ x) for X hypergeometric with the table's margins (b's records
// x+c, the after column's x+y, all x+y+c+d), summed in log space from x
// down; counts may be fractional (divided by a dispersion). Never below
// minP.
func fisherLowerTail(x, y, c, d float64) float64 {
	nb, nAfter, n := x+c, x+y, x+y+c+d
	lo := math.Max(0, nAfter-(n-nb)) // the fewest of b the after column can hold
	den := lchoose(n, nAfter)
	sum := 0.0
	for i := x; i >= lo-1e-9; i-- {
		term := math.Exp(lchoose(nb, i) + lchoose(n-nb, nAfter-i) - den)
		sum += term
		if term <= 1e-17*sum {
			break // below the mode the terms only fall
		}
	}
	return math.Max(minP, math.Min(1, sum))
}

// dispersion is the quasi-Poisson dispersion of a template's n counts per
// step about a rate before a split and another after it (from the sides'
// times in steps, sums and sums of squares, each count's square over the
// share of its step covered): Pearson's χ² over
// its degrees of freedom, at least 1. Logs come in bursts (a retry storm,
// a batch job's hundred lines in one second); a count that bursts is
// weaker evidence than as many records that came steadily, and dividing
// the counts by the dispersion says by how much (McCullagh and Nelder,
// Generalized Linear Models, §4.5).
func dispersion(n int, tBefore, tAfter, before, after, sqBefore, sqAfter float64) float64 {
	if n < 3 {
		return 1
	}
	// Σ(x-μw)²/(μw) over a side of sum S, time T (in steps, Σw), rate
	// μ = S/T and weighted sum of squares Q = Σ x²/w is Q/μ - S.
	chi := 0.0
	if before > 0 {
		chi += sqBefore/(before/tBefore) - before
	}
	if after > 0 {
		chi += sqAfter/(after/tAfter) - after
	}
	return math.Max(1, chi/float64(n-2))
}

// ceilDivMs is ⌈a/b⌉ for b > 0.
func ceilDivMs(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

// binomialUpperTail is P(X ≥ k) for X ~ Binomial(n, q), summed in log space
// from k up while the terms still matter; 1 when k is at or below the
// mean (no rise); never below minP.
func binomialUpperTail(k, n, q float64) float64 {
	switch {
	case k <= n*q:
		return 1
	case q <= 0:
		return 0
	case q >= 1:
		return 1
	}
	lgN, _ := math.Lgamma(n + 1)
	lq, lr := math.Log(q), math.Log1p(-q)
	sum := 0.0
	for i := k; i <= n; i++ {
		a, _ := math.Lgamma(i + 1)
		b, _ := math.Lgamma(n - i + 1)
		term := math.Exp(lgN - a - b + i*lq + (n-i)*lr)
		sum += term
		if term <= 1e-17*sum {
			break // past the mode the terms only fall
		}
	}
	return math.Max(minP, math.Min(1, sum))
}

// binomialLowerTail is P(X ≤ k) for X ~ Binomial(n, q): the upper tail
// of the n−X ~ Binomial(n, 1−q) that did not happen; 1 when k is at or
// above the mean (no fall); never below minP.
func binomialLowerTail(k, n, q float64) float64 {
	if k >= n*q {
		return 1 // before 1−q rounds: at the mean exactly is no fall
	}
	return binomialUpperTail(n-k, n, 1-q)
}

// upperDeviate is the standard normal deviate whose upper tail is p (0 <
// p < 0.5): math.Erfcinv where it is exact, and past 1e-12, where 1-2p
// rounds, Abramowitz and Stegun's 26.2.23 (error under 4.5e-4).
func upperDeviate(p float64) float64 {
	if p > 1e-12 {
		return math.Sqrt2 * math.Erfcinv(2*p)
	}
	t := math.Sqrt(-2 * math.Log(p))
	return t - (2.515517+0.802853*t+0.010328*t*t)/(1+1.432788*t+0.189269*t*t+0.001308*t*t*t)
}

// minP is the smallest p-value told apart (a deviate of about 37): past
// it, a sum of terms underflows.
const minP = 1e-300

// logEvidence writes an entity's template change as evidence.
func (v *view) logEvidence(label string, s logScore) Evidence {
	short := func(t string) string {
		if len(t) > 120 {
			return t[:117] + "..."
		}
		return t
	}
	if s.span != "" {
		return Evidence{
			Signal: fmt.Sprintf("%s{severity=%q, span_name=%q, template=%q}", metricLogSpanFirst, s.severity, s.span, short(s.template)),
			Query: fmt.Sprintf("sum(increase(%s{%s=%q, span_name=%q, template=%q}[5m])) / sum(increase(%s{%s=%q, span_name=%q}[5m]))",
				metricLogSpanFirst, label, s.entity, s.span, s.template, metricSpanCalls, "service_name", s.entity, s.span),
			Summary: fmt.Sprintf("the code path broke: spans %q no longer began with this %s template: %s of %s did in %s, %s of %s in the %s %s: p = %.2g for a share that did not change (the best of %d template pairs and successions and their stretches)",
				s.span, s.severity, fmtCount(s.logTemplateCounts.after), fmtCount(s.logTemplateCounts.after+s.partnerAfter), logStretch(s, v.time(s.at)),
				fmtCount(s.before), fmtCount(s.before+s.partnerBefore), fmtDur(s.t0), logRest(s), s.p, s.pairs),
		}
	}
	if s.follows != "" {
		return Evidence{
			Signal: fmt.Sprintf("%s{severity=%q, template=%q, next=%q}", metricLogSuccessions, s.severity, short(s.follows), short(s.template)),
			Query: fmt.Sprintf("sum(increase(%s{%s=%q, template=%q, next=%q}[5m])) / sum(increase(%s{%s=%q, template=%q}[5m]))",
				metricLogSuccessions, label, s.entity, s.follows, s.template, metricLogTemplates, label, s.entity, s.follows),
			Summary: fmt.Sprintf("the code path broke: in the same span, this %s template no longer came next after %q: it did after %s of its %s records in %s, after %s of %s in the %s %s: p = %.2g for a share that did not change (the best of %d template pairs and successions and their stretches)",
				s.severity, short(s.follows), fmtCount(s.logTemplateCounts.after), fmtCount(s.logTemplateCounts.after+s.partnerAfter), logStretch(s, v.time(s.at)),
				fmtCount(s.before), fmtCount(s.before+s.partnerBefore), fmtDur(s.t0), logRest(s), s.p, s.pairs),
		}
	}
	if s.partner != "" {
		return Evidence{
			Signal: fmt.Sprintf("%s{severity=%q, template=%q}", metricLogTemplates, s.severity, short(s.template)),
			Query: fmt.Sprintf("sum(increase(%s{%s=%q, template=%q}[5m])) / sum(increase(%s{%s=%q, template=%q}[5m]))",
				metricLogTemplates, label, s.entity, s.template, metricLogTemplates, label, s.entity, s.partner),
			Summary: fmt.Sprintf("the code path broke: this %s template fell behind %q, which went on: %s records of it for %s of the other in %s, %s for %s in the %s %s: p = %.2g for a ratio that did not change (the best of %d template pairs and their stretches)",
				s.severity, short(s.partner), fmtCount(s.after), fmtCount(s.partnerAfter), logStretch(s, v.time(s.at)),
				fmtCount(s.before), fmtCount(s.partnerBefore), fmtDur(s.t0), logRest(s), s.p, s.pairs),
		}
	}
	return Evidence{
		Signal: fmt.Sprintf("%s{severity=%q, template=%q}", metricLogTemplates, s.severity, short(s.template)),
		Query:  fmt.Sprintf("sum(increase(%s{%s=%q, severity=%q, template=%q}[5m]))", metricLogTemplates, label, s.entity, s.severity, s.template),
		Summary: fmt.Sprintf("%s records of this %s template in %s, %s in the %s %s: p = %.2g for a rate that did not change (the best of %d templates and their stretches)",
			fmtCount(s.after), s.severity, logStretch(s, v.time(s.at)), fmtCount(s.before), fmtDur(s.t0), logRest(s), s.p, s.tested),
	}
}

// logStretch is the time a log change was found in: the stretch's length
// and its start (from), and its end where it went back before the window's.
func logStretch(s logScore, from time.Time) string {
	if s.until.IsZero() {
		return fmt.Sprintf("the %s from %s", fmtDur(s.t1), from.Format("15:04:05"))
	}
	return fmt.Sprintf("the %s from %s to %s", fmtDur(s.t1), from.Format("15:04:05"), s.until.Format("15:04:05"))
}

// logRest is where the counts a log change is set against were: before
// it, or around it where it went back.
func logRest(s logScore) string {
	if s.until.IsZero() {
		return "before"
	}
	return "around it"
}

func fmtCount(x float64) string { return fmt.Sprintf("%.0f", x) }

func fmtDur(d time.Duration) string { return d.Round(time.Second).String() }

// mergeLogScores adds the entities' log scores to the metrics': an entity
// ranks by the stronger of its two (the metrics' bounded by their history),
// and a log score comes with its evidence. The result is sorted best first, as scoreEntities sorts.
func mergeLogScores(scores []genericScore, logs map[string]logScore) ([]genericScore, map[string]logScore) {
	used := map[string]logScore{}
	idx := map[string]int{}
	for i, s := range scores {
		idx[s.entity] = i
	}
	for e, l := range logs {
		i, ok := idx[e]
		switch {
		case !ok:
			scores = append(scores, genericScore{entity: e, series: "", z: l.z, rank: l.z, held: l.z, first: l.at})
		case l.z > scores[i].rank:
			scores[i].z, scores[i].rank, scores[i].held, scores[i].series, scores[i].first = l.z, l.z, math.Max(scores[i].held, l.z), "", l.at
		default:
			continue
		}
		used[e] = l
	}
	sortScores(scores)
	return scores, used
}
