package robust

import (
	"math"
	"strconv"
)

// kubeFamilies are kube-state-metrics' families this generator writes.
type kubeFamilies struct {
	nodeInfo, nodeCond, nodeCap, nodeAlloc, nodeUnsched             *family
	podInfo, podOwner, podPhase, podReady, podStart, podReason      *family
	requests, limits, restarts, running, ready, waiting, waitReason *family
	lastTerm, rsOwner, depReplicas, depAvailable, depGen, ssReady   *family
	jobOwner, jobActive                                             *family
}

func newKubeFamilies(r *registry) *kubeFamilies {
	g := func(name, help string) *family { return r.family(name, typeGauge, help) }
	return &kubeFamilies{
		nodeInfo:     g("kube_node_info", "Information about a cluster node."),
		nodeCond:     g("kube_node_status_condition", "The condition of a cluster node."),
		nodeCap:      g("kube_node_status_capacity", "The capacity for different resources of a node."),
		nodeAlloc:    g("kube_node_status_allocatable", "The allocatable for different resources of a node that are available for scheduling."),
		nodeUnsched:  g("kube_node_spec_unschedulable", "Whether a node can schedule new pods."),
		podInfo:      g("kube_pod_info", "Information about pod."),
		podOwner:     g("kube_pod_owner", "Information about the Pod's owner."),
		podPhase:     g("kube_pod_status_phase", "The pods current phase."),
		podReady:     g("kube_pod_status_ready", "Describes whether the pod is ready to serve requests."),
		podStart:     g("kube_pod_start_time", "Start time in unix timestamp for a pod."),
		podReason:    g("kube_pod_status_reason", "The pod status reasons"),
		requests:     g("kube_pod_container_resource_requests", "The number of requested request resource by a container. It is recommended to use the kube_pod_resource_requests metric exposed by kube-scheduler instead, as it is more precise."),
		limits:       g("kube_pod_container_resource_limits", "The number of requested limit resource by a container. It is recommended to use the kube_pod_resource_limits metric exposed by kube-scheduler instead, as it is more precise."),
		restarts:     r.family("kube_pod_container_status_restarts_total", typeCounter, "The number of container restarts per container."),
		running:      g("kube_pod_container_status_running", "Describes whether the container is currently in running state."),
		ready:        g("kube_pod_container_status_ready", "Describes whether the containers readiness check succeeded."),
		waiting:      g("kube_pod_container_status_waiting", "Describes whether the container is currently in waiting state."),
		waitReason:   g("kube_pod_container_status_waiting_reason", "Describes the reason the container is currently in waiting state."),
		lastTerm:     g("kube_pod_container_status_last_terminated_reason", "Describes the last reason the container was in terminated state."),
		rsOwner:      g("kube_replicaset_owner", "Information about the ReplicaSet's owner."),
		depReplicas:  g("kube_deployment_spec_replicas", "Number of desired pods for a deployment."),
		depAvailable: g("kube_deployment_status_replicas_available", "The number of available replicas per deployment."),
		depGen:       g("kube_deployment_status_observed_generation", "The generation observed by the deployment controller."),
		ssReady:      g("kube_statefulset_status_replicas_ready", "The number of ready replicas per StatefulSet."),
		jobOwner:     g("kube_job_owner", "Information about the Job's owner."),
		jobActive:    g("kube_job_status_active", "The number of actively running pods."),
	}
}

var podPhases = []string{"Pending", "Succeeded", "Failed", "Unknown", "Running"}

var podReasons = []string{"Evicted", "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError"}

// gatherKube writes one kube-state-metrics scrape: what the API server
// holds now (a node that is down is still listed, its status going
// Unknown; its pods stay listed until deleted).
func (w *world) gatherKube(e *emitter) bool {
	f, c := w.kube, w.c
	for _, n := range c.nodes {
		e.add(f.nodeInfo, f.nodeInfo.name, 1, "container_runtime_version", "containerd://1.7.27", "internal_ip", n.ip,
			"kernel_version", n.kernel, "kubelet_version", "v1.31.6", "kubeproxy_version", "deprecated", "node", n.name,
			"os_image", "Ubuntu 22.04.5 LTS", "pod_cidr", "10.244."+strconv.Itoa(n.idx)+".0/24", "provider_id", "", "system_uuid", n.gpus[0].uuid[4:])
		for _, cond := range []string{"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"} {
			status := "false"
			switch {
			case n.k8s.ready == "unknown":
				status = "unknown"
			case cond == "Ready":
				status = n.k8s.ready
			case cond == "MemoryPressure" && n.k8s.memPressure:
				status = "true"
			}
			for _, s := range []string{"true", "false", "unknown"} {
				e.add(f.nodeCond, f.nodeCond.name, b2f(s == status), "condition", cond, "node", n.name, "status", s)
			}
		}
		for _, fam := range []*family{f.nodeCap, f.nodeAlloc} {
			gpus := 8.0
			if fam == f.nodeAlloc {
				gpus = float64(n.k8s.gpuAlloc)
			}
			e.add(fam, fam.name, float64(n.cpus), "node", n.name, "resource", "cpu", "unit", "core")
			e.add(fam, fam.name, math.Round(n.memTotal), "node", n.name, "resource", "memory", "unit", "byte")
			e.add(fam, fam.name, gpus, "node", n.name, "resource", "nvidia_com_gpu", "unit", "integer")
			e.add(fam, fam.name, 110, "node", n.name, "resource", "pods", "unit", "integer")
		}
		e.add(f.nodeUnsched, f.nodeUnsched.name, 0, "node", n.name)
	}
	for _, p := range c.pods {
		if !p.st.deleted {
			w.gatherPod(e, p)
		}
	}
	if d := c.serve; d != nil {
		for _, rs := range d.replicaSets {
			e.add(f.rsOwner, f.rsOwner.name, 1, "namespace", d.namespace, "replicaset", rs, "owner_kind", "Deployment",
				"owner_name", d.name, "owner_is_controller", "true")
		}
		avail := 0
		for _, r := range d.replicas {
			if !r.pod.st.deleted && r.pod.st.ready {
				avail++
			}
		}
		e.add(f.depReplicas, f.depReplicas.name, float64(d.want), "namespace", d.namespace, "deployment", d.name)
		e.add(f.depAvailable, f.depAvailable.name, float64(avail), "namespace", d.namespace, "deployment", d.name)
		e.add(f.depGen, f.depGen.name, float64(d.generation), "namespace", d.namespace, "deployment", d.name)
	}
	if nb := c.nb; nb != nil {
		e.add(f.ssReady, f.ssReady.name, b2f(nb.pod.st.ready), "namespace", nb.pod.namespace, "statefulset", nb.pod.ownerName)
	}
	if j := c.job; j.ownerKind == "Job" {
		e.add(f.jobOwner, f.jobOwner.name, 1, "namespace", j.namespace, "job_name", j.name, "owner_kind", "<none>",
			"owner_name", "<none>", "owner_is_controller", "<none>")
		active := 0
		for _, p := range j.pods {
			if p.st.running {
				active++
			}
		}
		e.add(f.jobActive, f.jobActive.name, float64(active), "namespace", j.namespace, "job_name", j.name)
	}
	return true
}

// gatherPod writes one pod's series.
func (w *world) gatherPod(e *emitter, p *pod) {
	f := w.kube
	ns, name, uid := p.namespace, p.name, p.uid
	e.add(f.podInfo, f.podInfo.name, 1, "namespace", ns, "pod", name, "uid", uid, "host_ip", p.node.ip, "pod_ip", p.ip,
		"node", p.node.name, "created_by_kind", p.ownerKind, "created_by_name", p.ownerName, "priority_class", "", "host_network", "false")
	e.add(f.podOwner, f.podOwner.name, 1, "namespace", ns, "pod", name, "uid", uid, "owner_kind", p.ownerKind,
		"owner_name", p.ownerName, "owner_is_controller", "true")
	for _, ph := range podPhases {
		e.add(f.podPhase, f.podPhase.name, b2f(ph == p.st.phase), "namespace", ns, "pod", name, "uid", uid, "phase", ph)
	}
	for _, s := range []string{"true", "false", "unknown"} {
		e.add(f.podReady, f.podReady.name, b2f((s == "true") == p.st.ready && s != "unknown"), "namespace", ns, "pod", name, "uid", uid, "condition", s)
	}
	for _, reason := range podReasons {
		e.add(f.podReason, f.podReason.name, b2f(reason == "NodeLost" && p.st.nodeLost), "namespace", ns, "pod", name, "uid", uid, "reason", reason)
	}
	e.add(f.podStart, f.podStart.name, float64(p.start.Unix()), "namespace", ns, "pod", name, "uid", uid)
	kv := []string{"namespace", ns, "pod", name, "uid", uid, "container", p.container}
	res := func(fam *family, v float64, resource, unit string) {
		e.add(fam, fam.name, v, append(kv, "node", p.node.name, "resource", resource, "unit", unit)...)
	}
	res(f.requests, p.cpuReq, "cpu", "core")
	res(f.requests, p.memReq, "memory", "byte")
	if len(p.gpus) > 0 {
		res(f.requests, float64(len(p.gpus)), "nvidia_com_gpu", "integer")
		res(f.limits, float64(len(p.gpus)), "nvidia_com_gpu", "integer")
	}
	res(f.limits, p.memReq, "memory", "byte")
	e.add(f.restarts, f.restarts.name, float64(p.st.restarts), kv...)
	e.add(f.running, f.running.name, b2f(p.st.running), kv...)
	e.add(f.ready, f.ready.name, b2f(p.st.ready), kv...)
	e.add(f.waiting, f.waiting.name, b2f(p.st.waiting != ""), kv...)
	if p.st.waiting != "" {
		e.add(f.waitReason, f.waitReason.name, 1, append(kv, "reason", p.st.waiting)...)
	}
	if p.st.lastTerm != "" {
		e.add(f.lastTerm, f.lastTerm.name, 1, append(kv, "reason", p.st.lastTerm)...)
	}
}
