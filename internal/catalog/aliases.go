package catalog

// builtinAliases returns each vocabulary's own entity label aliases, each
// list preferred first; the Kubernetes target labels (targetAliases) follow
// them for every vocabulary.
func builtinAliases() map[Vocabulary][]Alias {
	own := func(a ...Alias) []Alias { return a }
	return map[Vocabulary][]Alias{
		DCGMExporter: own(
			Alias{Key: KeyNode, Labels: []string{"Hostname", "hostname"}, Versions: "Hostname until 2026, hostname since",
				Note: "the exporter's NODE_NAME; a container ID when it ran without it (not a node)"},
			Alias{Key: KeyGPU, Labels: []string{"gpu"}, Note: "GPU index on the node, as a string"},
			Alias{Key: KeyUUID, Labels: []string{"UUID", "uuid"}, Note: "uuid with --use-old-namespace"},
			Alias{Key: KeyGPUInstance, Labels: []string{"GPU_I_ID"}, Note: "MIG instance ID; absent without MIG"},
			Alias{Key: AttrMIGProfile, Labels: []string{"GPU_I_PROFILE"}, Note: "MIG profile, e.g. 1g.5gb"},
			// A ServiceMonitor without honorLabels renames the exporter's
			// pod attribution to exported_*, and pod/namespace then name
			// the exporter's own pod: the exported_* labels win.
			Alias{Key: KeyPod, Labels: []string{"exported_pod", "pod", "pod_name"},
				Note: "pod_name with --use-old-namespace; exported_pod when scraped without honor_labels"},
			Alias{Key: KeyNamespace, Labels: []string{"exported_namespace", "namespace", "pod_namespace"},
				Note: "pod_namespace with --use-old-namespace"},
			Alias{Key: KeyContainer, Labels: []string{"exported_container", "container", "container_name"},
				Note: "container_name with --use-old-namespace"},
			Alias{Key: AttrGPUModel, Labels: []string{"modelName", "DCGM_FI_DEV_NAME"}},
			Alias{Key: AttrDriverVersion, Labels: []string{"DCGM_FI_DRIVER_VERSION"}},
		),
		VLLM: own(
			Alias{Key: KeyModel, Labels: []string{"model_name"}, Note: "the served model name; absent on info gauges such as vllm:cache_config_info"},
			Alias{Key: AttrEngine, Labels: []string{"engine"}, Versions: "since 0.10", Note: "engine index within one server"},
		),
		NIM: own(
			Alias{Key: KeyModel, Labels: []string{"model_name"}},
		),
		SGLang: own(
			Alias{Key: KeyModel, Labels: []string{"model_name"}},
		),
		TGI: own(
			Alias{Key: KeyModel, Labels: []string{"model_id"}, Note: "TGI series carry no model: one server serves one model, named by the target labels"},
		),
		Triton: own(
			Alias{Key: KeyModel, Labels: []string{"model"}},
			Alias{Key: AttrModelVersion, Labels: []string{"version"}},
			Alias{Key: KeyUUID, Labels: []string{"gpu_uuid"}, Note: "nv_gpu_* series"},
		),
		TRTLLM: own(
			Alias{Key: KeyModel, Labels: []string{"model"}},
			Alias{Key: AttrModelVersion, Labels: []string{"version"}},
		),
		KServe: own(
			Alias{Key: KeyModel, Labels: []string{"model_name"}},
			Alias{Key: KeyService, Labels: []string{"service_name"}, Note: "the InferenceService, where the target labels add it"},
		),
		RayServe: own(
			Alias{Key: KeyService, Labels: []string{"deployment", "application"}, Note: "a Serve deployment (or application) is the service"},
			Alias{Key: KeyModel, Labels: []string{"model_id"}, Note: "only with multiplexed models"},
		),
		OTelGenAI: own(
			Alias{Key: KeyModel, Labels: []string{"gen_ai_request_model", "gen_ai_response_model"}},
			Alias{Key: KeyService, Labels: []string{"service_name", "job"}, Note: "service.name; job is service.namespace/service.name after translation"},
			Alias{Key: KeyPod, Labels: []string{"k8s_pod_name"}},
			Alias{Key: KeyNamespace, Labels: []string{"k8s_namespace_name"}},
			Alias{Key: KeyNode, Labels: []string{"k8s_node_name", "host_name"}},
		),
		KubeStateMetrics: own(
			// Scraped without honor_labels, kube-state-metrics' namespace,
			// pod and container labels become exported_* and the plain
			// ones name its own pod: the exported_* labels win.
			Alias{Key: KeyNode, Labels: []string{"exported_node", "node"}},
			Alias{Key: KeyPod, Labels: []string{"exported_pod", "pod"}, Note: "exported_pod when scraped without honor_labels"},
			Alias{Key: KeyNamespace, Labels: []string{"exported_namespace", "namespace"}, Note: "exported_namespace when scraped without honor_labels"},
			Alias{Key: KeyContainer, Labels: []string{"exported_container", "container"}, Note: "exported_container when scraped without honor_labels"},
			Alias{Key: AttrNodeAddress, Labels: []string{"host_ip", "internal_ip"}, Note: "kube_pod_info host_ip, kube_node_info internal_ip: map node-exporter IPs to nodes"},
			Alias{Key: KeyWorkload,
				Labels:     []string{"owner_name", "created_by_name", "job_name", "statefulset", "deployment", "daemonset", "replicaset", "leaderworkerset"},
				KindLabels: []string{"owner_kind", "created_by_kind"},
				Kinds:      []string{"", "", "Job", "StatefulSet", "Deployment", "DaemonSet", "ReplicaSet", "LeaderWorkerSet"},
				Note:       "owner_* on kube_pod_owner and kube_*_owner, created_by_* on kube_pod_info; \"<none>\" means no owner"},
		),
		NodeExporter: own(
			Alias{Key: KeyNode, Labels: []string{"node", "nodename", "instance"},
				Note: "instance is a node name or an IP:port (the port is dropped); an IP goes to node_address for the topology to map"},
		),
		CAdvisor: own(
			Alias{Key: KeyNode, Labels: []string{"node", "instance"}, Note: "instance is the kubelet's address when no node label was added"},
		),
		Training: own(),
	}
}

// targetAliases are the labels Prometheus's Kubernetes discovery adds to
// every target (relabelled the common ways), for every vocabulary.
func targetAliases(tenantLabel string) []Alias {
	out := []Alias{
		{Key: KeyNode, Labels: []string{"node", "kubernetes_node", "k8s_node_name"}},
		{Key: KeyNamespace, Labels: []string{"namespace", "kubernetes_namespace", "k8s_namespace_name"}},
		{Key: KeyPod, Labels: []string{"pod", "kubernetes_pod_name", "pod_name", "k8s_pod_name"}},
		{Key: KeyContainer, Labels: []string{"container", "container_name", "k8s_container_name"}},
		{Key: KeyService, Labels: []string{"service"}},
	}
	if tenantLabel != "" {
		out = append(out, Alias{Key: KeyTenant, Labels: []string{tenantLabel}, Note: "configured tenant label"})
	}
	return out
}
