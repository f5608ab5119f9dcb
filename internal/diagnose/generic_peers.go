package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vigil-obs/vigil/internal/detect"
)

// minOwnHistory is the fewest readings before the onset a series' own
// spread is taken from (scoreEntities); a series with fewer is judged
// against its peers (peerScores).
const minOwnHistory = 3

// peerBound is the largest deviate a change can have among m peers,
// whatever its size in the peers' spreads: were the entity's change and
// its m peers' exchangeable (no fault of its own), the chance that it lies
// beyond all of them, on either side, is 2/(m+1). Ten peers bound a change
// at 0.91 deviates (p 0.18), forty at 1.71 (p 0.049); three or fewer at
// none. It plays historyBound's part for the evidence of peers.
func peerBound(m int) float64 {
	return upperDeviate(math.Min(0.5, peerP(m)))
}

// peerP is the least p-value a change can have among m exchangeable peers.
func peerP(m int) float64 { return math.Min(1, 2/float64(m+1)) }

// peerChangeFloor is the least spread of the peers' changes, in natural log
// units: peers whose changes all agree within 1% of their levels (a flat
// metric) do not make a 2% move of one of them a sure anomaly (genericFloor's
// relative floor, on the log scale).
const peerChangeFloor = 0.01

// peerChange is a reading's change from its series' level before the
// onset, in natural log units of that level: log((x + 0.01b) / 1.01b), so a
// fall to zero is a finite change (about −4.6) and levels of different
// entities compare. NaN where x is NaN or below −0.01b.
func peerChange(x, level float64) float64 {
	r := (x + genericFloor.Rel*level) / ((1 + genericFloor.Rel) * level)
	if !(r > 0) {
		return math.NaN()
	}
	return math.Log(r)
}

// peerJudged is a series whose own history is too short, as its peers
// judge it: its level before, its change per step (NaN where it has no
// reading), its peers' z per step.
type peerJudged struct {
	series genericSeries
	level  float64
	change []float64
	// spread is what its own few readings before say of its spread: their
	// range over d2 (the mean range of two normal readings, in σ); 0 with
	// one reading.
	spread float64
}

// rangeToSigma is d2 of two readings: the mean range of two standard
// normal readings, 2/√π.
const rangeToSigma = 1.1283791670955126

// peerScores scores, entity by entity, the series that have at least one
// reading but fewer than minOwnHistory before the onset (too few to take
// their own spread from) by their change against their peers' changes of
// the same metric at the same steps: each reading after the onset is a
// log-ratio over the series' level before (the median of the readings it
// has), the peers (the other entities' series of that name with a positive
// level before) give the median of their own log-ratios at that step and
// their spread about it (MAD over the steps after the onset, at least
// peerChangeFloor), and the series' deviation from that median in that
// spread, or in its own where its two readings before differ by more
// (their range over d2: a series that swung before is not judged by
// calmer peers), is its peer z. A change every peer shares (a
// load that rose everywhere) moves the median with it and scores nothing.
// A series' z is the largest that holds for two readings running (as
// persistentMax's), its rank that z bounded by peerBound of the fewest
// peers either reading had, its held that of the pairs of readings from
// the onset on (heldPeerDeviation). A series with no positive level before (a component that was
// idle, a count of zero) has no ratio and is not judged: its peers cannot
// tell its duty cycle. An entity's score is its best series'.
func peerScores(series []genericSeries, onset int) map[string]genericScore {
	byName := map[string][]peerJudged{}
	for _, s := range series {
		if onset >= len(s.v) || s.count {
			continue
		}
		pre := s.v[:onset]
		level := detect.Median(pre)
		if !(level > 0) {
			continue
		}
		ch := make([]float64, len(s.v))
		for i, x := range s.v {
			ch[i] = peerChange(x, level)
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range ch[:onset] {
			if !math.IsNaN(c) {
				lo, hi = math.Min(lo, c), math.Max(hi, c)
			}
		}
		byName[s.name] = append(byName[s.name], peerJudged{series: s, level: level, change: ch, spread: math.Max(0, hi-lo) / rangeToSigma})
	}
	best := map[string]genericScore{}
	own := map[string]float64{}
	for _, group := range byName {
		for _, p := range group {
			n := detect.Valid(p.series.v[:onset])
			if n >= minOwnHistory {
				continue // its own history judges it
			}
			zs, peers := peerDeviations(p, group, onset)
			z, first, next := persistentPeerMax(zs, onset, p.series.sparse)
			if first < 0 {
				continue
			}
			m := min(peers[first], peers[next])
			rank := math.Min(z, peerBound(m))
			if !p.series.shared {
				own[p.series.entity] = max(own[p.series.entity], z)
			}
			s := genericScore{entity: p.series.entity, series: p.series.name, z: z, rank: rank,
				held: heldPeerDeviation(zs, onset, p.series.sparse), first: first, before: p.level,
				after: (p.series.v[first] + p.series.v[next]) / 2, peers: m}
			if cur, ok := best[s.entity]; !ok || rank > cur.rank || rank == cur.rank && z > cur.z {
				best[s.entity] = s
			}
		}
	}
	for e, s := range best {
		s.own = own[e]
		best[e] = s
	}
	return best
}

// peerDeviations is p's peer z at each step from the onset on (NaN before
// it and where p or fewer than two peers have a reading), and how many
// peers each step had. The peers' median change is taken at each step (a
// change they all share is no one's); their spread once, the MAD of every
// peer's change about its step's median over all the steps from the onset
// on, so that it holds the peers' own levels' errors (each read against a
// reading or two) and is not one step's dozen values.
func peerDeviations(p peerJudged, group []peerJudged, onset int) ([]float64, []int) {
	n := len(p.change)
	zs := nanSeries(n)
	peers := make([]int, n)
	meds := nanSeries(n)
	others := make([]float64, 0, len(group))
	var resid []float64
	for i := onset; i < n; i++ {
		others = others[:0]
		for _, q := range group {
			if q.series.entity != p.series.entity && !math.IsNaN(q.change[i]) && !sameSeries(p.series, q.series) {
				others = append(others, q.change[i])
			}
		}
		peers[i] = len(others)
		if len(others) < 2 {
			continue
		}
		meds[i] = detect.Median(others)
		for _, c := range others {
			resid = append(resid, c-meds[i])
		}
	}
	scale := detect.NewBaselineMAD(resid, detect.Floor{Abs: peerChangeFloor}).Scale
	scale = math.Max(scale, p.spread)
	for i := onset; i < n; i++ {
		if !math.IsNaN(p.change[i]) && !math.IsNaN(meds[i]) {
			zs[i] = (p.change[i] - meds[i]) / scale
		}
	}
	return zs, peers
}

// sameSeries tells whether a and b are one series that two entities
// report (markShared: a node's column each of its pods carries): the node
// is one peer of the other nodes, not several that agree with it.
func sameSeries(a, b genericSeries) bool {
	return a.shared && b.shared && slices.EqualFunc(a.v, b.v, sameReading)
}

// persistentPeerMax is persistentMax over peer z: the largest |z| after
// the onset that two readings running reach, on the same side, the first
// of them and the second.
func persistentPeerMax(zs []float64, onset int, sparse bool) (float64, int, int) {
	best, at, second := 0.0, -1, -1
	for i := onset; i+1 < len(zs); i++ {
		if math.IsNaN(zs[i]) {
			continue
		}
		j := i + 1
		for sparse && j+1 < len(zs) && math.IsNaN(zs[j]) {
			j++
		}
		if math.IsNaN(zs[j]) || zs[i]*zs[j] <= 0 {
			continue
		}
		if z := math.Min(math.Abs(zs[i]), math.Abs(zs[j])); z > best {
			best, at, second = z, i, j
		}
	}
	return best, at, second
}

// heldPeerDeviation is the third quartile, over the readings from the
// onset on, of the peer z that each reading and the next hold together
// (the lesser |z| of the two, 0 where they differ in sign): how much of
// the change lasted, as heldDeviation's, but of pairs, since with no
// spread of its own one reading is not trusted alone.
func heldPeerDeviation(zs []float64, onset int, sparse bool) float64 {
	a := make([]float64, 0, len(zs)-onset)
	for i := onset; i+1 < len(zs); i++ {
		if math.IsNaN(zs[i]) {
			continue
		}
		j := i + 1
		for sparse && j+1 < len(zs) && math.IsNaN(zs[j]) {
			j++
		}
		switch {
		case math.IsNaN(zs[j]):
		case zs[i]*zs[j] > 0:
			a = append(a, math.Min(math.Abs(zs[i]), math.Abs(zs[j])))
		default:
			a = append(a, 0)
		}
	}
	return detect.Quantile(a, 0.75)
}

// mergePeerScores adds the entities' peer scores to their own-history
// scores: an entity keeps the better of the two (its rank, then its z).
func mergePeerScores(scores []genericScore, peers map[string]genericScore) []genericScore {
	idx := map[string]int{}
	for i, s := range scores {
		idx[s.entity] = i
	}
	for e, p := range peers {
		i, ok := idx[e]
		switch {
		case !ok:
			scores = append(scores, p)
		case p.rank > scores[i].rank || p.rank == scores[i].rank && scores[i].z == 0:
			p.own = max(p.own, scores[i].own)
			scores[i] = p
		}
	}
	sortScores(scores)
	return scores
}

// evidenceKind is what judged an entity's change: its series' own
// history, its peers, or a log test.
type evidenceKind int

const (
	fromOwn evidenceKind = iota
	fromPeers
	fromLogs
)

// peerChangeEvidence writes a peer-judged change.
func peerChangeEvidence(r genericRanked, label, since string) Evidence {
	return Evidence{Signal: r.series, Query: fmt.Sprintf("%s{%s=%q}", strings.SplitN(r.series, "{", 2)[0], label, r.entity),
		Summary: fmt.Sprintf("%.3g → %.3g since %s; too little history of its own, so judged against %d peers' change of the same metric: %.1f of their spreads beyond their median change",
			r.before, r.after, since, r.peers, r.z)}
}
