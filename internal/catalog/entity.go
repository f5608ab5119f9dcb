package catalog

import (
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// The canonical entity keys (DESIGN.md).
const (
	KeyNode        = "node"
	KeyGPU         = "gpu"
	KeyGPUInstance = "gpu_instance"
	KeyUUID        = "uuid"
	KeyPod         = "pod"
	KeyNamespace   = "namespace"
	KeyContainer   = "container"
	KeyWorkload    = "workload"
	KeyService     = "service"
	KeyModel       = "model"
	KeyTenant      = "tenant"
)

// EntityKeys returns the canonical entity keys, from the widest to the
// narrowest.
func EntityKeys() []string {
	return []string{KeyNode, KeyGPU, KeyGPUInstance, KeyUUID, KeyNamespace, KeyPod, KeyContainer,
		KeyWorkload, KeyService, KeyModel, KeyTenant}
}

// Attribute keys Resolve fills besides the entity: facts about the entity
// that do not identify it.
const (
	// AttrGPUModel is the GPU's product name (dcgm-exporter modelName).
	AttrGPUModel = "gpu_model"
	// AttrMIGProfile is the MIG instance's profile, e.g. 1g.5gb.
	AttrMIGProfile = "mig_profile"
	// AttrWorkloadKind is the kind of the workload named by the series
	// (ReplicaSet, StatefulSet, Job, PyTorchJob, ...). A ReplicaSet is not
	// yet the Deployment: the topology lifts it.
	AttrWorkloadKind = "workload_kind"
	// AttrNodeAddress is the node's IP when the series names the node only
	// by address (node-exporter instance IP:port, kube_pod_info host_ip,
	// kube_node_info internal_ip); the topology maps it to a node name.
	AttrNodeAddress = "node_address"
	// AttrDriverVersion is the NVIDIA driver version.
	AttrDriverVersion = "driver_version"
	// AttrEngine is the vLLM engine index (since 0.10).
	AttrEngine = "engine"
	// AttrHostname is a dcgm-exporter Hostname that is not a node name (a
	// container ID), kept for display.
	AttrHostname = "exporter_hostname"
	// AttrModelVersion is a Triton model version.
	AttrModelVersion = "model_version"
)

// Alias says which labels carry one key in one vocabulary.
type Alias struct {
	// Key is a canonical entity key or an Attr* key.
	Key string
	// Labels carry it, preferred first; the first non-empty value wins.
	Labels []string
	// KindLabels, for the workload key, carry its kind in the same order as
	// Labels (empty where the label implies the kind, see Kinds).
	KindLabels []string
	// Kinds, for the workload key, is the kind a label implies when it has
	// no kind label ("job_name" → Job).
	Kinds []string
	// Versions says which exporter versions use these labels.
	Versions string
	// Note is what a reader must know.
	Note string
}

// Aliases returns the label aliases of a vocabulary: its own, then the
// Kubernetes target labels every vocabulary may carry.
func (c *Catalog) Aliases(v Vocabulary) []Alias {
	if a, ok := c.aliases[v]; ok {
		return a
	}
	return c.target
}

// Entity maps canonical entity keys to values.
type Entity map[string]string

// Resolution is what a series says about the entity it belongs to.
type Resolution struct {
	// Vocabulary is the vocabulary the labels were read as.
	Vocabulary Vocabulary
	// Entity holds the canonical keys found. The node is a Kubernetes node
	// name, never an address or a container ID.
	Entity Entity
	// Attributes hold facts that do not identify the entity (Attr* keys).
	Attributes map[string]string
	// Notes say, one sentence each, what could not be resolved and why.
	Notes []string
}

// noneValues are label values that mean "no value".
var noneValues = map[string]bool{"": true, "<none>": true}

// containerID matches a Docker or containerd container ID, short or long:
// what dcgm-exporter reports as Hostname when it runs without NODE_NAME.
var containerID = regexp.MustCompile(`^[0-9a-f]{12}$|^[0-9a-f]{64}$`)

// Resolve reads the canonical entity of one series of vocabulary v from its
// labels. Unknown vocabularies get the Kubernetes target labels only.
func (c *Catalog) Resolve(v Vocabulary, lset labels.Labels) Resolution {
	r := Resolution{Vocabulary: v, Entity: Entity{}, Attributes: map[string]string{}}
	for _, a := range c.Aliases(v) {
		if _, done := r.Entity[a.Key]; done {
			continue
		}
		if _, done := r.Attributes[a.Key]; done {
			continue
		}
		for i, name := range a.Labels {
			val := lset.Get(name)
			if noneValues[val] {
				continue
			}
			r.set(a, i, val, lset)
			break
		}
	}
	r.dropExporterSelf(lset)
	r.check()
	return r
}

// ResolveSeries is Resolve with the vocabulary taken from the series name.
// For an exporter's node-level signal (kube_node_*, node_*) only the node
// is kept: any pod or namespace label there is the scrape target's, the
// exporter's own pod.
func (c *Catalog) ResolveSeries(lset labels.Labels) Resolution {
	name := lset.Get(model.MetricNameLabel)
	v, _ := c.Vocabulary(name)
	r := c.Resolve(v, lset)
	if m, ok := c.Lookup(name); ok && m.Signal.Level == LevelNode && exporterSelf[v] != nil {
		for k := range r.Entity {
			if k != KeyNode {
				delete(r.Entity, k)
			}
		}
		r.Notes = slices.DeleteFunc(r.Notes, func(n string) bool { return strings.Contains(n, "without a namespace") })
	}
	return r
}

// exporterSelf names, per exporter vocabulary, the substrings of the
// exporter's own pod or container name: the Kubernetes target labels of a
// scrape without honor_labels name the exporter, not the workload.
var exporterSelf = map[Vocabulary][]string{
	DCGMExporter:     {"dcgm-exporter", "dcgm_exporter"},
	KubeStateMetrics: {"kube-state-metrics"},
	NodeExporter:     {"node-exporter", "node_exporter"},
	CAdvisor:         {"cadvisor"},
}

// dropExporterSelf removes pod attribution that names the exporter itself.
func (r *Resolution) dropExporterSelf(lset labels.Labels) {
	subs := exporterSelf[r.Vocabulary]
	self := func(k string) bool {
		val := r.Entity[k]
		for _, sub := range subs {
			if val != "" && strings.Contains(val, sub) {
				return true
			}
		}
		return false
	}
	switch {
	case self(KeyPod):
		r.note("pod " + r.Entity[KeyPod] + " is the exporter itself (a scrape target label), not the workload: dropped")
		delete(r.Entity, KeyPod)
		delete(r.Entity, KeyContainer)
		if lset.Get("exported_namespace") == "" {
			// The namespace is the exporter's too, unless the series kept
			// its own as exported_namespace (a Deployment's, a node's).
			delete(r.Entity, KeyNamespace)
		}
	case self(KeyContainer):
		// The pod came from exported_pod (the workload's) while the
		// container fell back to the target's own: drop the container only.
		r.note("container " + r.Entity[KeyContainer] + " is the exporter itself (a scrape target label), not the workload: dropped")
		delete(r.Entity, KeyContainer)
	}
}

func (r *Resolution) set(a Alias, i int, val string, lset labels.Labels) {
	switch a.Key {
	case KeyNode:
		r.setNode(a.Labels[i], val)
	case KeyWorkload:
		r.Entity[KeyWorkload] = val
		kind := ""
		if i < len(a.KindLabels) && a.KindLabels[i] != "" {
			kind = lset.Get(a.KindLabels[i])
		}
		if kind == "" && i < len(a.Kinds) {
			kind = a.Kinds[i]
		}
		if kind != "" && !noneValues[kind] {
			r.Attributes[AttrWorkloadKind] = kind
		}
	default:
		if isEntityKey(a.Key) {
			r.Entity[a.Key] = val
		} else {
			r.Attributes[a.Key] = val
		}
	}
}

// setNode keeps val as the node. An instance label (host:port) loses its
// port, and an address goes to AttrNodeAddress instead; a dcgm-exporter
// Hostname that is a container ID goes to AttrHostname. Other labels (kube
// node, Kubernetes discovery) hold the node name whatever it looks like:
// some clusters name nodes by IP.
func (r *Resolution) setNode(label, val string) {
	host := val
	switch label {
	case "instance":
		if h, _, err := net.SplitHostPort(val); err == nil {
			host = h
		}
		if net.ParseIP(host) != nil {
			r.Attributes[AttrNodeAddress] = host
			r.note("node known only by address " + host + " (label instance); map it through kube_node_info internal_ip or kube_pod_info host_ip")
			return
		}
	case "Hostname", "hostname":
		if containerID.MatchString(host) {
			r.Attributes[AttrHostname] = host
			r.note("label " + label + "=" + host + " is a container ID, not a node: dcgm-exporter ran without NODE_NAME")
			return
		}
	}
	r.Entity[KeyNode] = host
}

func (r *Resolution) note(n string) {
	if !slices.Contains(r.Notes, n) {
		r.Notes = append(r.Notes, n)
	}
}

// check notes a namespaced entity without its namespace.
func (r *Resolution) check() {
	if _, ok := r.Entity[KeyNamespace]; ok {
		return
	}
	for _, k := range []string{KeyPod, KeyWorkload, KeyModel} {
		if _, ok := r.Entity[k]; ok {
			r.note(k + " without a namespace label: add the Kubernetes target labels (namespace, pod) to the scrape")
			return
		}
	}
}

func isEntityKey(k string) bool {
	switch k {
	case KeyNode, KeyGPU, KeyGPUInstance, KeyUUID, KeyPod, KeyNamespace, KeyContainer,
		KeyWorkload, KeyService, KeyModel, KeyTenant:
		return true
	}
	return false
}

// GroupLabels returns the labels that carry key in vocabulary v, for a
// PromQL by-clause: all of the vocabulary's own aliases for the key (absent
// labels group harmlessly), or else the usual Kubernetes target label.
func (c *Catalog) GroupLabels(v Vocabulary, key string) []string {
	var out []string
	for _, a := range c.own[v] {
		if a.Key == key {
			for _, l := range a.Labels {
				if !slices.Contains(out, l) {
					out = append(out, l)
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, a := range c.target {
		if a.Key == key {
			return a.Labels[:1]
		}
	}
	return nil
}
