package topology

import (
	"net"
	"regexp"
	"slices"
	"strings"
)

// The exporters as Identity.Source names them.
const (
	sourceDCGM         = "dcgm-exporter"
	sourceKSM          = "kube-state-metrics"
	sourceNodeExporter = "node-exporter"
)

// resolution is where one claim about a node leads.
type resolution struct {
	// node is the node name; empty when the claim names no node.
	node string
	// via says how a value that is not the name was mapped to it.
	via string
	// confirmed is true when kube-state-metrics knows the node.
	confirmed bool
	// why says why node is empty.
	why string
}

// claim is one label that names a node, and where it leads. A fallback
// claim (an exporter's own pod or address, the pods it attributes GPUs to)
// is listed among a node's identities only when no label naming the node
// leads there.
type claim struct {
	Identity
	res      resolution
	fallback bool
}

// hostKind is what a label value naming a host is.
type hostKind int

const (
	hostName hostKind = iota
	hostAddress
	hostContainerID
)

// containerID matches a Docker or containerd container ID, short or long:
// what dcgm-exporter reports as Hostname when it runs in a container
// without NODE_NAME. (catalog.Resolve applies the same rule to the labels it
// maps; this classifies single values, which its API does not offer.)
var containerID = regexp.MustCompile(`^[0-9a-f]{12}$|^[0-9a-f]{64}$`)

// classifyHost says whether v (a host name, an IP, either with a port, or a
// container ID) is a name, an address or a container ID, and returns it
// without the port.
func classifyHost(v string) (hostKind, string) {
	host := v
	if h, _, err := net.SplitHostPort(v); err == nil {
		host = h
	}
	switch {
	case net.ParseIP(host) != nil:
		return hostAddress, host
	case containerID.MatchString(host):
		return hostContainerID, host
	}
	return hostName, host
}

// resolveValue maps a label value that names a host to a node.
func (k *kubeIndex) resolveValue(label, v string) resolution {
	kind, host := classifyHost(v)
	switch kind {
	case hostAddress:
		return k.resolveAddr(host)
	case hostContainerID:
		return resolution{why: label + " " + v + " is a container ID, not a host name (dcgm-exporter ran in a container without NODE_NAME)"}
	}
	r := k.resolveName(host)
	if r.via == "" && host != v {
		r.via = "without the port"
	}
	return r
}

// resolveName maps a host name to a node: the node itself, or the only
// node with the same first DNS label (ip-10-0-0-1 and
// ip-10-0-0-1.ec2.internal). A name kube-state-metrics does not know stays
// as it is, unconfirmed.
func (k *kubeIndex) resolveName(v string) resolution {
	if _, ok := k.nodes[v]; ok {
		return resolution{node: v, confirmed: true}
	}
	short, _, _ := strings.Cut(v, ".")
	if n := k.shortName[short]; n != "" && (short == v || n == short) {
		return resolution{node: n, via: "same short host name", confirmed: true}
	}
	return resolution{node: v}
}

// resolveAddr maps an IP to the node that has it (kube_node_info
// internal_ip, kube_pod_info host_ip) or to the node of the only pod that
// has it (an exporter's own pod, scraped by pod IP).
func (k *kubeIndex) resolveAddr(ip string) resolution {
	if e, ok := k.addrs[ip]; ok {
		if e.ambiguous {
			return resolution{why: "address " + ip + " is claimed by two nodes"}
		}
		return resolution{node: e.node, via: e.via, confirmed: true}
	}
	if pods := k.podsByIP[ip]; len(pods) == 1 && pods[0].node != "" {
		return resolution{node: pods[0].node, via: "kube_pod_info pod_ip of " + pods[0].key.String(), confirmed: true}
	}
	if !k.has() {
		return resolution{why: "no kube-state-metrics to map address " + ip + " to a node"}
	}
	return resolution{why: "address " + ip + " matches no kube_node_info internal_ip, kube_pod_info host_ip or pod_ip"}
}

// resolvePod maps a pod to its node.
func (k *kubeIndex) resolvePod(key podKey, role string) resolution {
	if p := k.pods[key]; p != nil && p.node != "" {
		return resolution{node: p.node, via: "kube_pod_info node of " + role, confirmed: true}
	}
	return resolution{}
}

// pickNode chooses a node from claims, in their order of preference: the
// first a kube-state-metrics node confirms, else the first host name. It
// returns the claims that lead to the chosen node, or all of them with the
// reasons none does.
func pickNode(claims []claim) (node string, ids []Identity, why string) {
	for _, c := range claims {
		if c.res.confirmed {
			node = c.res.node
			break
		}
	}
	if node == "" {
		for _, c := range claims {
			if c.res.node != "" {
				node = c.res.node
				break
			}
		}
	}
	direct := slices.ContainsFunc(claims, func(c claim) bool { return !c.fallback && c.res.node == node && node != "" })
	var whys []string
	for _, c := range claims {
		switch {
		case node != "" && c.res.node == node && !(direct && c.fallback):
			id := c.Identity
			id.Via = c.res.via
			ids = append(ids, id)
		case node == "":
			ids = append(ids, c.Identity)
			if c.res.why != "" {
				whys = append(whys, c.res.why)
			}
		}
	}
	if node == "" {
		why = strings.Join(whys, "; ")
		if why == "" {
			why = "no label names the node"
		}
	}
	return node, ids, why
}
