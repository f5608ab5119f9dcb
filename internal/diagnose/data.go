package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/topology"
)

// lookback is how far back from a step the engine takes a series' last
// sample: three scrapes of dcgm-exporter's default 30s, or three steps
// when the engine reads coarser data (5-minute aggregates at a 5m step).
// A series with no sample in it is absent at that step (a vanished
// target), whatever the store's staleness handling: files and simulations
// carry no staleness markers.
const lookback = 90 * time.Second

// lookbackFor is the lookback at a step.
func lookbackFor(step time.Duration) time.Duration { return max(lookback, 3*step) }

// view is the data of one diagnosis: every series the engine reads, aligned
// on the same steps, with canonical entities.
type view struct {
	e     *Engine
	src   Source
	at    time.Time
	start time.Time
	step  time.Duration
	n     int
	have  catalog.MetricSet
	topo  *topology.Topology
	// addrs maps host addresses and instances to node names.
	addrs map[string]string

	mu    sync.Mutex
	cache map[string]*table
	warn  []string
	// resolved caches catalog resolutions by vocabulary and labels without
	// the metric name: a GPU's thirty dcgm-exporter metrics share them.
	resolved map[resolveKey]catalog.Resolution
	// cover is the steps the traces cover (traceCoverage), once
	// coverDone.
	cover     []bool
	coverDone bool
}

// resolveKey names a label set of a vocabulary, metric name aside, by its
// 64-bit hash (a collision among a million series is about 1e-8 likely).
type resolveKey struct {
	voc  catalog.Vocabulary
	hash uint64
}

// resolve is catalog.Resolve, cached per label set.
func (v *view) resolve(voc catalog.Vocabulary, lset labels.Labels) catalog.Resolution {
	rest := lset.DropReserved(func(n string) bool { return n == model.MetricNameLabel })
	k := resolveKey{voc: voc, hash: rest.Hash()}
	v.mu.Lock()
	if v.resolved == nil {
		v.resolved = map[resolveKey]catalog.Resolution{}
	}
	res, ok := v.resolved[k]
	v.mu.Unlock()
	if ok {
		return res
	}
	res = v.e.opts.Catalog.Resolve(voc, lset)
	v.mu.Lock()
	v.resolved[k] = res
	v.mu.Unlock()
	return res
}

// table is one metric as the engine reads it: a row per entity (and per
// value of the metric's meaningful labels).
type table struct {
	metric string
	rows   []*row
}

// row is one entity's series, aligned on the view's steps; NaN is no
// sample.
type row struct {
	ent Entity
	// extra holds the meaningful non-entity labels (xid, reason,
	// condition, status, le, ...).
	extra map[string]string
	v     []float64
}

// times returns the steps' instants.
func (v *view) time(i int) time.Time { return v.start.Add(time.Duration(i) * v.step) }

// warnf records a warning once.
func (v *view) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	v.mu.Lock()
	defer v.mu.Unlock()
	if !slices.Contains(v.warn, msg) {
		v.warn = append(v.warn, msg)
	}
}

// rawSeries is one stored series aligned on the steps.
type rawSeries struct {
	lset labels.Labels
	v    []float64
	// held marks the steps whose reading is the sample of the step before,
	// held over the lookback, where the series was sampled coarser than
	// the steps (its median gap between samples is longer than a step:
	// 1-minute rows read every 15 s); nil where it was not. Such a series
	// has one reading a sample, not one a step (ownReadings).
	held []bool
}

// fetch reads every series of a metric over the view and aligns it: the
// value at step i is the last sample in (t_i - lookback, t_i]; a staleness
// marker ends a series until its next sample.
func (v *view) fetch(ctx context.Context, metric string) ([]rawSeries, error) {
	return v.selectAligned(ctx, metric, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, metric))
}

// selectAligned reads every series the matchers select and aligns them
// (what names them in errors).
func (v *view) selectAligned(ctx context.Context, what string, ms ...*labels.Matcher) ([]rawSeries, error) {
	metric := what
	startMs := v.start.Add(-lookbackFor(v.step)).UnixMilli()
	endMs := v.at.UnixMilli()
	q, err := v.src.Querier(startMs, endMs)
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	ss := q.Select(ctx, false, nil, ms...)
	stepMs := v.step.Milliseconds()
	lbMs := lookbackFor(v.step).Milliseconds()
	first := v.start.UnixMilli()
	var out []rawSeries
	var it chunkenc.Iterator
	var gaps []int64 // a series' gaps between samples, reused
	for ss.Next() {
		s := ss.At()
		vals := make([]float64, v.n)
		for i := range vals {
			vals[i] = math.NaN()
		}
		it = s.Iterator(it)
		var held []bool // made at the first step that holds a sample
		gaps = gaps[:0]
		// Walk the samples once: each sample is the latest for the steps
		// from its own to the next sample's (or lookback after it). i is
		// the first step not yet passed, at ti; no division per sample.
		var lastT int64 = math.MinInt64
		lastV := math.NaN()
		i, ti := 0, first
		fill := func(uptoT int64) {
			// Steps in [lastT, min(uptoT, lastT+lookback)) take lastV; the
			// second and later of them hold it.
			if lastT != math.MinInt64 && !value.IsStaleNaN(lastV) {
				for lim, from := min(uptoT, lastT+lbMs), i; i < v.n && ti < lim; i, ti = i+1, ti+stepMs {
					vals[i] = lastV
					if i > from {
						if held == nil {
							held = make([]bool, v.n)
						}
						held[i] = true
					}
				}
			}
			for ; i < v.n && ti < uptoT; i, ti = i+1, ti+stepMs {
			}
		}
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue
			}
			t, f := it.At()
			if t > endMs {
				break
			}
			fill(t)
			if lastT != math.MinInt64 {
				gaps = append(gaps, t-lastT)
			}
			lastT, lastV = t, f
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", metric, err)
		}
		fill(endMs + 1)
		if held != nil && !coarser(gaps, stepMs) {
			held = nil
		}
		out = append(out, rawSeries{lset: s.Labels(), v: vals, held: held})
	}
	if err := ss.Err(); err != nil {
		return nil, fmt.Errorf("select %s: %w", metric, err)
	}
	if slices.ContainsFunc(out, func(r rawSeries) bool { return traceDerived(r.lset.Get(model.MetricNameLabel)) }) {
		if err := v.blankUncovered(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// coarser tells whether a series whose samples are gaps (ms) apart was
// sampled coarser than steps of stepMs: its own interval, the median gap,
// is two steps or more to the nearest step, so that each sample is read
// at several steps (a scrape that came late now and then, at about a
// step, is not). It reorders gaps.
func coarser(gaps []int64, stepMs int64) bool {
	if len(gaps) == 0 {
		return false
	}
	slices.Sort(gaps)
	n := len(gaps)
	median2 := gaps[(n-1)/2] + gaps[n/2] // twice the median
	return median2 >= 3*stepMs
}

// readMode says how a metric's series become rows.
type readMode int

const (
	// asGauge keeps values as they are; series of one row combine by max.
	asGauge readMode = iota
	// asIncrease turns a counter into its increase since the previous step
	// (a reset counts from zero); series of one row add up.
	asIncrease
)

// spec asks for one metric: how to read it, at which entity level, and
// which of its labels to keep apart.
type spec struct {
	metric string
	mode   readMode
	level  catalog.Level
	keep   []string
	// where keeps only series whose label matches (label=value).
	where map[string]string
	// scale converts to the canonical unit (0: 1).
	scale float64
	// blank turns DCGM's blank sentinels into NaN.
	blank bool
	// splits counts the source's labels below its entity (cpu, mode,
	// xid, le, ...): each multiplies the series one entity has.
	splits int
}

func (s spec) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%s|%s|%g", s.metric, s.mode, s.level, strings.Join(s.keep, ","), s.scale)
	for _, k := range sortedKeys(s.where) {
		fmt.Fprintf(&b, "|%s=%s", k, s.where[k])
	}
	return b.String()
}

// read returns the metric's table, reading it on first use. A metric the
// store does not hold gives an empty table.
func (v *view) read(ctx context.Context, s spec) (*table, error) {
	k := s.key()
	v.mu.Lock()
	t, ok := v.cache[k]
	v.mu.Unlock()
	if ok {
		return t, nil
	}
	t = &table{metric: s.metric}
	if v.have.Has(s.metric) {
		raw, err := v.fetch(ctx, s.metric)
		if err != nil {
			return nil, err
		}
		t.rows = v.rows(s, raw)
	}
	v.mu.Lock()
	v.cache[k] = t
	v.mu.Unlock()
	return t, nil
}

// prefetch reads specs concurrently (a remote store answers each with a
// round trip), the likely largest first: reads run on fewer goroutines
// than there are reads, and a large read started last runs alone while
// the other cores idle (longest-processing-time-first scheduling).
func (v *view) prefetch(ctx context.Context, specs []spec) error {
	type costed struct {
		spec
		cost float64
	}
	entities := v.entityCounts()
	order := make([]costed, len(specs))
	for i, s := range specs {
		order[i] = costed{s, seriesEstimate(s, entities)}
	}
	slices.SortStableFunc(order, func(a, b costed) int { return cmp.Compare(b.cost, a.cost) })
	for i := range order {
		specs[i] = order[i].spec
	}
	sem := make(chan struct{}, 4)
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		if !v.have.Has(s.metric) {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, errs[i] = v.read(ctx, s)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// splitFactor is the order of magnitude of the values one label below the
// entity takes (CPUs, modes, buckets, reasons): an estimate, used only to
// order reads.
const splitFactor = 8

// entityCounts counts the topology's entities by level (nodes, GPUs,
// pods), for seriesEstimate.
func (v *view) entityCounts() map[catalog.Level]int {
	n := map[catalog.Level]int{catalog.LevelNode: len(v.topo.Nodes)}
	for _, nd := range v.topo.Nodes {
		n[catalog.LevelGPU] += len(nd.GPUs)
		n[catalog.LevelPod] += len(nd.Pods)
	}
	n[catalog.LevelGPUInstance], n[catalog.LevelContainer] = n[catalog.LevelGPU], n[catalog.LevelPod]
	return n
}

// seriesEstimate is about how many series s selects: its level's entities
// (1 for a level the topology does not count), times splitFactor for each
// label below the entity.
func seriesEstimate(s spec, entities map[catalog.Level]int) float64 {
	return float64(max(entities[s.level], 1)) * math.Pow(splitFactor, float64(s.splits))
}

// rows resolves raw series to entities and combines those of one row.
func (v *view) rows(s spec, raw []rawSeries) []*row {
	cat := v.e.opts.Catalog
	voc, _ := cat.Vocabulary(s.metric)
	keys := catalog.LevelKeys(s.level)
	byKey := map[string]*row{}
	var order []string
	for _, r := range raw {
		if !matches(r.lset, s.where) {
			continue
		}
		res := v.resolve(voc, r.lset)
		ent := Entity{}
		for _, k := range keys {
			if k == catalog.KeyUUID {
				continue
			}
			if val := res.Entity[k]; val != "" {
				ent[k] = val
			}
		}
		if slices.Contains(keys, catalog.KeyNode) {
			node := res.Entity[catalog.KeyNode]
			if mapped, ok := v.addrs[node]; ok {
				node = mapped
			}
			if node == "" {
				node = v.nodeOfAddress(res.Attributes[catalog.AttrNodeAddress])
			}
			if node == "" {
				continue
			}
			ent[catalog.KeyNode] = node
		}
		if len(ent) == 0 {
			continue
		}
		extra := map[string]string{}
		for _, l := range s.keep {
			extra[l] = r.lset.Get(l)
		}
		vals := r.v
		if s.blank {
			for i, x := range vals {
				if catalog.IsBlank(x) {
					vals[i] = math.NaN()
				}
			}
		}
		if s.mode == asIncrease {
			increasesInPlace(vals)
		}
		k := entityKey(ent) + "|" + entityKey(Entity(extra))
		dst := byKey[k]
		if dst == nil {
			// raw is this call's own: its values become the row.
			byKey[k] = &row{ent: ent, extra: extra, v: vals}
			order = append(order, k)
			continue
		}
		combine(dst.v, vals, s.mode)
	}
	slices.Sort(order)
	out := make([]*row, 0, len(order))
	for _, k := range order {
		r := byKey[k]
		if s.scale != 0 && s.scale != 1 {
			for i := range r.v {
				r.v[i] *= s.scale
			}
		}
		out = append(out, r)
	}
	return out
}

func matches(lset labels.Labels, where map[string]string) bool {
	for k, want := range where {
		if lset.Get(k) != want {
			return false
		}
	}
	return true
}

// nodeOfAddress maps an address (IP or IP:port) to its node.
func (v *view) nodeOfAddress(a string) string {
	if a == "" {
		return ""
	}
	if n, ok := v.addrs[a]; ok {
		return n
	}
	if h, _, err := net.SplitHostPort(a); err == nil {
		return v.addrs[h]
	}
	return ""
}

// increases turns counter values into per-step increases; a decrease is a
// reset and counts from zero.
func increases(vals []float64) []float64 {
	out := make([]float64, len(vals))
	prev := math.NaN()
	for i, x := range vals {
		switch {
		case math.IsNaN(x) || math.IsNaN(prev):
			out[i] = math.NaN()
		case x >= prev:
			out[i] = x - prev
		default:
			out[i] = x
		}
		prev = x
	}
	return out
}

// increasesInPlace is increases writing over vals.
func increasesInPlace(vals []float64) {
	prev := math.NaN()
	for i, x := range vals {
		switch {
		case math.IsNaN(x) || math.IsNaN(prev):
			vals[i] = math.NaN()
		case x >= prev:
			vals[i] = x - prev
		}
		prev = x
	}
}

func combine(dst, src []float64, mode readMode) {
	for i, x := range src {
		switch {
		case math.IsNaN(x):
		case math.IsNaN(dst[i]):
			dst[i] = x
		case mode == asGauge:
			dst[i] = max(dst[i], x)
		default:
			dst[i] += x
		}
	}
}

// entityKey is a stable string of an entity.
func entityKey(e Entity) string {
	var b strings.Builder
	for _, k := range sortedKeys(e) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(e[k])
	}
	return b.String()
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// byEntity indexes a table's rows by entity key (rows with extra labels:
// the first one).
func (t *table) byEntity() map[string]*row {
	out := make(map[string]*row, len(t.rows))
	for _, r := range t.rows {
		k := entityKey(r.ent)
		if _, ok := out[k]; !ok {
			out[k] = r
		}
	}
	return out
}

// gpuKey is the entity key of a GPU.
func gpuKey(node, gpu string) string {
	return entityKey(Entity{catalog.KeyNode: node, catalog.KeyGPU: gpu})
}

// nodeKey is the entity key of a node.
func nodeKey(node string) string { return entityKey(Entity{catalog.KeyNode: node}) }

// podKey is the entity key of a pod.
func podKey(ns, pod string) string {
	return entityKey(Entity{catalog.KeyNamespace: ns, catalog.KeyPod: pod})
}

// sig reads a catalog signal from its first source the store holds, in the
// signal's canonical unit: a counter as its increase per step, anything
// else as is. keep names source labels whose values stay apart (xid,
// condition, reason, ...). A signal with no source in the store gives an
// empty table.
func (v *view) sig(ctx context.Context, name string, keep ...string) (*table, error) {
	if !v.e.declared[name] {
		// A typo, or a detector reading what its kind does not declare:
		// fail loudly rather than switch the detector off.
		return nil, fmt.Errorf("%w: %q is read but no kind or symptom of internal/kinds declares it", errUndeclared, name)
	}
	s, ok := v.sigSpec(name, keep...)
	if !ok {
		return &table{metric: name}, nil
	}
	return v.read(ctx, s)
}

// sigs reads several signals (no labels kept apart), in order.
func (v *view) sigs(ctx context.Context, names ...string) ([]*table, error) {
	out := make([]*table, len(names))
	for i, n := range names {
		t, err := v.sig(ctx, n)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// sigSpec is the spec that reads a signal, false when no source of it is
// in the store.
func (v *view) sigSpec(name string, keep ...string) (spec, bool) {
	sig, ok := v.e.opts.Catalog.Signal(name)
	if !ok {
		return spec{}, false
	}
	for _, src := range sig.Sources {
		t := src.TrueType(*sig)
		metric := src.Metric
		switch t {
		case catalog.Histogram:
			metric += "_bucket"
		case catalog.Summary:
			metric += "_count"
		}
		if !v.have.Has(metric) {
			continue
		}
		// A histogram's buckets and a summary's count are counters too.
		mode := asGauge
		if t == catalog.Counter || t == catalog.Histogram || t == catalog.Summary {
			mode = asIncrease
		}
		splits := len(src.Labels)
		if t == catalog.Histogram {
			splits++ // le
		}
		return spec{metric: metric, mode: mode, level: sig.Level, keep: keep, scale: src.Factor(),
			blank: src.Vocabulary == catalog.DCGMExporter, splits: splits}, true
	}
	return spec{}, false
}

// query returns PromQL a reader can run to see a signal, for evidence.
func (v *view) query(name, matchers string) string {
	s, ok := v.sigSpec(name)
	if !ok {
		return ""
	}
	sel := s.metric
	if matchers != "" {
		sel += "{" + matchers + "}"
	}
	if s.mode == asIncrease {
		return "increase(" + sel + "[5m])"
	}
	return sel
}

// specs returns the specs of every read the store can answer.
func (v *view) specs() []spec {
	var out []spec
	for _, r := range v.e.reads {
		if r.Lazy {
			continue
		}
		if s, ok := v.sigSpec(r.Signal, r.Keep...); ok {
			out = append(out, s)
		}
	}
	return out
}
