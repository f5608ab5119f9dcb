package topology

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Topology is the entity graph at one instant. Every list is sorted (nodes,
// GPUs and pods in natural order, so gpu-node-9 comes before gpu-node-10)
// and never nil, so that its JSON is stable.
type Topology struct {
	// At is the instant the graph describes.
	At time.Time `json:"at"`
	// Nodes are the cluster's nodes, each with its GPUs and pods.
	Nodes []*Node `json:"nodes"`
	// Workloads are the training jobs and inference deployments (and any
	// other owner of pods), with where their pods run.
	Workloads []*Workload `json:"workloads"`
	// Models are the served models (vLLM, NIM, SGLang model_name).
	Models []*Model `json:"models"`
	// Warnings say what is missing or ambiguous and why, one sentence each.
	Warnings []string `json:"warnings"`
}

// Node is one node. Name is the Kubernetes node name whenever any source
// resolves it; without kube-state-metrics it is the host name the exporters
// report, and it is empty when no source names the node (Unresolved says
// why): it is never an IP:port or a container ID.
type Node struct {
	// Name is the node name (canonical entity key node).
	Name string `json:"node"`
	// Ready is kube-state-metrics' Ready condition; nil when unknown.
	Ready *bool `json:"ready,omitempty"`
	// Unresolved says why Name is empty.
	Unresolved string `json:"unresolved,omitempty"`
	// Identities are the names and addresses each source gives the node,
	// and how each was mapped to Name.
	Identities []Identity `json:"identities"`
	// GPUCapacity is the node's nvidia.com/gpu capacity from
	// kube-state-metrics; 0 when unknown.
	GPUCapacity int `json:"gpu_capacity,omitempty"`
	// Health is a hint about the node itself, set only by ApplyHints (the
	// diagnosis's cause or finding on the node, e.g. node_down); empty
	// when nothing is known against it.
	Health Health `json:"health,omitempty"`
	// Reason explains Health in one sentence.
	Reason string `json:"health_reason,omitempty"`
	// GPUs are the GPUs dcgm-exporter reports on the node.
	GPUs []*GPU `json:"gpus"`
	// Pods are the pods scheduled on the node.
	Pods []*Pod `json:"pods"`
}

// Identity is one name a source gives a node.
type Identity struct {
	// Source is the exporter: dcgm-exporter, kube-state-metrics or
	// node-exporter.
	Source string `json:"source"`
	// Label is the label that carries the name (Hostname, hostname, node,
	// instance, nodename).
	Label string `json:"label"`
	// Value is the label's value.
	Value string `json:"value"`
	// Via says how a value that is not the node name was mapped to it (for
	// example "kube_node_info internal_ip"); empty when it is the name.
	Via string `json:"via,omitempty"`
}

// GPU is one physical GPU.
type GPU struct {
	// Index is the GPU's index on its node, as a string (entity key gpu).
	Index string `json:"gpu"`
	// UUID is the GPU's UUID (entity key uuid).
	UUID string `json:"uuid,omitempty"`
	// Model is the GPU's product name, e.g. "NVIDIA H100 80GB HBM3".
	Model string `json:"gpu_model,omitempty"`
	// Health is the one-word hint: one of the Health* constants from the
	// GPU's latest values, or the kind of the diagnosis's cause or finding
	// on it (ApplyHints).
	Health Health `json:"health"`
	// Reason explains Health in one sentence.
	Reason string `json:"health_reason,omitempty"`
	// Instances are the GPU's MIG instances; empty without MIG.
	Instances []*Instance `json:"instances,omitempty"`
	// Pods are the pods using the whole GPU.
	Pods []PodRef `json:"pods"`
}

// Instance is one MIG instance of a GPU.
type Instance struct {
	// ID is the GPU instance ID (entity key gpu_instance).
	ID string `json:"gpu_instance"`
	// Profile is the MIG profile, e.g. 1g.5gb.
	Profile string `json:"mig_profile,omitempty"`
	// Pods are the pods using the instance.
	Pods []PodRef `json:"pods"`
}

// PodRef names a pod that uses a GPU and says how that was learned.
type PodRef struct {
	// Namespace, Pod and Container name the pod (entity keys namespace,
	// pod, container); Container is empty when the exporter does not say.
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"`
	// By is AttributedByDCGM or AttributedByRequests.
	By string `json:"by"`
}

// How a GPU was attributed to a pod.
const (
	// AttributedByDCGM is dcgm-exporter's pod labels (exact).
	AttributedByDCGM = "dcgm-exporter"
	// AttributedByRequests is the only pod on the node whose
	// nvidia.com/gpu requests cover all of the node's GPUs.
	AttributedByRequests = "resource requests"
)

// Pod is one pod on a node.
type Pod struct {
	// Namespace and Pod name the pod (entity keys namespace, pod).
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	// Phase is kube-state-metrics' pod phase; empty when unknown.
	Phase string `json:"phase,omitempty"`
	// Workload is the name of the pod's workload, its kind WorkloadKind;
	// both empty for a pod without an owner.
	Workload     string `json:"workload,omitempty"`
	WorkloadKind string `json:"workload_kind,omitempty"`
	// Tenant is the namespace, or the configured tenant label's value.
	Tenant string `json:"tenant"`
	// GPUs are the indices of the GPUs attributed to the pod on its node.
	GPUs []string `json:"gpus,omitempty"`
	// GPURequest is the pod's nvidia.com/gpu request.
	GPURequest int `json:"gpu_request,omitempty"`
	// Services are the services whose endpoints include the pod.
	Services []string `json:"services,omitempty"`
	// Model is the model the pod serves.
	Model string `json:"model,omitempty"`
}

// Workload is the set of pods one controller owns: a training job (the pods
// of a StatefulSet, Job, PyTorchJob, RayJob, LeaderWorkerSet, ...) or an
// inference deployment (ReplicaSet → Deployment).
type Workload struct {
	// Namespace is the workload's namespace.
	Namespace string `json:"namespace"`
	// Name is the workload's name (entity key workload).
	Name string `json:"workload"`
	// Kind is the owner's kind after following the owner chain.
	Kind string `json:"kind"`
	// Role is RoleTraining, RoleInference or empty.
	Role string `json:"role,omitempty"`
	// Tenant is the tenant of its pods.
	Tenant string `json:"tenant"`
	// Pods and Nodes are where the workload runs.
	Pods  []string `json:"pods"`
	Nodes []string `json:"nodes"`
	// GPUs counts the GPUs attributed to its pods, or requested where no
	// GPU is attributed.
	GPUs int `json:"gpus"`
	// Services and Models are those of its pods.
	Services []string `json:"services,omitempty"`
	Models   []string `json:"models,omitempty"`
}

// Workload roles.
const (
	// RoleTraining is a GPU workload of a batch or gang kind.
	RoleTraining = "training"
	// RoleInference is a workload that serves a model, or a Deployment
	// holding GPUs.
	RoleInference = "inference"
)

// Model is one served model in one namespace.
type Model struct {
	// Namespace is the namespace of the pods serving it.
	Namespace string `json:"namespace"`
	// Name is the model name (entity key model).
	Name string `json:"model"`
	// Workloads and Pods serve it.
	Workloads []string `json:"workloads,omitempty"`
	Pods      []string `json:"pods"`
}

// Health is a one-word hint about a GPU, from its latest values.
type Health string

// The health hints, worst first.
const (
	// HealthLost is a GPU whose series stopped while the node's other GPUs
	// still report, or that logged XID 79 (fell off the bus).
	HealthLost Health = "lost"
	// HealthXID is a GPU whose sticky XID gauge changed to a new code in the
	// window, or whose windowed XID count is positive.
	HealthXID Health = "xid"
	// HealthECC is a GPU with volatile double-bit ECC errors or a failed
	// row remap.
	HealthECC Health = "ecc"
	// HealthThrottled is a GPU whose clocks are held down by hardware
	// slowdown or a power brake.
	HealthThrottled Health = "throttled"
	// HealthHot is a GPU at or above its slowdown temperature, or slowed by
	// a thermal limit.
	HealthHot Health = "hot"
	// HealthIdle is a GPU with no activity.
	HealthIdle Health = "idle"
	// HealthOK is a GPU with health signals and nothing wrong in them.
	HealthOK Health = "ok"
	// HealthUnknown is a GPU without any health signal.
	HealthUnknown Health = "unknown"
)

// ErrNoData is returned by Build when the store holds no sample at or
// before the instant asked for.
var ErrNoData = errors.New("no data")

// Options set how Build reads the store.
type Options struct {
	// Window is how far back before the instant the latest sample of a
	// series counts as current.
	Window time.Duration
	// History is how far back a GPU that stopped reporting is remembered,
	// so that it shows as lost.
	History time.Duration
	// TenantLabel is a Kubernetes label (of the pod, else of its namespace,
	// as kube-state-metrics exports them in kube_pod_labels and
	// kube_namespace_labels) whose value is the tenant; empty means the
	// tenant is the namespace.
	TenantLabel string
}

// DefaultOptions returns a 5-minute window (dcgm-exporter samples every
// 30 s, Prometheus's lookback is 5 minutes) and a 1-hour history.
func DefaultOptions() Options {
	return Options{Window: 5 * time.Minute, History: time.Hour}
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	switch {
	case o.Window <= 0:
		return fmt.Errorf("window must be positive, got %s", o.Window)
	case o.History < o.Window:
		return fmt.Errorf("history (%s) must be at least the window (%s)", o.History, o.Window)
	case strings.ContainsAny(o.TenantLabel, " \t\n\"{}=,"):
		return fmt.Errorf("tenant label %q is not a label name", o.TenantLabel)
	}
	return nil
}
