package cost

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// warnings collects one sentence per problem, with the entities it
// concerns.
type warnings struct {
	order []string
	about map[string][]string
}

func (w *warnings) add(msg, entity string) {
	if w.about == nil {
		w.about = map[string][]string{}
	}
	if _, ok := w.about[msg]; !ok {
		w.order = append(w.order, msg)
	}
	if entity != "" && !slices.Contains(w.about[msg], entity) {
		w.about[msg] = append(w.about[msg], entity)
	}
}

func (w *warnings) list() []string {
	out := make([]string, 0, len(w.order))
	for _, m := range w.order {
		if es := w.about[m]; len(es) > 0 {
			m += " (" + listSome(es, 5) + ")"
		}
		out = append(out, m)
	}
	return out
}

// report assembles the Report from the accounts.
func (c *computation) report() *Report {
	r := &Report{From: time.UnixMilli(c.from).UTC(), To: time.UnixMilli(c.to).UTC(), Step: c.step}
	if c.opts.Prices != nil {
		r.Currency = c.opts.Prices.Currency
	} else {
		r.Currency = strings.ToUpper(c.opts.Currency)
	}
	clusters := map[string]*Cluster{}
	for _, nd := range c.nodes {
		r.GPUHours.Available += nd.available
		r.GPUHours.Allocated += nd.allocated
		r.GPUHours.Used += nd.used
		r.Cost.Total += nd.total
		r.Cost.Allocated += nd.allocCost
		r.Cost.Idle += nd.allocCost - nd.usedCost
		if c.clusters {
			cl := clusters[nd.key.cluster]
			if cl == nil {
				cl = &Cluster{Cluster: nd.key.cluster}
				clusters[nd.key.cluster] = cl
			}
			cl.GPUHours.Available += nd.available
			cl.GPUHours.Allocated += nd.allocated
			cl.GPUHours.Used += nd.used
			cl.Cost.Total += nd.total
			cl.Cost.Allocated += nd.allocCost
			cl.Cost.Idle += nd.allocCost - nd.usedCost
		}
	}
	r.Cost.Unallocated = r.Cost.Total - r.Cost.Allocated
	for _, nd := range c.nodes {
		n := NodeCost{Cluster: nd.key.cluster, Node: nd.key.node, GPUs: nd.gpus,
			GPUHours: Hours{Available: nd.available, Allocated: nd.allocated, Used: nd.used},
			Cost:     Costs{Total: nd.total, Allocated: nd.allocCost, Idle: nd.allocCost - nd.usedCost, Unallocated: nd.total - nd.allocCost}}
		if nd.available > 0 {
			n.Hourly = nd.total / nd.available
		}
		r.Nodes = append(r.Nodes, n)
	}
	slices.SortFunc(r.Nodes, func(a, b NodeCost) int { return cmpString(a.Cluster+"\x00"+a.Node, b.Cluster+"\x00"+b.Node) })
	for _, name := range sortedKeys(clusters) {
		cl := clusters[name]
		cl.Cost.Unallocated = cl.Cost.Total - cl.Cost.Allocated
		if cl.GPUHours.Available > 0 {
			cl.Allocation = cl.GPUHours.Allocated / cl.GPUHours.Available
			cl.Utilization = cl.GPUHours.Used / cl.GPUHours.Available
		}
		r.Clusters = append(r.Clusters, *cl)
	}
	r.By = c.rows()
	c.finalWarnings()
	r.Warnings = c.warn.list()
	return r
}

// rows groups the accounts by Options.By.
func (c *computation) rows() []Row {
	// A pod whose server counts tokens serves the model it names, where
	// the topology did not tell.
	c.podModel = map[podKey]string{}
	for _, tc := range c.tokens {
		if tc.pod.pod != "" && tc.model != "" {
			c.podModel[tc.pod] = tc.model
		}
	}
	rows := map[string]*Row{}
	slices := map[*Row]map[sliceKey]float64{}
	get := func(e map[string]string) *Row {
		k := entityKey(e)
		row := rows[k]
		if row == nil {
			row = &Row{Entity: e}
			rows[k] = row
			slices[row] = map[sliceKey]float64{}
		}
		return row
	}
	if c.opts.By == ByNode {
		for _, nd := range c.nodes {
			row := get(c.withCluster(map[string]string{"node": nd.key.node}, nd.key.cluster))
			row.GPUs += float64(nd.gpus)
			row.GPUHoursAllocated += nd.allocated
			row.GPUHoursUsed += nd.used
			row.Cost += nd.total
			row.IdleCost += nd.allocCost - nd.usedCost
			row.allocCost += nd.allocCost
			row.usedCost += nd.usedCost
		}
	} else {
		for _, h := range c.holders {
			e := c.entityOf(h.key.cluster, h.key.node, h.key.pod, "")
			if e == nil {
				continue
			}
			row := get(e)
			if h.fromRequests {
				row.GPUs += h.requested
			}
			for k, s := range h.gpus {
				slices[row][k] = max(slices[row][k], s)
			}
			row.GPUHoursAllocated += h.allocated
			row.GPUHoursUsed += h.used
			row.Cost += h.allocCost
			row.IdleCost += h.allocCost - h.usedCost
			row.allocCost += h.allocCost
			row.usedCost += h.usedCost
		}
	}
	for k := range c.holders {
		if _, ok := c.podNode[k.pod]; !ok {
			c.podNode[k.pod] = k.node
		}
	}
	for _, tc := range c.tokens {
		node := c.podNode[tc.pod]
		e := c.entityOf(tc.cluster, node, tc.pod, tc.model)
		if e == nil {
			continue
		}
		if c.opts.By == ByNode && node == "" {
			continue
		}
		row := get(e)
		row.Tokens.Prompt += tc.prompt
		row.Tokens.Generation += tc.generation
	}
	out := make([]Row, 0, len(rows))
	for _, row := range rows {
		for _, s := range slices[row] {
			row.GPUs += s
		}
		if row.allocCost > 0 {
			row.finish()
		} else if row.GPUHoursAllocated > 0 {
			row.Efficiency = row.GPUHoursUsed / row.GPUHoursAllocated
		}
		out = append(out, *row)
	}
	sortRows(out)
	return out
}

// entityOf names the entity of the grouping a pod (on node) belongs to;
// model is the model a token series names (a pod's own otherwise). nil
// when the pod has none (no served model under ByModel).
func (c *computation) entityOf(cluster, node string, pod podKey, model string) map[string]string {
	meta := c.pods[pod]
	tenant, workload := pod.ns, ""
	if meta != nil {
		tenant, workload = firstOf(meta.Tenant, pod.ns), meta.Workload
		model = firstOf(model, meta.Model)
	}
	model = firstOf(model, c.podModel[pod])
	var e map[string]string
	switch c.opts.By {
	case ByNode:
		e = map[string]string{"node": node}
	case ByNamespace:
		e = map[string]string{"namespace": pod.ns}
	case ByTenant:
		e = map[string]string{"tenant": tenant}
	case ByWorkload:
		if workload != "" {
			e = map[string]string{"namespace": pod.ns, "workload": workload}
		} else {
			e = map[string]string{"namespace": pod.ns, "pod": pod.pod}
		}
	case ByModel:
		if model == "" {
			return nil
		}
		e = map[string]string{"namespace": pod.ns, "model": model}
	case ByPod:
		e = map[string]string{"node": node, "namespace": pod.ns, "pod": pod.pod, "tenant": tenant}
		if workload != "" {
			e["workload"] = workload
		}
		if model != "" {
			e["model"] = model
		}
	}
	return c.withCluster(e, cluster)
}

func (c *computation) withCluster(e map[string]string, cluster string) map[string]string {
	if c.clusters {
		e["cluster"] = cluster
	}
	return e
}

func entityKey(e map[string]string) string {
	keys := sortedKeys(e)
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(k + "=" + e[k] + "\x00")
	}
	return sb.String()
}

// finalWarnings says what the figures lack: GPUs read from GPU_UTIL, GPU
// models priced at the default, prices naming no model in the data, and
// nodes whose dcgm-exporter names no pod.
func (c *computation) finalWarnings() {
	utilGPUs := 0
	seenModels := map[string]bool{}
	for _, g := range c.gpuList {
		if g.everUtil && !g.everGR {
			utilGPUs++
		}
		seenModels[g.model] = true
	}
	if utilGPUs > 0 {
		c.warn.add(fmt.Sprintf("%d GPUs report no %s (DCGM profiling off, or a GPU without it): their use is read from %s, the share of time any kernel ran, which overstates use (a GPU that only polls reads busy)", utilGPUs, metricGR, metricUtil), "")
	}
	if p := c.opts.Prices; p != nil {
		var named []string
		for _, m := range p.Models() {
			if seenModels[m] {
				named = append(named, m)
			}
		}
		if len(p.Models()) > 0 && len(named) == 0 {
			c.warn.add(fmt.Sprintf("the prices name no GPU model the data has (they name %s; the data has %s)", quoteAll(p.Models()), quoteAll(sortedKeys(seenModels))), "")
		}
		if len(c.defaulted) > 0 {
			var parts []string
			for _, m := range sortedKeys(c.defaulted) {
				parts = append(parts, fmt.Sprintf("%q (%d GPUs)", m, c.defaulted[m]))
			}
			c.warn.add(fmt.Sprintf("GPU models the prices do not name were priced at the default, %g %s an hour: %s", p.GPUHourly[DefaultKey], p.Currency, strings.Join(parts, ", ")), "")
		}
	}
	var ksmNodes []string
	anyAttr := false
	for _, nd := range c.nodes {
		switch {
		case nd.everAttr:
			anyAttr = true
		case nd.ksmUsed:
			ksmNodes = append(ksmNodes, nd.key.node)
		}
	}
	sort.Strings(ksmNodes)
	msg := fmt.Sprintf("dcgm-exporter names no pod on %d nodes (pod attribution off): their allocation comes from kube-state-metrics' nvidia.com/gpu requests, up to the GPUs that report; which GPU a pod holds is not known, so a pod's use is the node's activity shared by its requests", len(ksmNodes))
	for _, n := range ksmNodes {
		c.warn.add(msg, n)
	}
	if !anyAttr && len(ksmNodes) == 0 && !c.hasReq {
		c.warn.add("dcgm-exporter names no pod (pod attribution off) and kube-state-metrics' nvidia.com/gpu requests are missing: allocation is unknown, so every GPU-hour counts as unallocated, and the idle cost (held but unused) cannot be told from it", "")
	}
}

func quoteAll(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(out, ", ")
}
