package topology

import (
	"slices"
	"strings"
)

// assembly joins what each source said into nodes, pods, workloads and
// models.
type assembly struct {
	b *builder
	// nodes holds nodes by name; unresolved ones by "\x00" and the key of
	// what reported them.
	nodes map[string]*Node
	// up says a source reports the node up now: Ready, or a current
	// node-exporter or dcgm-exporter sample.
	up      map[string]bool
	pods    map[podKey]*Pod
	podNode map[podKey]string
}

// assemble builds the Topology from what the builder read.
func (b *builder) assemble() *Topology {
	a := &assembly{b: b, nodes: map[string]*Node{}, up: map[string]bool{}, pods: map[podKey]*Pod{}, podNode: map[podKey]string{}}
	a.kubeNodes()
	a.nodeExporterNodes()
	a.dcgmNodes()
	a.kubePods()
	a.attributeByRequests()
	models := a.models()
	t := &Topology{At: b.at.UTC(), Workloads: a.workloads(), Models: models}
	t.Nodes = a.sortedNodes()
	a.partialDataWarnings()
	t.Warnings = b.warn.list()
	return t
}

// node returns the node named name, creating it.
func (a *assembly) node(name string) *Node {
	n := a.nodes[name]
	if n == nil {
		n = &Node{Name: name, Identities: []Identity{}, GPUs: []*GPU{}, Pods: []*Pod{}}
		a.nodes[name] = n
	}
	return n
}

// unresolved returns the node entry for a reporter whose node has no name.
func (a *assembly) unresolved(key, why string, ids []Identity) *Node {
	n := a.node("\x00" + key)
	n.Name, n.Unresolved = "", why
	a.addIdentities(n, ids)
	return n
}

func (a *assembly) addIdentities(n *Node, ids []Identity) {
	for _, id := range ids {
		if !slices.Contains(n.Identities, id) {
			n.Identities = append(n.Identities, id)
		}
	}
}

func (a *assembly) kubeNodes() {
	for name, kn := range a.b.kube.nodes {
		n := a.node(name)
		n.Ready, n.GPUCapacity = kn.ready, kn.capacity
		a.addIdentities(n, []Identity{{Source: sourceKSM, Label: "node", Value: name}})
		if kn.ready != nil && *kn.ready {
			a.up[name] = true
		}
	}
}

func (a *assembly) nodeExporterNodes() {
	for _, t := range a.b.hosts.rows {
		name, ids, why := a.b.kube.resolveTarget(t)
		if name == "" {
			a.unresolved("node-exporter "+t.key, why, ids)
			a.b.warn.add("node-exporter targets whose node nothing names (listed as unresolved nodes)", t.key)
			continue
		}
		a.unconfirmed(name, sourceNodeExporter)
		a.addIdentities(a.node(name), ids)
		a.up[name] = true
	}
}

// unconfirmed warns about a host name kube-state-metrics does not know,
// when it knows some nodes.
func (a *assembly) unconfirmed(name, source string) {
	if _, ok := a.b.kube.nodes[name]; !ok && a.b.kube.has() {
		a.b.warn.add(source+" reports hosts kube-state-metrics has no node for; they are kept as node names", name)
	}
}

// dcgmNodes places each dcgm-exporter host's GPUs on its node: hosts with
// a current sample first, so that a host that went silent can be told
// apart from a node that went away.
func (a *assembly) dcgmNodes() {
	hosts := slices.Clone(a.b.dcgm.order)
	slices.SortStableFunc(hosts, func(x, y *dcgmHost) int {
		switch {
		case x.fresh == y.fresh:
			return 0
		case x.fresh:
			return -1
		}
		return 1
	})
	for _, h := range hosts {
		name, ids, why := a.b.kube.resolveHost(h)
		var n *Node
		switch {
		case name == "" && !h.fresh:
			continue
		case name == "":
			n = a.unresolved("dcgm-exporter "+h.key, why, ids)
			a.unresolvedHostWarning(h)
		case !h.fresh && !a.up[name]:
			continue
		default:
			a.unconfirmed(name, sourceDCGM)
			n = a.node(name)
			a.addIdentities(n, ids)
		}
		if h.fresh && name != "" {
			a.up[name] = true
		}
		a.placeGPUs(n, h)
	}
}

// unresolvedHostWarning says why an exporter's GPUs have no node.
func (a *assembly) unresolvedHostWarning(h *dcgmHost) {
	for _, c := range h.claims {
		if kind, _ := classifyHost(c.Value); kind == hostContainerID {
			a.b.warn.add("dcgm-exporter reports a container ID as "+c.Label+
				" (it ran in a container without NODE_NAME) and no pod or address of it maps to a node, so its GPUs are under an unresolved node", c.Value)
			return
		}
	}
	a.b.warn.add("dcgm-exporter hosts that map to no node (listed as unresolved nodes)", h.key)
}

// placeGPUs adds a host's GPUs to n with their health hint.
func (a *assembly) placeGPUs(n *Node, h *dcgmHost) {
	window := a.b.window()
	for _, g := range h.gpus {
		gpu := &GPU{Index: g.index, UUID: g.uuid, Model: g.model, Pods: sortedRefs(g.pods)}
		switch {
		case g.fresh:
			gpu.Health, gpu.Reason = g.signals.hint(a.b.cat, window)
		case h.fresh:
			gpu.Health = HealthLost
			gpu.Reason = "no dcgm-exporter sample in the last " + window + " while the node's other GPUs report"
		default:
			gpu.Health = HealthUnknown
			gpu.Reason = "dcgm-exporter sent nothing for this node in the last " + window + " while the node is up"
			a.b.warn.add("dcgm-exporter is silent while its node is up (exporter down?)", n.Name)
		}
		for _, inst := range g.instances {
			inst.Pods = sortedRefs(inst.Pods)
			gpu.Instances = append(gpu.Instances, inst)
		}
		slices.SortFunc(gpu.Instances, func(x, y *Instance) int { return naturalCompare(x.ID, y.ID) })
		if i := slices.IndexFunc(n.GPUs, func(o *GPU) bool { return o.Index == gpu.Index }); i >= 0 {
			a.b.warn.add("two dcgm-exporters report the same GPU index on one node; the first is kept", n.Name+" GPU "+gpu.Index)
			continue
		}
		n.GPUs = append(n.GPUs, gpu)
	}
}

// kubePods puts kube-state-metrics' pods on their nodes, then the pods only
// dcgm-exporter names.
func (a *assembly) kubePods() {
	k := a.b.kube
	for key, kp := range k.pods {
		p := &Pod{Namespace: key.ns, Pod: key.name, Phase: kp.phase, Tenant: k.tenant(key, a.b.warn), GPURequest: kp.gpuRequest}
		if w := k.workloadOf(kp, a.b.warn); w.kind != "" {
			p.Workload, p.WorkloadKind = w.name, w.kind
		}
		p.Services = addSorted(nil, kp.services...)
		a.pods[key] = p
		if kp.node != "" {
			a.podNode[key] = kp.node
			n := a.node(kp.node)
			n.Pods = append(n.Pods, p)
		}
	}
	for _, n := range a.nodes {
		for _, g := range n.GPUs {
			for _, r := range g.Pods {
				a.attach(n, r, g.Index)
			}
			for _, inst := range g.Instances {
				for _, r := range inst.Pods {
					a.attach(n, r, g.Index)
				}
			}
		}
	}
}

// attach records that the pod r uses GPU index of n.
func (a *assembly) attach(n *Node, r PodRef, index string) {
	key := podKey{r.Namespace, r.Pod}
	p := a.pods[key]
	if p == nil {
		if a.b.kube.has() {
			a.b.warn.add("pods dcgm-exporter names have no kube_pod_info (deleted, or outside kube-state-metrics' namespaces): no workload for them", key.String())
		}
		p = &Pod{Namespace: r.Namespace, Pod: r.Pod, Tenant: a.b.kube.tenant(key, a.b.warn)}
		a.pods[key] = p
	}
	if a.podNode[key] == "" && !slices.Contains(n.Pods, p) {
		if n.Name != "" {
			a.podNode[key] = n.Name
		}
		n.Pods = append(n.Pods, p)
	}
	if !slices.Contains(p.GPUs, index) {
		p.GPUs = append(p.GPUs, index)
	}
}

// attributeByRequests attributes the GPUs of nodes where dcgm-exporter
// names no pod: to the only pod that requests GPUs when its request covers
// all of them; otherwise it says which GPU each pod uses is unknown.
func (a *assembly) attributeByRequests() {
	for _, n := range a.nodes {
		if len(n.GPUs) == 0 || n.Name == "" || hasAttribution(n) {
			continue
		}
		var requesting []*Pod
		for _, p := range n.Pods {
			if p.GPURequest > 0 {
				requesting = append(requesting, p)
			}
		}
		if len(requesting) == 0 {
			continue
		}
		a.b.warn.add("dcgm-exporter names no pod on nodes where pods request GPUs (its Kubernetes pod mapping is off, or the scrape dropped the labels), "+
			"so GPUs are attributed from nvidia.com/gpu requests only where one pod holds all of a node's GPUs", n.Name)
		if len(requesting) != 1 || requesting[0].GPURequest < len(n.GPUs) {
			a.b.warn.add("several pods share a node's GPUs and dcgm-exporter names none, so which GPU each uses is unknown", n.Name)
			continue
		}
		p := requesting[0]
		for _, g := range n.GPUs {
			g.Pods = []PodRef{{Namespace: p.Namespace, Pod: p.Pod, By: AttributedByRequests}}
			p.GPUs = append(p.GPUs, g.Index)
		}
	}
}

// hasAttribution reports whether dcgm-exporter names a pod on any GPU of n.
func hasAttribution(n *Node) bool {
	for _, g := range n.GPUs {
		if len(g.Pods) > 0 {
			return true
		}
		for _, inst := range g.Instances {
			if len(inst.Pods) > 0 {
				return true
			}
		}
	}
	return false
}

// models places each served model on its pods.
func (a *assembly) models() []*Model {
	type key struct{ ns, name string }
	byKey := map[key]*Model{}
	for _, r := range a.b.model.rows {
		pk, ok := a.b.kube.podOf(r)
		if !ok {
			a.b.warn.add("served models whose series carry no namespace and pod labels and no scrape address of a known pod are not placed", r.model)
			continue
		}
		m := byKey[key{pk.ns, r.model}]
		if m == nil {
			m = &Model{Namespace: pk.ns, Name: r.model, Pods: []string{}}
			byKey[key{pk.ns, r.model}] = m
		}
		m.Pods = addSorted(m.Pods, pk.name)
		if p := a.pods[pk]; p != nil {
			p.Model = r.model
			if r.service != "" {
				p.Services = addSorted(p.Services, r.service)
			}
			if p.Workload != "" {
				m.Workloads = addSorted(m.Workloads, p.Workload)
			}
		}
	}
	out := make([]*Model, 0, len(byKey))
	for _, m := range byKey {
		out = append(out, m)
	}
	slices.SortFunc(out, func(x, y *Model) int {
		if c := naturalCompare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		return naturalCompare(x.Name, y.Name)
	})
	return out
}

// sortedNodes returns the nodes, named ones in natural order, then the
// unresolved ones, with their GPUs, pods and identities sorted.
func (a *assembly) sortedNodes() []*Node {
	out := make([]*Node, 0, len(a.nodes))
	for _, n := range a.nodes {
		slices.SortFunc(n.GPUs, func(x, y *GPU) int { return naturalCompare(x.Index, y.Index) })
		slices.SortFunc(n.Pods, func(x, y *Pod) int { return comparePodKeys(podKey{x.Namespace, x.Pod}, podKey{y.Namespace, y.Pod}) })
		for _, p := range n.Pods {
			slices.SortFunc(p.GPUs, naturalCompare)
		}
		slices.SortStableFunc(n.Identities, func(x, y Identity) int { return sourceRank(x.Source) - sourceRank(y.Source) })
		out = append(out, n)
	}
	slices.SortFunc(out, func(x, y *Node) int {
		switch {
		case (x.Name == "") != (y.Name == ""):
			if x.Name == "" {
				return 1
			}
			return -1
		case x.Name == "":
			return strings.Compare(firstIdentity(x), firstIdentity(y))
		}
		return naturalCompare(x.Name, y.Name)
	})
	return out
}

// firstIdentity is what first names an unresolved node, for ordering.
func firstIdentity(n *Node) string {
	if len(n.Identities) == 0 {
		return n.Unresolved
	}
	return n.Identities[0].Source + " " + n.Identities[0].Label + "=" + n.Identities[0].Value
}

// sourceRank orders identities: kube-state-metrics, dcgm-exporter,
// node-exporter.
func sourceRank(s string) int {
	switch s {
	case sourceKSM:
		return 0
	case sourceDCGM:
		return 1
	}
	return 2
}

func sortedRefs(refs []PodRef) []PodRef {
	out := slices.Clone(refs)
	if out == nil {
		out = []PodRef{}
	}
	slices.SortFunc(out, func(x, y PodRef) int {
		if c := comparePodKeys(podKey{x.Namespace, x.Pod}, podKey{y.Namespace, y.Pod}); c != 0 {
			return c
		}
		return strings.Compare(x.Container, y.Container)
	})
	return out
}

// partialDataWarnings say which source is missing altogether.
func (a *assembly) partialDataWarnings() {
	b := a.b
	if b.empty() {
		return
	}
	if !b.kube.has() {
		b.warn.add("no kube-state-metrics series (kube_node_info, kube_pod_info): node names are the exporters' host names, unconfirmed, "+
			"and pods have no workloads, phases or GPU requests", "")
	}
	if len(b.dcgm.gpus) == 0 {
		b.warn.add("no dcgm-exporter series (DCGM_*): GPUs and their health are unknown", "")
	}
}
