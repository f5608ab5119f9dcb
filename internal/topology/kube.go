package topology

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// podKey names a pod (or any namespaced object).
type podKey struct{ ns, name string }

func (k podKey) String() string { return k.ns + "/" + k.name }

// ref is an owner reference.
type ref struct{ kind, name string }

// kubeNode is what kube-state-metrics says about a node.
type kubeNode struct {
	name       string
	internalIP string
	ready      *bool
	capacity   int
}

// kubePod is what kube-state-metrics says about a pod.
type kubePod struct {
	key         podKey
	node        string
	hostIP      string
	podIP       string
	phase       string
	createdBy   ref
	owner       ref
	ownerIsCtrl bool
	labels      map[string]string
	gpuRequest  int
	services    []string
}

// kubeIndex is kube-state-metrics' view of the cluster at the instant.
type kubeIndex struct {
	nodes    map[string]*kubeNode
	pods     map[podKey]*kubePod
	rsOwner  map[podKey]ref
	jobOwner map[podKey]ref
	// rsOwnerRead says kube_replicaset_owner had a series at all.
	rsOwnerRead bool
	nsTenant    map[string]string
	// endpoints maps a pod IP to the services whose endpoints list it.
	endpoints map[string][]podKey
	// tenantLabel is the kube_*_labels label of Options.TenantLabel.
	tenantLabel string

	addrs     map[string]addrEntry
	shortName map[string]string
	podsByIP  map[string][]*kubePod
}

// addrEntry maps an IP to a node; ambiguous when two nodes claim it.
type addrEntry struct {
	node, via string
	ambiguous bool
}

// The pod labels (as kube_pod_labels names them) that lift a pod's owner to
// its workload.
const (
	labelLWSName     = "label_leaderworkerset_sigs_k8s_io_name"
	labelRayCRD      = "label_ray_io_originated_from_crd"
	labelRayCRDName  = "label_ray_io_originated_from_cr_name"
	ksmNone          = "<none>"
	ksmResourceGPU   = "nvidia_com_gpu"
	exportedLabelPre = "exported_"
)

// ksmLabel reads a kube-state-metrics label; when Prometheus scraped it
// without honor_labels the original is under exported_NAME (and NAME is
// kube-state-metrics' own pod), so that wins.
func ksmLabel(lset labels.Labels, name string) string {
	if v := lset.Get(exportedLabelPre + name); v != "" {
		return v
	}
	return lset.Get(name)
}

// kubeLabelName is the name kube-state-metrics gives a Kubernetes label in
// kube_*_labels: "label_" and the name with every other character than
// letters, digits and underscores replaced by an underscore.
func kubeLabelName(name string) string {
	var sb strings.Builder
	sb.WriteString("label_")
	for _, r := range name {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

// readKube reads kube-state-metrics.
func (b *builder) readKube(ctx context.Context) error {
	k := &kubeIndex{
		nodes: map[string]*kubeNode{}, pods: map[podKey]*kubePod{},
		rsOwner: map[podKey]ref{}, jobOwner: map[podKey]ref{},
		nsTenant: map[string]string{}, endpoints: map[string][]podKey{},
	}
	if b.opts.TenantLabel != "" {
		k.tenantLabel = kubeLabelName(b.opts.TenantLabel)
	}
	b.kube = k
	queries := []struct {
		q  string
		fn func(labels.Labels, float64)
	}{
		{"kube_node_info", k.addNode},
		{`kube_node_status_condition{condition="Ready"} == 1`, k.addReady},
		{`kube_node_status_capacity{resource="` + ksmResourceGPU + `"}`, k.addCapacity},
		{"kube_pod_info", k.addPod},
		{"kube_pod_status_phase == 1", k.addPhase},
		{"kube_pod_owner", k.addPodOwner},
		{"kube_replicaset_owner", k.addOwner(k.rsOwner, "replicaset", &k.rsOwnerRead)},
		{"kube_job_owner", k.addOwner(k.jobOwner, "job_name", nil)},
		{`sum by (namespace, pod, exported_namespace, exported_pod) (kube_pod_container_resource_requests{resource="` + ksmResourceGPU + `"})`, k.addRequest},
		{"kube_pod_labels", k.addPodLabels},
		{"kube_endpoint_address", k.addEndpoint},
	}
	if k.tenantLabel != "" {
		queries = append(queries, struct {
			q  string
			fn func(labels.Labels, float64)
		}{"kube_namespace_labels", k.addNamespaceLabels})
	}
	for _, q := range queries {
		if err := b.each(ctx, q.q, q.fn); err != nil {
			return err
		}
	}
	k.index(b.warn)
	return nil
}

func (k *kubeIndex) node(name string) *kubeNode {
	n, ok := k.nodes[name]
	if !ok {
		n = &kubeNode{name: name}
		k.nodes[name] = n
	}
	return n
}

func (k *kubeIndex) pod(lset labels.Labels) *kubePod {
	key := podKey{ksmLabel(lset, "namespace"), ksmLabel(lset, "pod")}
	if key.ns == "" || key.name == "" {
		return nil
	}
	p, ok := k.pods[key]
	if !ok {
		p = &kubePod{key: key}
		k.pods[key] = p
	}
	return p
}

func (k *kubeIndex) addNode(lset labels.Labels, _ float64) {
	if name := ksmLabel(lset, "node"); name != "" {
		n := k.node(name)
		n.internalIP = lset.Get("internal_ip")
	}
}

func (k *kubeIndex) addReady(lset labels.Labels, _ float64) {
	if name := ksmLabel(lset, "node"); name != "" {
		ready := lset.Get("status") == "true"
		k.node(name).ready = &ready
	}
}

func (k *kubeIndex) addCapacity(lset labels.Labels, v float64) {
	if name := ksmLabel(lset, "node"); name != "" {
		k.node(name).capacity = int(v)
	}
}

func (k *kubeIndex) addPod(lset labels.Labels, _ float64) {
	p := k.pod(lset)
	if p == nil {
		return
	}
	p.node = ksmLabel(lset, "node")
	p.hostIP = lset.Get("host_ip")
	p.podIP = lset.Get("pod_ip")
	p.createdBy = ref{lset.Get("created_by_kind"), lset.Get("created_by_name")}
}

func (k *kubeIndex) addPhase(lset labels.Labels, _ float64) {
	if p := k.pod(lset); p != nil {
		p.phase = lset.Get("phase")
	}
}

// addPodOwner keeps the controller owner, or the first owner seen.
func (k *kubeIndex) addPodOwner(lset labels.Labels, _ float64) {
	p := k.pod(lset)
	if p == nil {
		return
	}
	r := ref{lset.Get("owner_kind"), lset.Get("owner_name")}
	if r.kind == "" || r.kind == ksmNone || r.name == "" || r.name == ksmNone {
		return
	}
	ctrl := lset.Get("owner_is_controller") == "true"
	if p.owner.kind == "" || ctrl && !p.ownerIsCtrl {
		p.owner, p.ownerIsCtrl = r, ctrl
	}
}

// addOwner returns a reader of kube_<kind>_owner into m, the object named by
// the nameLabel label; read, when not nil, is set by the first series.
func (k *kubeIndex) addOwner(m map[podKey]ref, nameLabel string, read *bool) func(labels.Labels, float64) {
	return func(lset labels.Labels, _ float64) {
		if read != nil {
			*read = true
		}
		key := podKey{ksmLabel(lset, "namespace"), lset.Get(nameLabel)}
		r := ref{lset.Get("owner_kind"), lset.Get("owner_name")}
		if key.ns == "" || key.name == "" || r.kind == "" || r.kind == ksmNone || r.name == "" || r.name == ksmNone {
			return
		}
		m[key] = r
	}
}

func (k *kubeIndex) addRequest(lset labels.Labels, v float64) {
	if p := k.pod(lset); p != nil && v > 0 {
		p.gpuRequest = int(v)
	}
}

func (k *kubeIndex) addPodLabels(lset labels.Labels, _ float64) {
	p := k.pod(lset)
	if p == nil {
		return
	}
	for _, name := range []string{labelLWSName, labelRayCRD, labelRayCRDName, k.tenantLabel} {
		if v := lset.Get(name); name != "" && v != "" {
			if p.labels == nil {
				p.labels = map[string]string{}
			}
			p.labels[name] = v
		}
	}
}

func (k *kubeIndex) addNamespaceLabels(lset labels.Labels, _ float64) {
	if ns, v := ksmLabel(lset, "namespace"), lset.Get(k.tenantLabel); ns != "" && v != "" {
		k.nsTenant[ns] = v
	}
}

func (k *kubeIndex) addEndpoint(lset labels.Labels, _ float64) {
	ip, svc := lset.Get("ip"), podKey{ksmLabel(lset, "namespace"), lset.Get("endpoint")}
	if ip == "" || svc.ns == "" || svc.name == "" {
		return
	}
	for _, s := range k.endpoints[ip] {
		if s == svc {
			return
		}
	}
	k.endpoints[ip] = append(k.endpoints[ip], svc)
}

// index builds the lookups by address and short name, once everything is
// read, and lists each pod's services.
func (k *kubeIndex) index(warn *warnings) {
	k.addrs = map[string]addrEntry{}
	k.shortName = map[string]string{}
	k.podsByIP = map[string][]*kubePod{}
	for _, p := range k.pods {
		if p.node != "" {
			k.node(p.node)
		}
	}
	for _, n := range k.nodes {
		if n.internalIP != "" {
			k.addAddr(n.internalIP, n.name, "kube_node_info internal_ip", warn)
		}
		short, _, _ := strings.Cut(n.name, ".")
		if other, dup := k.shortName[short]; dup && other != n.name {
			k.shortName[short] = ""
		} else {
			k.shortName[short] = n.name
		}
	}
	for _, p := range k.pods {
		if p.node != "" && p.hostIP != "" && k.addrs[p.hostIP].via != "kube_node_info internal_ip" {
			k.addAddr(p.hostIP, p.node, "kube_pod_info host_ip", warn)
		}
		if p.podIP != "" {
			k.podsByIP[p.podIP] = append(k.podsByIP[p.podIP], p)
			for _, s := range k.endpoints[p.podIP] {
				if s.ns == p.key.ns {
					p.services = append(p.services, s.name)
				}
			}
		}
	}
}

// addAddr maps ip to node; a second node for the same IP makes it ambiguous.
func (k *kubeIndex) addAddr(ip, node, via string, warn *warnings) {
	e, ok := k.addrs[ip]
	switch {
	case !ok:
		k.addrs[ip] = addrEntry{node: node, via: via}
	case e.node != node && !e.ambiguous:
		k.addrs[ip] = addrEntry{ambiguous: true}
		a, b := min(e.node, node), max(e.node, node)
		warn.add("two nodes claim one IP address in the window (a node replaced?), so it names neither", fmt.Sprintf("%s (%s, %s)", ip, a, b))
	}
}

// has reports whether kube-state-metrics said anything.
func (k *kubeIndex) has() bool { return len(k.nodes) > 0 || len(k.pods) > 0 }

// tenant returns a pod's tenant: the configured label of the pod, else of
// its namespace, else the namespace.
func (k *kubeIndex) tenant(key podKey, warn *warnings) string {
	if k.tenantLabel == "" {
		return key.ns
	}
	if p := k.pods[key]; p != nil && p.labels[k.tenantLabel] != "" {
		return p.labels[k.tenantLabel]
	}
	if t := k.nsTenant[key.ns]; t != "" {
		return t
	}
	warn.add("pods whose pod and namespace lack the tenant label "+k.tenantLabel+
		" in kube_pod_labels/kube_namespace_labels (is it in kube-state-metrics' --metric-labels-allowlist?) have their namespace as tenant", key.String())
	return key.ns
}
