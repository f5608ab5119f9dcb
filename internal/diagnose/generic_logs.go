package diagnose

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// metricLogTemplates is internal/logsignals' count of warning and error
// records by entity, level and template (Drain).
const metricLogTemplates = "vigil_log_templates_total"

// logTemplateCounts is one template series' records before and after the
// step it rose at.
type logTemplateCounts struct {
	entity, severity, template string
	before, after              float64
	// at is the first step after the split; phi the counts' dispersion
	// about the two rates (1: as Poisson as can be).
	at  int
	phi float64
}

// logScore is an entity's strongest template rise: its one-sided binomial
// p-value, corrected for the splits and the entity's templates tested
// (Bonferroni), and as a standard normal deviate (what ranks next to the
// metrics' spreads).
type logScore struct {
	logTemplateCounts
	p, z float64
	// tested is how many of the entity's templates were tested; t0 and t1
	// the time the logs cover before and after the split.
	tested int
	t0, t1 time.Duration
}

// logTemplateScores tests every template series of the entities for a
// rise of its records. Counts are Poisson: with the same rate throughout,
// the records after a split are binomial among all of the series'
// records, with the share of the covered time that lies after it. Each
// series is split at every step the logs cover (a change in the logs
// need not wait for the metrics' onset, which 1-minute rows put a minute
// late), and its best split's p-value is multiplied by the number of
// splits tried. The covered time is where the logs are: from the family's
// first sample (the window's start when it had samples before it) to its
// last; a template not seen in that time had no records. A template that
// fell silent is not judged here. Entities with no template tested, or
// whose best p is 0.5 or more, get no score.
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
		entity, severity, template string
		samples                    []sample
	}
	var all []rawTemplate
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, metricLogTemplates))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		lset := s.Labels()
		if lset.Get("otel_metric_overflow") != "" {
			continue
		}
		r := rawTemplate{severity: lset.Get("severity"), template: lset.Get("template")}
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
			first, last = min(first, t), max(last, t)
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
	if len(all) == 0 {
		return nil, nil
	}
	// The covered steps: b0 the first whose records are known (after the
	// coverage's start), b1 the last.
	c0 := max(first, v.start.UnixMilli())
	stepMs, base := v.step.Milliseconds(), v.start.UnixMilli()
	stepOf := func(t int64) int { return int(ceilDivMs(t-base, stepMs)) } // the step whose (t-step, t] holds t
	b0, b1 := stepOf(c0)+1, min(stepOf(last), v.n-1)
	if b1-b0 < 1 {
		return nil, nil
	}
	splits := b1 - b0 // a split before each covered step but the first
	best := map[string]logScore{}
	tested := map[string]int{}
	bins := make([]float64, b1-b0+1)
	for _, r := range all {
		clear(bins)
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
			if b := stepOf(s.t); b >= b0 && b <= b1 && inc > 0 {
				bins[b-b0] += inc
				total += inc
			}
		}
		if total == 0 {
			continue
		}
		tested[r.entity]++
		c := logTemplateCounts{entity: r.entity, severity: r.severity, template: r.template}
		bestP := 2.0
		squares := 0.0
		for _, x := range bins {
			squares += x * x
		}
		before, sqBefore := 0.0, 0.0
		for k := 1; k < len(bins); k++ {
			before += bins[k-1]
			sqBefore += bins[k-1] * bins[k-1]
			after := total - before
			phi := dispersion(len(bins), k, before, after, sqBefore, squares-sqBefore)
			p := binomialUpperTail(after/phi, total/phi, float64(len(bins)-k)/float64(len(bins)))
			if p < bestP {
				bestP, c.before, c.after, c.at, c.phi = p, before, after, b0+k, phi
			}
		}
		p := math.Min(1, bestP*float64(splits))
		if cur, ok := best[r.entity]; !ok || p < cur.p || (p == cur.p && c.after > cur.after) {
			best[r.entity] = logScore{logTemplateCounts: c, p: p}
		}
	}
	out := map[string]logScore{}
	for e, s := range best {
		s.tested = tested[e]
		s.p = math.Min(1, s.p*float64(s.tested))
		if s.p >= 0.5 {
			continue
		}
		s.z = upperDeviate(s.p)
		s.t0, s.t1 = time.Duration(s.at-b0)*v.step, time.Duration(b1-s.at+1)*v.step
		out[e] = s
	}
	return out, nil
}

// dispersion is the quasi-Poisson dispersion of a template's n counts per
// step about a rate before step k and another after it (from the sides'
// sums and sums of squares): Pearson's χ² over
// its degrees of freedom, at least 1. Logs come in bursts (a retry storm,
// a batch job's hundred lines in one second); a count that bursts is
// weaker evidence than as many records that came steadily, and dividing
// the counts by the dispersion says by how much (McCullagh and Nelder,
// Generalized Linear Models, §4.5).
func dispersion(n, k int, before, after, sqBefore, sqAfter float64) float64 {
	if n < 3 {
		return 1
	}
	// Σ(x-μ)²/μ over a side of sum S and sum of squares Q is Q/μ - S.
	chi := 0.0
	if before > 0 {
		chi += sqBefore/(before/float64(k)) - before
	}
	if after > 0 {
		chi += sqAfter/(after/float64(n-k)) - after
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

// logEvidence writes an entity's template rise as evidence.
func (v *view) logEvidence(label string, s logScore) Evidence {
	tmpl := s.template
	if len(tmpl) > 120 {
		tmpl = tmpl[:117] + "..."
	}
	return Evidence{
		Signal: fmt.Sprintf("%s{severity=%q, template=%q}", metricLogTemplates, s.severity, tmpl),
		Query:  fmt.Sprintf("sum(increase(%s{%s=%q, severity=%q, template=%q}[5m]))", metricLogTemplates, label, s.entity, s.severity, s.template),
		Summary: fmt.Sprintf("%s records of this %s template in the %s from %s, %s in the %s before: p = %.2g for a rate that did not change (the best of %d templates and their splits)",
			fmtCount(s.after), s.severity, fmtDur(s.t1), v.time(s.at).Format("15:04:05"), fmtCount(s.before), fmtDur(s.t0), s.p, s.tested),
	}
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
