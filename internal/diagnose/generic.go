package diagnose

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/detect"
)

// genericSeries is one series of the generic layer: a metric of one
// entity, as values or per-step increases.
type genericSeries struct {
	entity, name string
	v            []float64
	// log marks a log template's count: it helps find the onset, and is
	// judged by its own test (logTemplateScores), not by spreads.
	log bool
	// shared marks a series another entity has too (markShared).
	shared bool
	// sparse marks a series sampled coarser than the steps: it has a
	// reading only at the steps its samples came at (ownReadings).
	sparse bool
	// count marks a counter's increases per step: events, whose own
	// (Poisson) spread its peers' ratios do not give (peerScores).
	count bool
}

// genericFloor keeps a flat series' tiny moves from scoring: 1% of its
// level (a 0.4% move of a flat series is no anomaly).
var genericFloor = detect.Floor{Rel: 0.01, Abs: 1e-9}

// generic is the statistical layer alone: every series that carries the
// entity label is read (counters as their increase per step; a
// histogram's _sum over its _count as a mean), the common onset of their
// changes is found (BOCPD), and each entity is scored by the largest
// robust deviation of its series after the onset against before it,
// counting only deviations that last two steps (BARO's ranking, with
// persistence). The entities become metric_anomaly causes, best first.
func (v *view) generic(ctx context.Context, label string) ([]*candidate, error) {
	names := entityLabels(label)
	var raw []rawSeries
	for i, l := range names {
		ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, l, ".+")}
		for _, earlier := range names[:i] {
			ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, earlier, "")) // read once
		}
		rs, err := v.selectAligned(ctx, "series with label "+l, ms...)
		if err != nil {
			return nil, err
		}
		raw = append(raw, rs...)
	}
	series := genericSeriesOf(raw, names)
	var g *svcGraph
	if v.hasGraph() {
		var err error
		if g, err = v.serviceGraph(ctx); err != nil {
			return nil, err
		}
		if slices.Contains(names, "service") {
			// The graph's services are the label's entities: the time their
			// callers wait beyond their own is evidence of theirs.
			series = append(series, networkGapSeries(g)...)
		}
	}
	if len(series) == 0 {
		v.warnf("no series carries the label %q: the generic layer has nothing to rank", label)
		return nil, nil
	}
	vals := make([][]float64, len(series))
	for i, s := range series {
		vals[i] = s.v
	}
	metricSeries := make([]genericSeries, 0, len(series))
	for _, s := range series {
		if !s.log {
			metricSeries = append(metricSeries, s)
		}
	}
	markShared(metricSeries)
	onset, ok := detect.CommonOnset(vals, detect.OnsetOptions{})
	if !ok {
		// No series shifted for good: the change, if any, is small. Rank
		// around where the series' change probabilities pile up; the
		// deviations, and so the confidences, will be small too.
		onset, ok = likeliestChange(vals)
	}
	var scores []genericScore
	if ok {
		if first := firstReading(vals); len(metricSeries) > 0 {
			if n := readingSteps(metricSeries, first, onset); n < shortHistory {
				v.warnf("the generic layer had %d readings (%s) before the onset at %s to judge each series by: spreads from so few are rough",
					n, time.Duration(onset-first)*v.step, v.time(onset).Format(time.TimeOnly))
			}
		}
		scores = mergePeerScores(scoreEntities(metricSeries, onset), peerScores(metricSeries, onset))
	}
	logs, err := v.logTemplateScores(ctx, names)
	if err != nil {
		return nil, err
	}
	scores, usedLogs := mergeLogScores(scores, logs)
	if len(scores) == 0 {
		return nil, nil
	}
	if !ok {
		onset = scores[0].first // the logs' rise is the only change
	}
	ranked := make([]genericRanked, 0, len(scores))
	// capOf is the least confidence of the entities ranked so far whose
	// evidence was of each kind: a series' own spreads, its peers', the
	// logs'.
	capOf := map[evidenceKind]float64{}
	for i, s := range scores {
		if s.z <= 0 {
			continue
		}
		// A change that lasted is a fault; one that went back (a restart,
		// a spike) is not sure to be.
		conf := s.held / (s.held + 8)
		if i == 0 && len(scores) > 1 && scores[1].z >= 0.8*s.z {
			conf *= 0.8 // two entities as deviant: ambiguous
		}
		if i > 0 {
			conf *= math.Min(1, s.z/scores[0].z)
		}
		kind := fromOwn
		if _, ok := usedLogs[s.entity]; ok {
			kind = fromLogs
		} else if s.peers > 0 {
			// No surer than m exchangeable peers can make it.
			conf *= 1 - peerP(s.peers)
			kind = fromPeers
		}
		// No surer than an entity ranked before it on another kind of
		// evidence: the metrics' spreads, their peers' and a log test's
		// p-value meet on the order, the deviates bounded by their
		// history (historyBound, peerBound), not on their confidences,
		// which come from scales of their own. Within one kind its own
		// confidence orders.
		for k, c := range capOf {
			if k != kind {
				conf = math.Min(conf, c)
			}
		}
		// A peer-judged entity too weak to report is no evidence against
		// the order of the others: it caps nothing.
		if c, ok := capOf[kind]; (!ok || conf < c) && (kind != fromPeers || conf >= minConfidence) {
			capOf[kind] = conf
		}
		r := genericRanked{genericScore: s, conf: conf}
		if l, ok := usedLogs[s.entity]; ok {
			r.evidence = []Evidence{v.logEvidence(label, l)}
			r.headline = fmt.Sprintf("%s %s: %s records of one template rose", label, s.entity, l.severity)
			r.action = fmt.Sprintf("read %s %s's %s records since %s: %q", label, s.entity, l.severity, v.time(l.at).Format("15:04:05"), l.template)
			switch {
			case l.span != "":
				r.headline = fmt.Sprintf("%s %s: a step of its code path is no longer logged", label, s.entity)
				r.action = fmt.Sprintf("find where %s %s's requests fail since %s, at the start of its spans %q: they no longer log %q",
					label, s.entity, v.time(l.at).Format("15:04:05"), l.span, l.template)
			case l.follows != "":
				r.headline = fmt.Sprintf("%s %s: a step of its code path is no longer logged", label, s.entity)
				r.action = fmt.Sprintf("find where %s %s's requests fail since %s, between two steps of one request: %q is still logged, %q no longer comes after it",
					label, s.entity, v.time(l.at).Format("15:04:05"), l.follows, l.template)
			case l.partner != "":
				r.headline = fmt.Sprintf("%s %s: a step of its code path is no longer logged", label, s.entity)
				r.action = fmt.Sprintf("find where %s %s's requests fail since %s: they still log %q but no longer %q",
					label, s.entity, v.time(l.at).Format("15:04:05"), l.partner, l.template)
			}
		}
		ranked = append(ranked, r)
	}
	if g != nil {
		ranked = v.walkGraph(g, ranked, onset, label)
	}
	out := make([]*candidate, 0, len(ranked))
	for i, r := range ranked {
		since := onset
		if _, ok := usedLogs[r.entity]; ok {
			since = r.first // where its logs rose
		}
		c := v.genericCandidate(r, since, label)
		c.order = i + 1
		out = append(out, c)
	}
	return out, nil
}

// markShared marks the series that several entities have reading for
// reading: a node's column that every pod on the node reports, a
// dependency's gauge each caller exports. Evidence that is the same for
// several entities belongs to what they share: it ranks them all alike,
// and among them each one's own series decide (genericScore.own). Only
// whole series that are equal at every step count: two services that
// merely move together share nothing.
func markShared(series []genericSeries) {
	type key struct {
		name string
		sum  uint64
	}
	hash := func(v []float64) uint64 {
		h := fnv.New64a()
		var b [8]byte
		for _, x := range v {
			bits := math.Float64bits(x)
			if math.IsNaN(x) {
				bits = 0x7ff8000000000001 // every NaN alike
			}
			binary.LittleEndian.PutUint64(b[:], bits)
			h.Write(b[:])
		}
		return h.Sum64()
	}
	byKey := map[key][]int{}
	for i, s := range series {
		k := key{s.name, hash(s.v)}
		byKey[k] = append(byKey[k], i)
	}
	for _, idx := range byKey {
		for _, i := range idx {
			for _, j := range idx {
				if series[j].entity != series[i].entity && slices.EqualFunc(series[i].v, series[j].v, sameReading) {
					series[i].shared = true
					break
				}
			}
		}
	}
}

// sameReading tells two readings alike, NaN as NaN.
func sameReading(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// historyBound is the largest deviate a change can have against n
// readings before it, whatever its size in spreads: were the readings and
// the two that hold the deviation exchangeable (no change), the chance
// that both lie beyond all n, on either side, is 4/((n+1)(n+2)); no
// series with so little history is surer than that. Four readings bound a
// change at 1.1 deviates (p 0.13), a hundred at 3.4 (p 4e-4). Spreads
// still order the changes the bound ties: it ranks evidence of different
// kinds and histories (a log template's counts, a series with a week
// behind it) on one scale, not one series' change against another's of
// the same history.
func historyBound(n int) float64 {
	return upperDeviate(math.Min(0.5, 4/(float64(n+1)*float64(n+2))))
}

// shortHistory is how few readings before the onset the report warns of:
// the median of n readings is off by about 1.25/√n spreads, more than 0.4
// under ten.
const shortHistory = 10

// firstReading is the first step at which any of the series has a value.
func firstReading(vals [][]float64) int {
	first := -1
	for _, v := range vals {
		if i := firstValid(v); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return max(first, 0)
}

// readingSteps counts the steps in [from, to) at which any of the series
// has a reading: the readings the history holds, where a series sampled
// coarser than the steps has one only where its samples came
// (ownReadings).
func readingSteps(series []genericSeries, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if slices.ContainsFunc(series, func(s genericSeries) bool { return !math.IsNaN(s.v[i]) }) {
			n++
		}
	}
	return n
}

// genericScore is an entity's deviation after the common onset.
type genericScore struct {
	entity, series string
	// z is the largest two-step deviation after the onset (what ranks);
	// held is the third quartile of the deviation from the onset on (how
	// much of it lasted: what the confidence reads).
	z, held float64
	first   int
	// rank is what orders the entities: z as a deviate no larger than its
	// series' history allows (historyBound), or a log template's deviate
	// (logScore.z), which its test already bounds by its counts.
	rank float64
	// own is the largest deviation of the entity's own series, those no
	// other entity shares (markShared).
	own float64
	// before and after are the series' level before the onset and its
	// mean over the two steps from first (where it moved most).
	before, after float64
	// peers is how many peers judged the change (peerScores), 0 where
	// the series' own history did.
	peers int
}

// genericRanked is an entity as the generic layer ranks it: its score,
// its confidence, and what the service-graph walk added.
type genericRanked struct {
	genericScore
	conf float64
	// evidence, headline and action replace or add to the defaults when
	// the walk moved the entity.
	evidence         []Evidence
	headline, action string
}

// scoreEntities scores each entity by its most deviant series after the
// onset, best first.
func scoreEntities(series []genericSeries, onset int) []genericScore {
	best := map[string]genericScore{}
	own := map[string]float64{}
	for _, s := range series {
		pre := s.v[:onset]
		if detect.Valid(pre) < minOwnHistory {
			continue // its peers judge it (peerScores)
		}
		base := genericBaseline(pre)
		z, first, next := persistentMax(s.v, onset, base, s.sparse)
		if !s.shared {
			own[s.entity] = max(own[s.entity], z)
		}
		rank := math.Min(z, historyBound(detect.Valid(pre)))
		if cur, ok := best[s.entity]; !ok || rank > cur.rank || rank == cur.rank && z > cur.z {
			after := math.NaN()
			if first >= 0 {
				after = (s.v[first] + s.v[next]) / 2 // where it moved most
			}
			best[s.entity] = genericScore{entity: s.entity, series: s.name, z: z, rank: rank, held: heldDeviation(s.v, onset, base), first: first,
				before: base.Median, after: after}
		}
	}
	scores := make([]genericScore, 0, len(best))
	for e, s := range best {
		s.own = own[e]
		scores = append(scores, s)
	}
	sortScores(scores)
	return scores
}

// sortScores orders scores best first: the strongest evidence its history
// allows (rank), then the largest deviation, then the largest of the
// entity's own (not shared) series, then the earliest, then by entity.
func sortScores(scores []genericScore) {
	slices.SortFunc(scores, func(a, b genericScore) int {
		if c := cmp.Compare(b.rank, a.rank); c != 0 {
			return c
		}
		if c := cmp.Compare(b.z, a.z); c != 0 {
			return c
		}
		if c := cmp.Compare(b.own, a.own); c != 0 {
			return c // a node's evidence ties its pods: their own decides
		}
		if c := cmp.Compare(a.first, b.first); c != 0 {
			return c
		}
		return cmp.Compare(a.entity, b.entity)
	})
}

// genericCandidate writes a ranked entity as a metric_anomaly candidate.
func (v *view) genericCandidate(r genericRanked, onset int, label string) *candidate {
	c := &candidate{kind: KindMetricAnomaly, ent: Entity{label: r.entity}, strength: r.conf, generic: true,
		onset: v.time(onset)}
	c.headline = fmt.Sprintf("%s %s anomalous", label, r.entity)
	if r.headline != "" {
		c.headline = r.headline
	}
	c.action = fmt.Sprintf("look at %s %s first: its %s moved most after %s", label, r.entity, r.series, v.time(onset).Format("15:04:05"))
	if r.action != "" {
		c.action = r.action
	}
	switch {
	case r.series == networkGapName && r.first >= 0:
		c.evidence = []Evidence{networkGapEvidence(r.entity, r.before, r.after, r.z, v.time(r.first))}
		if r.headline == "" {
			c.headline = fmt.Sprintf("%s %s: its callers wait on its network", label, r.entity)
		}
		if r.action == "" {
			c.action = fmt.Sprintf("look at %s %s's network first (its node's links, its sidecar or proxy, a policy or a queue in front of it): its callers wait %s a call beyond its own time since %s",
				label, r.entity, fmtSeconds(r.after), v.time(r.first).Format("15:04:05"))
		}
	case r.peers > 0 && r.series != "" && r.first >= 0:
		c.evidence = []Evidence{peerChangeEvidence(r, label, v.time(r.first).Format("15:04:05"))}
	case r.series != "" && r.first >= 0:
		c.evidence = []Evidence{{Signal: r.series, Query: fmt.Sprintf("%s{%s=%q}", strings.SplitN(r.series, "{", 2)[0], label, r.entity),
			Summary: fmt.Sprintf("%.1f robust spreads from its level before %s, from %s", r.z, v.time(onset).Format("15:04:05"), v.time(r.first).Format("15:04:05"))}}
	}
	c.evidence = append(c.evidence, r.evidence...)
	return c
}

// maxFallbackSeries bounds the series the fallback onset reads (BOCPD costs
// a few milliseconds a series).
const maxFallbackSeries = 2000

// likeliestChange is the step where the series' BOCPD change
// probabilities sum highest, ignoring the first and last tenth of the
// window, and the first step and the last two (no room for a before and
// an after there: a series with fewer than three readings before the
// onset is judged against its peers, generic_peers.go, so one is enough;
// a change holds for two readings after it). Of more than maxFallbackSeries series it reads an
// evenly spaced sample of that many (every k-th): the sum's argmax is
// estimated from it rather than not at all, so more data never leaves the
// layer without an onset.
func likeliestChange(series [][]float64) (int, bool) {
	if len(series) == 0 {
		return 0, false
	}
	if len(series) > maxFallbackSeries {
		k := (len(series) + maxFallbackSeries - 1) / maxFallbackSeries
		sample := make([][]float64, 0, maxFallbackSeries)
		for i := 0; i < len(series); i += k {
			sample = append(sample, series[i])
		}
		series = sample
	}
	n := len(series[0])
	sum := make([]float64, n)
	for _, xs := range series {
		for i, p := range detect.ChangeProb(xs, detect.DefaultHazardLambda) {
			if !math.IsNaN(p) {
				sum[i] += p
			}
		}
	}
	// A reading before (a level, judged by the peers where it is the
	// only one), two after (a deviation that holds two steps), at least.
	lo, hi := max(n/10, 1), n-max(n/10, 2)
	best := -1
	for i := lo; i < hi; i++ {
		if best < 0 || sum[i] > sum[best] {
			best = i
		}
	}
	return best, best >= 0 && sum[best] > 0
}

// genericBaseline is a series' robust level and scale before the onset.
// A series that did not move at all there gets a scale of flatShare of its
// level (a ratio held at 1 that falls to 0.7 moved six spreads), or 1 in
// its own unit at a level of zero, as RobustScaler does, rather than the
// floor: a few errors are not a million spreads.
//
// Each side of the level also gets the spread its own tail gives, as a
// normal distribution's: the distance from the level to the tailShare
// quantile on that side over that quantile's z. Where a series spends
// tailShare of its history or more in a second mode (a rarely called
// service's latency quantile, 5 ms most minutes and 28 s in the others),
// the mode it already visits is no anomaly; on a series without such a
// tail the spread stays the middle's.
func genericBaseline(pre []float64) sidedBaseline {
	b := detect.NewBaseline(pre, genericFloor)
	if detect.Quantile(pre, 0.75) == detect.Quantile(pre, 0.25) {
		b.Scale = 1
		if b.Median != 0 {
			b.Scale = flatShare * math.Abs(b.Median)
		}
	}
	return sidedBaseline{Baseline: b,
		up:   (detect.Quantile(pre, 1-tailShare) - b.Median) / tailZ,
		down: (b.Median - detect.Quantile(pre, tailShare)) / tailZ}
}

// tailShare is the share of a history in a tail that sets that side's
// spread; tailZ is the standard normal quantile of 1 - tailShare.
const (
	tailShare = 0.05
	tailZ     = 1.6448536269514722
)

// sidedBaseline is a level with a spread for each side of it, none below
// the middle's.
type sidedBaseline struct {
	detect.Baseline
	up, down float64
}

// Z is how many spreads of its side x lies from the level.
func (b sidedBaseline) Z(x float64) float64 {
	z := b.Baseline.Z(x)
	switch {
	case z > 0 && b.up > b.Scale:
		return (x - b.Median) / b.up
	case z < 0 && b.down > b.Scale:
		return (x - b.Median) / b.down
	}
	return z
}

// flatShare is the scale of a series that held still before the onset, as
// a share of its level.
const flatShare = 0.05

// shortName writes a series as its metric name and the labels that tell
// it from the entity's other series (not the target's).
func shortName(lset labels.Labels, entityLabels ...string) string {
	var parts []string
	lset.Range(func(l labels.Label) {
		switch l.Name {
		case model.MetricNameLabel, "instance", "job", "pod", "namespace", "container", "id", "name", "image", "endpoint", "node":
			return
		}
		if slices.Contains(entityLabels, l.Name) {
			return
		}
		parts = append(parts, fmt.Sprintf("%s=%q", l.Name, l.Value))
	})
	name := lset.Get(model.MetricNameLabel)
	if len(parts) == 0 {
		return name
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}

// heldDeviation is the third quartile of |z| from the onset to the end: a
// change that lasted (or keeps growing, as a leak does) holds it high; a
// blip or a restart that recovered does not.
func heldDeviation(v []float64, onset int, b sidedBaseline) float64 {
	zs := make([]float64, 0, len(v)-onset)
	for _, x := range v[onset:] {
		if z := math.Abs(b.Z(x)); !math.IsNaN(z) {
			zs = append(zs, z)
		}
	}
	return detect.Quantile(zs, 0.75)
}

// persistentMax returns the largest |z| after onset that holds for two
// steps running, the first step it was reached and the second; of a
// sparse series (one reading a sample, genericSeries.sparse), for two
// readings running, whatever the steps between them.
func persistentMax(v []float64, onset int, b sidedBaseline, sparse bool) (float64, int, int) {
	best, at, second := 0.0, -1, -1
	for i := onset; i+1 < len(v); i++ {
		if math.IsNaN(v[i]) {
			continue
		}
		j := i + 1
		for sparse && j+1 < len(v) && math.IsNaN(v[j]) {
			j++
		}
		z := math.Min(math.Abs(b.Z(v[i])), math.Abs(b.Z(v[j])))
		if math.IsNaN(z) {
			continue
		}
		if z > best {
			best, at, second = z, i, j
		}
	}
	return best, at, second
}

// entityLabels are the labels that name the entities of --entity-label
// label: label itself, and for service the OpenTelemetry resource
// attribute service.name as Prometheus translates it, service_name, which
// span metrics and log-derived counters carry (and the other way round),
// so that every modality speaks of the same entity.
func entityLabels(label string) []string {
	switch label {
	case "service":
		return []string{label, "service_name"}
	case "service_name":
		return []string{label, "service"}
	}
	return []string{label}
}

// genericSeriesOf turns stored series into the generic layer's: counters
// (by name: _total, _count, _bucket skipped) become increases, a _sum
// with its _count becomes the mean per event.
func genericSeriesOf(raw []rawSeries, entityLabels []string) []genericSeries {
	type key = seriesKey
	sums, counts, countValues := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	sparse := map[key]bool{}
	var out []genericSeries
	var quantiles []summaryQuantile
	for _, r := range raw {
		name := r.lset.Get(model.MetricNameLabel)
		var ent string
		for _, l := range entityLabels {
			if ent = r.lset.Get(l); ent != "" {
				break
			}
		}
		rest := r.lset.DropReserved(func(n string) bool { return n == model.MetricNameLabel }).String()
		short := shortName(r.lset, entityLabels...)
		switch {
		case strings.HasSuffix(name, "_bucket"):
			continue
		case strings.HasSuffix(name, "_sum"):
			sums[key{strings.TrimSuffix(name, "_sum"), rest, ent, strings.Replace(short, "_sum", "_mean", 1)}] = ownReadings(r, increases(r.v))
			continue
		case strings.HasSuffix(name, "_count"):
			k := key{strings.TrimSuffix(name, "_count"), rest, ent, strings.Replace(short, "_count", "_mean", 1)}
			counts[k], countValues[k], sparse[k] = ownReadings(r, increases(r.v)), r.v, r.held != nil
			out = append(out, genericSeries{entity: ent, name: short, v: ownReadings(r, increases(r.v)), sparse: r.held != nil, count: true})
			continue
		case strings.HasSuffix(name, "_total"):
			out = append(out, genericSeries{entity: ent, name: short, v: ownReadings(r, increases(r.v)), sparse: r.held != nil, count: true,
				log: name == metricLogTemplates || name == metricLogSuccessions || name == metricLogSpanFirst})
			continue
		}
		if q, err := strconv.ParseFloat(r.lset.Get("quantile"), 64); err == nil && q > 0 && q < 1 {
			// A summary's quantile: judged with its _count (thinQuantiles).
			family := labels.NewBuilder(r.lset).Del("quantile").Labels()
			rest := labels.NewBuilder(family).Del(model.MetricNameLabel).Labels().String()
			short := strings.Replace(shortName(family, entityLabels...), name, name+"_mean", 1)
			quantiles = append(quantiles, summaryQuantile{at: len(out), q: q, count: key{name, rest, ent, short}})
		}
		out = append(out, genericSeries{entity: ent, name: short, v: ownReadings(r, r.v), sparse: r.held != nil})
	}
	thinQuantiles(out, quantiles, countValues)
	for k, s := range sums {
		c, ok := counts[k]
		if !ok {
			continue
		}
		mean := nanSeries(len(s))
		for i := range s {
			if c[i] > 0 {
				mean[i] = s[i] / c[i]
			}
		}
		out = append(out, genericSeries{entity: k.ent, name: k.short, v: mean, sparse: sparse[k]})
	}
	slices.SortFunc(out, func(a, b genericSeries) int { return cmp.Compare(a.name, b.name) })
	return slices.DeleteFunc(out, func(s genericSeries) bool { return s.entity == "" })
}

// ownReadings blanks the steps of v (r's values, or their increases) at
// which r's reading is the sample of the step before held over the
// lookback (rawSeries.held), and returns v. A series sampled every minute
// and read every 15 s is then one reading a minute, as it was sampled, not
// four alike: its history counts its samples (historyBound), a change
// holds for two of them, not for two steps of one (persistentMax), and a
// counter's increase is the one from its previous sample, not that and a
// zero at every held step.
func ownReadings(r rawSeries, v []float64) []float64 {
	for i, h := range r.held {
		if h {
			v[i] = math.NaN()
		}
	}
	return v
}

// summaryQuantile is a summary's quantile series among the generic ones:
// its index, its quantile, and the key of its family's _count.
type summaryQuantile struct {
	at    int
	q     float64
	count seriesKey
}

// seriesKey names a series of a family (base) by its other labels (rest),
// entity and short name: a histogram's or summary's _sum and _count.
type seriesKey struct{ base, rest, ent, short string }

// thinQuantiles blanks the readings of summary quantiles that too few
// requests are behind. A quantile q of n observations has n(1-q) of them
// above it; under one, it is the slowest request or so, and says nothing
// of the service's latency (a service called a few times a minute shows
// a p99 of 5 ms one minute and 28 s the next). The observations behind a
// reading are its family's _count's rise from its previous sample to the
// one read with it: the alignment holds a sample for the steps until the
// next, so the rise is taken where the count changes and held with it. A
// reading with no rise known (the count's first sample) and a quantile
// with no _count are left as they are.
func thinQuantiles(out []genericSeries, qs []summaryQuantile, countValues map[seriesKey][]float64) {
	for _, sq := range qs {
		cv, ok := countValues[sq.count]
		if !ok {
			continue
		}
		v := out[sq.at].v
		behind := math.NaN() // the held sample's rise
		prev := math.NaN()   // the count's previous distinct value
		for i := range v {
			switch c := cv[i]; {
			case math.IsNaN(c):
				behind = math.NaN()
			case math.IsNaN(prev):
				prev = c
			case c != prev:
				behind = c - prev
				if c < prev {
					behind = c // a restart counts from zero
				}
				prev = c
			}
			// A count of zero has observed nothing since it started: the
			// quantile is of no request at all (a client library reports
			// NaN there), whatever its rise.
			if !math.IsNaN(v[i]) && (cv[i] == 0 || !math.IsNaN(behind) && behind*(1-sq.q) < 1) {
				v[i] = math.NaN()
			}
		}
	}
}
