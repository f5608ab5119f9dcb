package topology

import (
	"slices"
)

// isTrainingKind reports whether pods of this owner kind form a batch or
// gang workload: a training job when they hold GPUs.
func isTrainingKind(kind string) bool {
	switch kind {
	case "Job", "CronJob", "JobSet", "StatefulSet", "LeaderWorkerSet",
		"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "TrainJob",
		"RayJob", "RayCluster":
		return true
	}
	return false
}

// workloadOf follows a pod's owner chain to its workload: the controller
// owner (kube_pod_owner, else kube_pod_info created_by), lifted from a
// ReplicaSet to its Deployment (kube_replicaset_owner), from a Job to its
// CronJob or JobSet (kube_job_owner), from a StatefulSet to its
// LeaderWorkerSet and from a RayCluster to its RayJob (pod labels). A pod
// without an owner, or owned by its node (a static pod), has none.
func (k *kubeIndex) workloadOf(p *kubePod, warn *warnings) ref {
	r := p.owner
	if r.kind == "" {
		r = p.createdBy
	}
	if r.kind == "" || r.kind == ksmNone || r.name == "" || r.name == ksmNone || r.kind == "Node" {
		return ref{}
	}
	key := podKey{p.key.ns, r.name}
	switch r.kind {
	case "ReplicaSet":
		if o, ok := k.rsOwner[key]; ok {
			return o
		}
		if !k.rsOwnerRead {
			warn.add("no kube_replicaset_owner series, so pods of a ReplicaSet are not lifted to their Deployment", key.String())
		}
	case "Job":
		if o, ok := k.jobOwner[key]; ok {
			return o
		}
	case "StatefulSet":
		if lws := p.labels[labelLWSName]; lws != "" {
			return ref{"LeaderWorkerSet", lws}
		}
	case "RayCluster":
		if crd, name := p.labels[labelRayCRD], p.labels[labelRayCRDName]; crd != "" && name != "" {
			return ref{crd, name}
		}
	}
	return r
}

// workloadKey names a workload.
type workloadKey struct{ ns, kind, name string }

// workloads groups pods by workload and says where each runs.
func (a *assembly) workloads() []*Workload {
	byKey := map[workloadKey]*Workload{}
	keys := make([]podKey, 0, len(a.pods))
	for k := range a.pods {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, comparePodKeys)
	for _, key := range keys {
		p := a.pods[key]
		if p.Workload == "" {
			continue
		}
		wk := workloadKey{p.Namespace, p.WorkloadKind, p.Workload}
		w := byKey[wk]
		if w == nil {
			w = &Workload{Namespace: wk.ns, Name: wk.name, Kind: wk.kind, Tenant: p.Tenant, Pods: []string{}, Nodes: []string{}}
			byKey[wk] = w
		}
		w.Pods = append(w.Pods, p.Pod)
		if n := a.podNode[key]; n != "" && !slices.Contains(w.Nodes, n) {
			w.Nodes = append(w.Nodes, n)
		}
		if len(p.GPUs) > 0 {
			w.GPUs += len(p.GPUs)
		} else {
			w.GPUs += p.GPURequest
		}
		w.Services = addSorted(w.Services, p.Services...)
		if p.Model != "" {
			w.Models = addSorted(w.Models, p.Model)
		}
	}
	out := make([]*Workload, 0, len(byKey))
	for _, w := range byKey {
		slices.SortFunc(w.Nodes, naturalCompare)
		w.Role = role(w)
		out = append(out, w)
	}
	slices.SortFunc(out, func(x, y *Workload) int {
		if c := naturalCompare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		if c := naturalCompare(x.Name, y.Name); c != 0 {
			return c
		}
		return naturalCompare(x.Kind, y.Kind)
	})
	return out
}

// role says whether a workload is a training job or an inference
// deployment: serving a model makes it inference; holding GPUs makes a
// batch or gang kind training and a Deployment inference.
func role(w *Workload) string {
	switch {
	case len(w.Models) > 0:
		return RoleInference
	case w.GPUs == 0:
		return ""
	case isTrainingKind(w.Kind):
		return RoleTraining
	case w.Kind == "Deployment" || w.Kind == "ReplicaSet":
		return RoleInference
	}
	return ""
}

// addSorted adds the values not yet in s and keeps it sorted.
func addSorted(s []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	slices.SortFunc(s, naturalCompare)
	return s
}

func comparePodKeys(x, y podKey) int {
	if c := naturalCompare(x.ns, y.ns); c != 0 {
		return c
	}
	return naturalCompare(x.name, y.name)
}
