package sim

import (
	"fmt"
	"strconv"
)

// Scrape jobs, as a kube-prometheus-stack installation names them.
const (
	jobDCGM         = "nvidia-dcgm-exporter"
	jobNodeExporter = "node-exporter"
	jobKSM          = "kube-state-metrics"
	jobVLLM         = "vllm"
	ksmInstance     = "10.0.0.5:8080"
	ksmSelfPod      = "kube-prometheus-stack-kube-state-metrics-6d9f7b8c5-x2kqp"
)

// podReasons are the pod status reasons kube-state-metrics reports.
var podReasons = [...]string{"Evicted", "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError"}

// nodeConditions are the node conditions kube-state-metrics reports.
var nodeConditions = [...]string{"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}

var condStatuses = [...]string{"true", "false", "unknown"}

// memPressureAt is the share of memory in use at which the kubelet reports
// MemoryPressure (its eviction threshold, as a share of 2 TiB).
const memPressureAt = 0.95

// kubeStateMetrics is the kube-state-metrics deployment.
type kubeStateMetrics struct {
	c     *cluster
	f     ksmFamilies
	nodes map[*node]*ksmNode
	pods  map[*pod]*ksmPod
	rsets []ksmWorkload
	// reg, metaGen and newRS serve a rollout: the Deployment's
	// metadata.generation and the new ReplicaSet's owner, made when
	// first scraped.
	reg            *registry
	metaGen, newRS *series
}

type ksmFamilies struct {
	nodeInfo, nodeCond, nodeCap, nodeAlloc, nodeUnsched         *family
	podInfo, podOwner, podPhase, podReady, podStart, podReason  *family
	restarts, running, ctrReady, waiting, lastReason, lastTime  *family
	requests, limits, rsOwner, depReplicas, depAvail, depObsGen *family
}

type ksmNode struct {
	info, unsched *series
	cond          [len(nodeConditions)][len(condStatuses)]*series
	capacity      []*series
	alloc         []*series
}

type ksmPod struct {
	info, owner, start, restarts, running, ready *series
	phase                                        [len(podPhases)]*series
	reason                                       [len(podReasons)]*series
	podReady                                     [len(condStatuses)]*series
	requests                                     []*series
	limitGPU                                     *series
	lastTime                                     *series
	lastReason, waiting                          map[string]*series
	kv                                           []string // namespace, pod, uid
}

type ksmWorkload struct {
	owner, replicas, available, generation *series
}

func newKubeStateMetrics(reg *registry, c *cluster) *kubeStateMetrics {
	g := func(name, help string) *family { return reg.family(name, typeGauge, help) }
	k := &kubeStateMetrics{c: c, nodes: map[*node]*ksmNode{}, pods: map[*pod]*ksmPod{}, reg: reg}
	k.f = ksmFamilies{
		nodeInfo:    g("kube_node_info", "Information about a cluster node."),
		nodeCond:    g("kube_node_status_condition", "The condition of a cluster node."),
		nodeCap:     g("kube_node_status_capacity", "The capacity for different resources of a node."),
		nodeAlloc:   g("kube_node_status_allocatable", "The allocatable for different resources of a node that are available for scheduling."),
		nodeUnsched: g("kube_node_spec_unschedulable", "Whether a node can schedule new pods."),
		podInfo:     g("kube_pod_info", "Information about pod."),
		podOwner:    g("kube_pod_owner", "Information about the Pod's owner."),
		podPhase:    g("kube_pod_status_phase", "The pods current phase."),
		podReady:    g("kube_pod_status_ready", "Describes whether the pod is ready to serve requests."),
		podStart:    g("kube_pod_start_time", "Start time in unix timestamp for a pod."),
		podReason:   g("kube_pod_status_reason", "The pod status reasons"),
		restarts:    reg.family("kube_pod_container_status_restarts", typeCounter, "The number of container restarts per container."),
		running:     g("kube_pod_container_status_running", "Describes whether the container is currently in running state."),
		ctrReady:    g("kube_pod_container_status_ready", "Describes whether the containers readiness check succeeded."),
		waiting:     g("kube_pod_container_status_waiting_reason", "Describes the reason the container is currently in waiting state."),
		lastReason:  g("kube_pod_container_status_last_terminated_reason", "Describes the last reason the container was in terminated state."),
		lastTime:    g("kube_pod_container_status_last_terminated_timestamp", "Last terminated time for a pod container in unix timestamp."),
		requests:    g("kube_pod_container_resource_requests", "The number of requested request resource by a container."),
		limits:      g("kube_pod_container_resource_limits", "The number of requested limit resource by a container."),
		rsOwner:     g("kube_replicaset_owner", "Information about the ReplicaSet's owner."),
		depReplicas: g("kube_deployment_spec_replicas", "Number of desired pods for a deployment."),
		depAvail:    g("kube_deployment_status_replicas_available", "The number of available replicas per deployment."),
		depObsGen:   g("kube_deployment_status_observed_generation", "The generation observed by the deployment controller."),
	}
	s := c.serve
	k.rsets = append(k.rsets, ksmWorkload{
		owner: k.newSeries(k.f.rsOwner, "kube_replicaset_owner", "namespace", InferenceNamespace, "replicaset", s.rs,
			"owner_kind", "Deployment", "owner_name", s.name, "owner_is_controller", "true", "instance", ksmInstance, "job", jobKSM),
		replicas:   k.newSeries(k.f.depReplicas, "kube_deployment_spec_replicas", "namespace", InferenceNamespace, "deployment", s.name, "instance", ksmInstance, "job", jobKSM),
		available:  k.newSeries(k.f.depAvail, "kube_deployment_status_replicas_available", "namespace", InferenceNamespace, "deployment", s.name, "instance", ksmInstance, "job", jobKSM),
		generation: k.newSeries(k.f.depObsGen, "kube_deployment_status_observed_generation", "namespace", InferenceNamespace, "deployment", s.name, "instance", ksmInstance, "job", jobKSM),
	})
	return k
}

// newSeries makes a kube-state-metrics series. Scraped without
// honor_labels (KSMExported), Prometheus renames its namespace, pod and
// container labels exported_* and sets them to the kube-state-metrics
// pod's own.
func (k *kubeStateMetrics) newSeries(f *family, name string, kv ...string) *series {
	if k.c.cfg.Labels.KSM != KSMExported {
		return f.newSeries(name, kv...)
	}
	out := make([]string, 0, len(kv)+len(ksmTargetLabels))
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case "namespace", "pod", "container":
			out = append(out, "exported_"+kv[i], kv[i+1])
		default:
			out = append(out, kv[i], kv[i+1])
		}
	}
	return f.newSeries(name, append(out, ksmTargetLabels...)...)
}

// ksmTargetLabels are the Kubernetes target labels of the kube-state-metrics
// pod, as kube-prometheus-stack's ServiceMonitor sets them.
var ksmTargetLabels = []string{"container", "kube-state-metrics", "endpoint", "http", "namespace", "monitoring",
	"pod", ksmSelfPod, "service", "kube-prometheus-stack-kube-state-metrics"}

func (k *kubeStateMetrics) nodeSeries(n *node) *ksmNode {
	if s, ok := k.nodes[n]; ok {
		return s
	}
	t := []string{"instance", ksmInstance, "job", jobKSM}
	s := &ksmNode{
		info: k.newSeries(k.f.nodeInfo, "kube_node_info", with([]string{"node", n.name, "internal_ip", n.ip,
			"kernel_version", n.kernel, "kubelet_version", n.kubelet, "container_runtime_version", "containerd://1.7.22",
			"os_image", "Ubuntu 22.04.5 LTS", "provider_id", n.provider}, t...)...),
		unsched: k.newSeries(k.f.nodeUnsched, "kube_node_spec_unschedulable", with([]string{"node", n.name}, t...)...),
	}
	for i, c := range nodeConditions {
		for j, st := range condStatuses {
			s.cond[i][j] = k.newSeries(k.f.nodeCond, "kube_node_status_condition", with([]string{"node", n.name, "condition", c, "status", st}, t...)...)
		}
	}
	for _, r := range [][2]string{{"cpu", "core"}, {"memory", "byte"}, {"nvidia_com_gpu", "integer"}, {"pods", "integer"}} {
		kv := with([]string{"node", n.name, "resource", r[0], "unit", r[1]}, t...)
		s.capacity = append(s.capacity, k.newSeries(k.f.nodeCap, "kube_node_status_capacity", kv...))
		s.alloc = append(s.alloc, k.newSeries(k.f.nodeAlloc, "kube_node_status_allocatable", kv...))
	}
	k.nodes[n] = s
	return s
}

func (k *kubeStateMetrics) podSeries(p *pod) *ksmPod {
	if s, ok := k.pods[p]; ok {
		return s
	}
	t := []string{"instance", ksmInstance, "job", jobKSM}
	id := []string{"namespace", p.namespace, "pod", p.name, "uid", p.uid}
	ctr := with(id, "container", p.container)
	s := &ksmPod{
		info: k.newSeries(k.f.podInfo, "kube_pod_info", with(id, "host_ip", p.node.ip, "pod_ip", p.ip, "node", p.node.name,
			"created_by_kind", p.ownerKind, "created_by_name", p.ownerName, "priority_class", "", "host_network", "false", "instance", ksmInstance, "job", jobKSM)...),
		owner: k.newSeries(k.f.podOwner, "kube_pod_owner", with(id, "owner_kind", p.ownerKind, "owner_name", p.ownerName,
			"owner_is_controller", "true", "instance", ksmInstance, "job", jobKSM)...),
		start:      k.newSeries(k.f.podStart, "kube_pod_start_time", with(id, t...)...),
		restarts:   k.newSeries(k.f.restarts, "kube_pod_container_status_restarts_total", with(ctr, t...)...),
		running:    k.newSeries(k.f.running, "kube_pod_container_status_running", with(ctr, t...)...),
		ready:      k.newSeries(k.f.ctrReady, "kube_pod_container_status_ready", with(ctr, t...)...),
		lastTime:   k.newSeries(k.f.lastTime, "kube_pod_container_status_last_terminated_timestamp", with(ctr, t...)...),
		lastReason: map[string]*series{}, waiting: map[string]*series{},
		kv: ctr,
	}
	for i, ph := range podPhases {
		s.phase[i] = k.newSeries(k.f.podPhase, "kube_pod_status_phase", with(id, "phase", ph, "instance", ksmInstance, "job", jobKSM)...)
	}
	for i, re := range podReasons {
		s.reason[i] = k.newSeries(k.f.podReason, "kube_pod_status_reason", with(id, "reason", re, "instance", ksmInstance, "job", jobKSM)...)
	}
	for i, st := range condStatuses {
		s.podReady[i] = k.newSeries(k.f.podReady, "kube_pod_status_ready", with(id, "condition", st, "instance", ksmInstance, "job", jobKSM)...)
	}
	for _, r := range [][2]string{{"cpu", "core"}, {"memory", "byte"}, {"nvidia_com_gpu", "integer"}} {
		s.requests = append(s.requests, k.newSeries(k.f.requests, "kube_pod_container_resource_requests",
			with(ctr, "node", p.node.name, "resource", r[0], "unit", r[1], "instance", ksmInstance, "job", jobKSM)...))
	}
	s.limitGPU = k.newSeries(k.f.limits, "kube_pod_container_resource_limits",
		with(ctr, "node", p.node.name, "resource", "nvidia_com_gpu", "unit", "integer", "instance", ksmInstance, "job", jobKSM)...)
	k.pods[p] = s
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// scrape emits every node, pod and workload.
func (k *kubeStateMetrics) scrape(o *scrapeOut) {
	cfg := k.c.cfg
	for _, n := range k.c.nodes {
		s := k.nodeSeries(n)
		o.add(s.info, 1)
		o.add(s.unsched, 0)
		for i := range nodeConditions {
			want := 1 // condStatuses: true, false, unknown; pressures are false
			switch {
			case n.state.readyUnknown:
				want = 2
			case i == 0:
				want = 0
			case i == 1 && n.host.baseMemUsed+n.cond.memUsed > memPressureAt:
				want = 0
			case i == 2 && n.cond.diskPressure:
				want = 0
			}
			for j := range condStatuses {
				o.add(s.cond[i][j], b2f(j == want))
			}
		}
		healthy := 0
		for _, g := range n.gpus {
			if !g.cond.lost {
				healthy++
			}
		}
		caps := []float64{float64(cfg.NodeCPUs * 8), memTotal, float64(len(n.gpus)), 110}
		alloc := []float64{float64(cfg.NodeCPUs*8) - 0.5, memTotal - 12<<30, float64(healthy), 110}
		for i := range caps {
			o.add(s.capacity[i], caps[i])
			o.add(s.alloc[i], alloc[i])
		}
	}
	for _, p := range k.c.pods {
		k.scrapePod(o, p)
	}
	avail := 0
	for _, r := range k.c.serve.replicas {
		if replicaServes(r) {
			avail++
		}
	}
	for _, w := range k.rsets {
		o.add(w.owner, 1)
		o.add(w.replicas, float64(len(k.c.serve.replicas)))
		o.add(w.available, float64(avail))
		o.add(w.generation, k.c.serve.generation)
	}
	if k.c.serve.rollout != nil {
		k.scrapeRollout(o)
	}
}

// scrapeRollout emits what only a run with a rollout has: the
// Deployment's metadata.generation (a step ahead of the observed one when
// its spec changes) and, from the change, the new ReplicaSet.
func (k *kubeStateMetrics) scrapeRollout(o *scrapeOut) {
	s := k.c.serve
	if k.metaGen == nil {
		f := k.reg.family("kube_deployment_metadata_generation", typeGauge, "Sequence number representing a specific generation of the desired state.")
		k.metaGen = k.newSeries(f, "kube_deployment_metadata_generation", "namespace", InferenceNamespace, "deployment", s.name, "instance", ksmInstance, "job", jobKSM)
	}
	o.add(k.metaGen, s.specGeneration)
	if s.specGeneration == s.generation && k.newRS == nil {
		return
	}
	if k.newRS == nil {
		k.newRS = k.newSeries(k.f.rsOwner, "kube_replicaset_owner", "namespace", InferenceNamespace, "replicaset", s.rollout.rs,
			"owner_kind", "Deployment", "owner_name", s.name, "owner_is_controller", "true", "instance", ksmInstance, "job", jobKSM)
	}
	o.add(k.newRS, 1)
}

func (k *kubeStateMetrics) scrapePod(o *scrapeOut, p *pod) {
	s, st := k.podSeries(p), &p.st
	o.add(s.info, 1)
	o.add(s.owner, 1)
	o.add(s.start, float64(st.started.Unix()))
	for i, ph := range podPhases {
		o.add(s.phase[i], b2f(ph == st.phase))
	}
	for i, re := range podReasons {
		o.add(s.reason[i], b2f(re == st.reason))
	}
	ready := st.ready && !p.node.state.readyUnknown
	for i := range condStatuses {
		o.add(s.podReady[i], b2f((i == 0) == ready))
	}
	o.add(s.restarts, st.restarts)
	o.add(s.running, b2f(st.phase == "Running" && st.waitingReason == ""))
	o.add(s.ready, b2f(ready && st.waitingReason == ""))
	reqs := []float64{p.cpuRequest, p.memRequest, float64(len(p.gpus))}
	for i, v := range reqs {
		o.add(s.requests[i], v)
	}
	o.add(s.limitGPU, float64(len(p.gpus)))
	if st.lastReason != "" {
		o.add(k.reasonSeries(s.lastReason, k.f.lastReason, "kube_pod_container_status_last_terminated_reason", s.kv, st.lastReason), 1)
		o.add(s.lastTime, float64(st.lastTerminated.Unix()))
	}
	if st.waitingReason != "" {
		o.add(k.reasonSeries(s.waiting, k.f.waiting, "kube_pod_container_status_waiting_reason", s.kv, st.waitingReason), 1)
	}
}

func (k *kubeStateMetrics) reasonSeries(m map[string]*series, f *family, name string, kv []string, reason string) *series {
	if s, ok := m[reason]; ok {
		return s
	}
	s := k.newSeries(f, name, with(kv, "reason", reason, "instance", ksmInstance, "job", jobKSM)...)
	m[reason] = s
	return s
}

// leLabel formats a bucket boundary as Python's prometheus_client does.
func leLabel(b float64) string {
	if b == float64(int64(b)) {
		return strconv.FormatFloat(b, 'f', 1, 64)
	}
	return fmt.Sprint(b)
}
