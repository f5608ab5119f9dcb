package diagnose

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/detect"
	"github.com/vigil-obs/vigil/internal/topology"
)

// Inference symptoms: a latency quantile at latencyRatio times its earlier
// level (and slowZ spreads above it) for pooledRun steps; a queue of at
// least queueMin requests per replica for slowRun steps.
const (
	latencyRatio = 1.5
	queueMin     = 2.0
	// latencyWindow is how many steps of histogram increases a latency
	// quantile pools (2 minutes at 30 s).
	latencyWindow = 4
	// pooledRun is how many steps a value pooled over latencyWindow steps
	// must hold to last slowRun steps of its own: one slow instant (a
	// burst that queued for a few seconds) stays in the pool for
	// latencyWindow steps.
	pooledRun = slowRun + latencyWindow - 1
)

// deployment is an inference workload: its replicas and their series.
type deployment struct {
	ns, name string
	pods     []string // podKey
	nodes    []string
	// queue is the deployment's total waiting requests per step.
	queue []float64
	qSym  int
	// load is the completed requests per step.
	load []float64
	// models are the models it serves: a rollout replaces its pods, and
	// the replaced pods' series are still its own.
	models []string
}

func (d *deployment) workload() string { return d.ns + "/" + d.name }

// findDeployments reads the inference workloads and their symptoms.
func (an *analysis) findDeployments(ctx context.Context) error {
	for _, w := range an.v.topo.Workloads {
		if w.Role != topology.RoleInference {
			continue
		}
		d := &deployment{ns: w.Namespace, name: w.Name, nodes: slices.Clone(w.Nodes), qSym: -1, models: slices.Clone(w.Models)}
		for _, p := range w.Pods {
			d.pods = append(d.pods, podKey(w.Namespace, p))
		}
		an.deps = append(an.deps, d)
		if err := an.inferenceSymptoms(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// podRows returns the rows of a table on the deployment's pods: those it
// has now, and those of the window that served its models in its namespace
// (pods a rollout or an eviction replaced).
func (d *deployment) podRows(t *table) []*row {
	var out []*row
	for _, r := range t.rows {
		ns := r.ent[catalog.KeyNamespace]
		if contains(d.pods, podKey(ns, r.ent[catalog.KeyPod])) ||
			ns == d.ns && r.ent[catalog.KeyModel] != "" && contains(d.models, r.ent[catalog.KeyModel]) {
			out = append(out, r)
		}
	}
	return out
}

// sumRows adds rows step by step (NaN where none has a value).
func sumRows(rows []*row, n int) []float64 {
	out := nanSeries(n)
	for _, r := range rows {
		addInto(out, r.v)
	}
	return out
}

func (an *analysis) inferenceSymptoms(ctx context.Context, d *deployment) error {
	q, err := an.v.sig(ctx, "infer.queue_depth")
	if err != nil {
		return err
	}
	qrows := d.podRows(q)
	d.queue = sumRows(qrows, an.v.n)
	ok, err := an.v.sig(ctx, "infer.request_success")
	if err != nil {
		return err
	}
	d.load = sumRows(d.podRows(ok), an.v.n)
	ent := Entity{catalog.KeyNamespace: d.ns, catalog.KeyWorkload: d.name}
	rec := func(kind string, e episode, resolved *time.Time, summary string) int {
		return an.addSymptom(symptomRec{Symptom: Symptom{Kind: kind, Entity: ent, Since: an.v.time(e.start), Summary: summary, ResolvedAt: resolved},
			nodes: d.nodes, pods: d.pods, workload: d.workload()})
	}
	replicas := float64(max(1, len(qrows)))
	if len(qrows) > 0 {
		ref := reference(d.queue, detect.Floor{Rel: 0.1, Abs: 1})
		bad := bridged(d.queue, func(i int) bool { return d.queue[i] >= queueMin*replicas && d.queue[i] >= 3*ref.Median+queueMin })
		if es := episodes(an.v.n, bad, slowRun); len(es) > 0 {
			e, resolved := an.latest(es, d.queue)
			i := rec(SymptomQueueGrowing, e, resolved, fmt.Sprintf("%s/%s: %.0f requests waiting (earlier %.0f)", d.ns, d.name,
				maxOf(d.queue[e.start:e.end+1]), ref.Median))
			if resolved == nil {
				d.qSym = i
			}
		}
	}
	if err := an.errorRate(ctx, d, rec); err != nil {
		return err
	}
	for _, l := range []struct{ signal, kind, what string }{
		{"infer.ttft", SymptomTTFTHigh, "time to first token"},
		{"infer.e2e_latency", SymptomInferenceLatencyHigh, "request latency"},
	} {
		p95, err := an.quantile(ctx, d, l.signal, 0.95)
		if err != nil {
			return err
		}
		if p95 == nil {
			continue
		}
		ref := reference(p95, detect.Floor{Rel: 0.05, Abs: 0.001})
		if ref.N == 0 {
			continue
		}
		bad := bridged(p95, func(i int) bool { return p95[i] >= latencyRatio*ref.Median && ref.Z(p95[i]) >= slowZ })
		if es := episodes(an.v.n, bad, pooledRun); len(es) > 0 {
			e, resolved := an.latest(es, p95)
			rec(l.kind, e, resolved, fmt.Sprintf("%s/%s: p95 %s %.2fs (earlier %.2fs)", d.ns, d.name, l.what,
				maxOf(p95[e.start:e.end+1]), ref.Median))
		}
	}
	return nil
}

// Error rate: the share of requests that end in error (vLLM's
// finished_reason "abort") over latencyWindow steps, at least errorShare
// and three times its earlier level, for pooledRun steps.
const errorShare = 0.05

// errorRate finds requests ending in error on the deployment.
func (an *analysis) errorRate(ctx context.Context, d *deployment, rec func(string, episode, *time.Time, string) int) error {
	t, err := an.v.sig(ctx, "infer.request_success", "finished_reason")
	if err != nil {
		return err
	}
	rows := d.podRows(t)
	all, bad := nanSeries(an.v.n), nanSeries(an.v.n)
	for _, r := range rows {
		addInto(all, r.v)
		if r.extra["finished_reason"] == "abort" {
			addInto(bad, r.v)
		}
	}
	share := nanSeries(an.v.n)
	for i := range share {
		if tot := sumOver(all, i-latencyWindow+1, i); tot > 0 {
			share[i] = sumOver(bad, i-latencyWindow+1, i) / tot
		}
	}
	ref := reference(share, detect.Floor{Rel: 0.1, Abs: 0.005})
	if ref.N == 0 {
		return nil
	}
	es := episodes(an.v.n, func(i int) bool { return share[i] >= errorShare && share[i] >= 3*ref.Median }, pooledRun)
	if len(es) == 0 {
		return nil
	}
	e, resolved := an.latest(es, share)
	rec(SymptomErrorRateHigh, e, resolved, fmt.Sprintf("%s/%s: %.0f%% of requests aborted (earlier %.1f%%)", d.ns, d.name,
		100*maxOf(share[e.start:e.end+1]), 100*ref.Median))
	return nil
}

// quantile returns a deployment's latency quantile per step from a
// histogram signal, pooling its replicas' bucket increases over
// latencyWindow steps (what histogram_quantile over rate[2m] gives).
func (an *analysis) quantile(ctx context.Context, d *deployment, signal string, q float64) ([]float64, error) {
	t, err := an.v.sig(ctx, signal, "le")
	if err != nil {
		return nil, err
	}
	rows := d.podRows(t)
	if len(rows) == 0 {
		return nil, nil
	}
	byLE := map[string][]float64{}
	for _, r := range rows {
		le := r.extra["le"]
		if byLE[le] == nil {
			byLE[le] = nanSeries(an.v.n)
		}
		addInto(byLE[le], r.v)
	}
	type bucket struct {
		ub float64
		v  []float64
	}
	var bs []bucket
	for le, v := range byLE {
		ub, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{ub, v})
	}
	slices.SortFunc(bs, func(a, b bucket) int {
		switch {
		case a.ub < b.ub:
			return -1
		case a.ub > b.ub:
			return 1
		}
		return 0
	})
	out := nanSeries(an.v.n)
	for i := range out {
		buckets := make(promql.Buckets, 0, len(bs))
		for _, b := range bs {
			buckets = append(buckets, promql.Bucket{UpperBound: b.ub, Count: sumOver(b.v, i-latencyWindow+1, i)})
		}
		// Fewer than 1/(1-q) requests leave no request beyond the
		// quantile: it would be the slowest one's bucket.
		if len(buckets) == 0 || buckets[len(buckets)-1].Count < 1/(1-q) {
			continue
		}
		v, _, _, _, _, _ := promql.BucketQuantile(q, buckets)
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[i] = v
		}
	}
	return out, nil
}

// hypCapacity: the deployment's queue grows on most of its replicas at
// once while they are as busy as they get: more work arrives than they
// complete. One replica's queue alone is that replica's trouble.
func hypCapacity(ctx context.Context, an *analysis) ([]*candidate, error) {
	q, err := an.v.sig(ctx, "infer.queue_depth")
	if err != nil {
		return nil, err
	}
	var out []*candidate
	for _, d := range an.deps {
		// The replicas that still run: a pod replaced earlier in the
		// window queues nothing now.
		rows := slices.DeleteFunc(d.podRows(q), func(r *row) bool { _, l := lastValid(r.v); return l < an.v.n-3 })
		if len(rows) == 0 {
			continue
		}
		queued, first := 0, -1
		for _, r := range rows {
			es := episodes(an.v.n, bridged(r.v, func(i int) bool { return r.v[i] >= queueMin }), slowRun)
			if len(es) == 0 {
				continue
			}
			if _, resolved := an.latest(es, r.v); resolved != nil {
				continue // the queue drained: a burst it absorbed
			}
			es = es[len(es)-1:]
			queued++
			if first < 0 || es[0].start < first {
				first = es[0].start
			}
		}
		loadRef := reference(d.load, detect.Floor{Rel: 0.05, Abs: 0.1})
		loadNow, _ := lastValid(d.load)
		loadUp := loadRef.N > 0 && loadRef.Median > 0 && loadNow >= 1.2*loadRef.Median
		c := &candidate{kind: KindCapacitySaturated, ent: Entity{catalog.KeyNamespace: d.ns, catalog.KeyWorkload: d.name},
			workload: d.workload(), nodes: d.nodes, pods: d.pods}
		switch {
		case 4*queued >= 3*len(rows):
			c.strength = 0.8
		case 2*queued > len(rows):
			c.strength = 0.5
		case loadUp && d.qSym < 0:
			c.strength = 0.3
			first = an.loadRise(d, loadRef)
		default:
			continue
		}
		c.onset = an.v.time(max(first, 0))
		c.headline = fmt.Sprintf("%s/%s capacity saturated", d.ns, d.name)
		c.action = fmt.Sprintf("scale %s/%s out (more replicas) or shed load; check the autoscaler's limits", d.ns, d.name)
		c.evidence = append(c.evidence, Evidence{Signal: "vllm:num_requests_waiting", Query: an.v.query("infer.queue_depth", ""),
			Summary: fmt.Sprintf("requests queue on %d of %d replicas", queued, len(rows))})
		if loadRef.Median > 0 {
			c.evidence = append(c.evidence, Evidence{Signal: "vllm:request_success_total", Query: an.v.query("infer.request_success", ""),
				Summary: fmt.Sprintf("completed requests %.0f%% of their earlier rate", 100*loadNow/loadRef.Median)})
		}
		out = append(out, c)
	}
	return out, nil
}

// loadRise returns the first step the deployment's load stays 20% over its
// reference.
func (an *analysis) loadRise(d *deployment, ref detect.Baseline) int {
	es := episodes(an.v.n, func(i int) bool { return d.load[i] >= 1.2*ref.Median }, slowRun)
	if len(es) == 0 {
		return 0
	}
	return es[0].start
}

// preemptUnits is the evidence of a replica preempting sequences.
const preemptUnits = 4.0

// recentLow returns the least of a series' last k readings (NaN with
// none): what held through all of them.
func recentLow(v []float64, k int) float64 {
	var pts []float64
	for i := len(v) - 1; i >= 0 && len(pts) < k; i-- {
		if !math.IsNaN(v[i]) {
			pts = append(pts, v[i])
		}
	}
	return minOf(pts)
}

// hypKVCache: a replica's KV cache filled up against its own earlier
// level, in proportion to how full it is, and more so while it preempts
// sequences.
func hypKVCache(ctx context.Context, an *analysis) ([]*candidate, error) {
	kv, err := an.v.sig(ctx, "infer.kv_cache_usage")
	if err != nil {
		return nil, err
	}
	pre, err := an.v.sig(ctx, "infer.preemptions")
	if err != nil {
		return nil, err
	}
	preBy := pre.byEntity()
	var out []*candidate
	for _, d := range an.deps {
		rows := d.podRows(kv)
		nows := make([]float64, len(rows))
		for i, r := range rows {
			nows[i] = recentLow(r.v, peerRun)
		}
		for i, r := range rows {
			// Fuller than the other replicas too: every replica filling
			// up at once is the deployment's capacity, not one cache.
			others := append(slices.Clone(nows[:i]), nows[i+1:]...)
			if len(others) > 0 {
				peers := detect.NewBaseline(others, detect.Floor{Rel: 0.02, Abs: 0.02})
				if units(peers.Z(nows[i])) == 0 {
					continue
				}
			}
			// Filled up against its own earlier level, and full now (the
			// last two readings): a replica that always ran fuller, or a
			// prefill that filled it for one scrape, is no news.
			ref := reference(r.v, detect.Floor{Rel: 0.02, Abs: 0.01})
			now := recentLow(r.v, peerRun)
			rise, sat := units(ref.Z(now)), saturationUnits(now)
			if rise == 0 || sat == 0 {
				continue
			}
			u := min(rise, sat) + sat
			onset := firstAbove(r.v, 0, ref.Median+noiseZ*ref.Scale)
			ns, pod := r.ent[catalog.KeyNamespace], r.ent[catalog.KeyPod]
			c := an.podCandidate(KindKVCacheExhausted, ns, pod)
			c.workload = d.workload()
			c.onset = an.v.time(max(onset, 0))
			c.headline = fmt.Sprintf("%s/%s KV cache exhausted", ns, pod)
			c.action = fmt.Sprintf("cap the context length or concurrent sequences of %s (--max-model-len, --max-num-seqs), or add replicas", d.name)
			c.evidence = append(c.evidence, Evidence{Signal: "vllm:kv_cache_usage_perc", Query: an.v.query("infer.kv_cache_usage", fmt.Sprintf("pod=%q", pod)),
				Summary: fmt.Sprintf("KV cache %.0f%% full from %s (earlier %.0f%%)", 100*now, an.v.time(max(onset, 0)).Format("15:04:05"), 100*ref.Median)})
			if p := preBy[entityKey(r.ent)]; p != nil {
				if a := activityOf(p.v[max(onset, 0):], 0); a.steps >= 2 {
					// vLLM preempts running sequences only when the cache
					// has no room left: its own word of exhaustion.
					u += preemptUnits
					c.direct = true
					c.evidence = append(c.evidence, Evidence{Signal: "vllm:num_preemptions_total", Query: an.v.query("infer.preemptions", fmt.Sprintf("pod=%q", pod)),
						Summary: fmt.Sprintf("%.0f preemptions in %d steps", a.total, a.steps)})
				}
			}
			c.strength = strengthOf(u)
			out = append(out, c)
		}
	}
	return out, nil
}
