package cost

import (
	"context"
	"math"

	"github.com/prometheus/prometheus/model/labels"
)

// chunk accounts the steps [first, last): it reads their activity series
// and, for nodes whose dcgm-exporter names no pod, the pods' GPU
// requests.
func (c *computation) chunk(ctx context.Context, first, last int) error {
	n := last - first
	stepMs := c.step.Milliseconds()
	mint, maxt := c.from+int64(first)*stepMs, c.from+int64(last)*stepMs
	for _, g := range c.gpuList {
		g.units, g.hasGR = g.units[:0], false
	}
	read := func(metric string, util bool, scale float64) error {
		return eachSeries(ctx, c.src, mint, maxt, metric, nil, func(lset labels.Labels, ts []int64, vs []float64) {
			h := lset.Hash()
			s, ok := c.series[h]
			if !ok {
				s = c.resolve(lset, util)
				c.series[h] = s
			}
			if s == nil {
				return
			}
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = math.NaN()
			}
			for i, t := range ts {
				w := (t - mint - 1) / stepMs
				vals[w] = clamp01(vs[i] * scale)
			}
			s.gpu.units = append(s.gpu.units, unit{s: s, vals: vals})
			if !util {
				s.gpu.hasGR, s.gpu.everGR = true, true
			}
		})
	}
	if c.hasGR {
		if err := read(metricGR, false, 1); err != nil {
			return err
		}
	}
	if err := read(metricUtil, true, 0.01); err != nil {
		return err
	}
	for _, nd := range c.nodes {
		nd.attributed = false
		nd.winN, nd.winAct, nd.winPrice = nil, nil, nil
	}
	for _, g := range c.gpuList {
		if !g.hasGR {
			for _, u := range g.units {
				if u.s.pod.pod != "" {
					g.node.attributed = true
				}
			}
			if len(g.units) > 0 {
				g.everUtil = true
			}
			continue
		}
		for _, u := range g.units {
			if !u.s.util && u.s.pod.pod != "" {
				g.node.attributed = true
			}
		}
	}
	for _, nd := range c.nodes {
		nd.everAttr = nd.everAttr || nd.attributed
	}
	for _, g := range c.gpuList {
		c.accountGPU(g, n)
	}
	if c.hasReq {
		return c.accountRequests(ctx, mint, maxt, n)
	}
	return nil
}

func clamp01(v float64) float64 { return math.Min(1, math.Max(0, v)) }

// accountGPU accounts one GPU's steps of the chunk: available; allocated
// to the pods its series name (a MIG instance its share, a time-sliced
// GPU split evenly among its pods); used by the activity. On a node whose
// exporter names no pod, it leaves its steps to accountRequests.
func (c *computation) accountGPU(g *gpuAcc, n int) {
	units := g.units
	if g.hasGR {
		kept := units[:0]
		for _, u := range units {
			if !u.s.util {
				kept = append(kept, u)
			}
		}
		units = kept
	}
	if len(units) == 0 {
		return
	}
	nd := g.node
	stepH := c.step.Hours()
	mig := false
	for _, u := range units {
		if u.s.instance != "" {
			mig = true
		}
	}
	var pods []*seriesInfo
	for w := range n {
		present, act := false, 0.0
		pods = pods[:0]
		for _, u := range units {
			v := u.vals[w]
			if v != v { // NaN: no sample in the step
				continue
			}
			present = true
			if mig && u.s.instance == "" {
				continue
			}
			act = math.Max(act, v)
			if u.s.pod.pod != "" {
				pods = append(pods, u.s)
			}
		}
		if !present {
			continue
		}
		g.available += stepH
		nd.available += stepH
		nd.total += stepH * g.price
		switch {
		case mig:
			c.accountMIG(g, units, w, stepH)
		case len(pods) > 0:
			share := 1 / float64(len(pods))
			for _, s := range pods {
				c.hold(g, "", s.pod, share, share*act, stepH, 1)
			}
		case !nd.attributed:
			if nd.winN == nil {
				nd.winN, nd.winAct, nd.winPrice = make([]float64, n), make([]float64, n), make([]float64, n)
			}
			nd.winN[w]++
			nd.winAct[w] += act
			nd.winPrice[w] += g.price
		}
	}
}

// accountMIG accounts step w of a MIG GPU: each instance that a pod holds
// is allocated its share of the GPU, used by its own activity.
func (c *computation) accountMIG(g *gpuAcc, units []unit, w int, stepH float64) {
	type inst struct {
		share, act float64
		pods       []*seriesInfo
	}
	var insts map[string]*inst
	for _, u := range units {
		v := u.vals[w]
		if v != v || u.s.instance == "" {
			continue
		}
		if insts == nil {
			insts = map[string]*inst{}
		}
		i := insts[u.s.instance]
		if i == nil {
			i = &inst{share: u.s.share}
			insts[u.s.instance] = i
		}
		i.act = math.Max(i.act, v)
		if u.s.pod.pod != "" {
			i.pods = append(i.pods, u.s)
		}
	}
	for _, i := range insts {
		if len(i.pods) == 0 {
			continue
		}
		each := i.share / float64(len(i.pods))
		for _, s := range i.pods {
			c.hold(g, s.instance, s.pod, each, each*i.act, stepH, i.share)
		}
	}
}

// hold adds a step of a pod holding share of GPU g, used (share × activity)
// of it; gpuShare is the share of the GPU its slice is (for Row.GPUs).
func (c *computation) hold(g *gpuAcc, instance string, pod podKey, share, used, stepH, gpuShare float64) {
	nd := g.node
	h := c.holder(nd, pod)
	h.allocated += share * stepH
	h.used += used * stepH
	h.allocCost += share * stepH * g.price
	h.usedCost += used * stepH * g.price
	sk := sliceKey{g.key, instance}
	if h.gpus[sk] < gpuShare {
		h.gpus[sk] = gpuShare
	}
	nd.allocated += share * stepH
	nd.used += used * stepH
	nd.allocCost += share * stepH * g.price
	nd.usedCost += used * stepH * g.price
}

func (c *computation) holder(nd *nodeAcc, pod podKey) *holderAcc {
	k := holderKey{nd.key.cluster, nd.key.node, pod}
	h := c.holders[k]
	if h == nil {
		h = &holderAcc{key: k, gpus: map[sliceKey]float64{}}
		c.holders[k] = h
	}
	return h
}

// accountRequests allocates, on the nodes whose exporter names no pod, the
// GPUs that the pods on the node request (kube-state-metrics), up to the
// GPUs present; their use is the node's activity, up to the allocation.
// Which GPU a pod holds is not known: the pods share the node's figures by
// their requests.
func (c *computation) accountRequests(ctx context.Context, mint, maxt int64, n int) error {
	type podReq struct {
		node string
		vals []float64
	}
	var byNode map[nodeKey][]podKey
	reqs := map[podKey]*podReq{}
	stepMs := c.step.Milliseconds()
	pending := false
	for _, nd := range c.nodes {
		if nd.winN != nil {
			pending = true
		}
	}
	if !pending {
		return nil
	}
	err := eachSeries(ctx, c.src, mint, maxt, metricRequests, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "resource", "nvidia_com_gpu")},
		func(lset labels.Labels, ts []int64, vs []float64) {
			pk := podKey{ksmLabel(lset, "namespace"), ksmLabel(lset, "pod")}
			if pk.ns == "" || pk.pod == "" {
				return
			}
			node := firstOf(ksmLabel(lset, "node"), c.podNode[pk])
			if node == "" {
				return
			}
			r := reqs[pk]
			if r == nil {
				r = &podReq{node: node, vals: make([]float64, n)}
				reqs[pk] = r
				if byNode == nil {
					byNode = map[nodeKey][]podKey{}
				}
				nk := nodeKey{lset.Get("cluster"), node}
				byNode[nk] = append(byNode[nk], pk)
			}
			// Each container's latest request in the step, summed.
			last := map[int64]float64{}
			for i, t := range ts {
				last[(t-mint-1)/stepMs] = vs[i]
			}
			for w, v := range last {
				r.vals[w] += v
			}
		})
	if err != nil {
		return err
	}
	stepH := c.step.Hours()
	for nk, nd := range c.nodes {
		if nd.winN == nil {
			continue
		}
		pks := byNode[nk]
		for w := range n {
			gpus := nd.winN[w]
			if gpus == 0 {
				continue
			}
			total := 0.0
			for _, pk := range pks {
				total += reqs[pk].vals[w]
			}
			if total <= 0 {
				continue
			}
			alloc := math.Min(total, gpus)
			used := math.Min(nd.winAct[w], alloc)
			price := nd.winPrice[w] / gpus
			nd.ksmUsed = true
			for _, pk := range pks {
				r := reqs[pk].vals[w]
				if r <= 0 {
					continue
				}
				f := r / total
				h := c.holder(nd, pk)
				h.fromRequests = true
				h.requested = math.Max(h.requested, r)
				h.allocated += alloc * f * stepH
				h.used += used * f * stepH
				h.allocCost += alloc * f * stepH * price
				h.usedCost += used * f * stepH * price
			}
			nd.allocated += alloc * stepH
			nd.used += used * stepH
			nd.allocCost += alloc * stepH * price
			nd.usedCost += used * stepH * price
		}
	}
	return nil
}
