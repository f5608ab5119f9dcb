package sim

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Names of the simulated workloads.
const (
	// TrainingNamespace and TrainingJob name the synchronous training job
	// (a Kubeflow PyTorchJob); its pods are TrainingJob-worker-N.
	TrainingNamespace = "ml-train"
	TrainingJob       = "llm-pretrain"
	// InferenceNamespace holds the vLLM deployment.
	InferenceNamespace = "inference"
	// NotebookNamespace and NotebookPod name the interactive notebook that
	// holds one GPU (the gpu_idle fault's victim).
	NotebookNamespace = "research"
	NotebookPod       = "notebook-0"
)

// pod phases kube-state-metrics reports.
var podPhases = [...]string{"Pending", "Running", "Succeeded", "Failed", "Unknown"}

// cluster is the static shape of the simulated cluster: nodes, GPUs, pods
// and workloads, with their identities. Its mutable state lives in the
// entities' state fields and is advanced by the world.
type cluster struct {
	cfg      Config
	spec     GPUSpec
	nodes    []*node
	pods     []*pod // every pod, in kube-state-metrics order
	job      *trainJob
	serve    *serving
	notebook *pod
}

// node is one GPU node.
type node struct {
	idx      int
	name, ip string
	gpus     []*gpu
	pods     []*pod
	rng      *rng
	boot     time.Time // last boot
	ambient  float64   // inlet temperature, °C
	host     hostState
	cond     nodeCond
	state    nodeRun
	hcas     int
	kernel   string
	kubelet  string
	provider string
}

// gpu is one GPU of a node.
type gpu struct {
	node      *node
	idx       int
	uuid, pci string
	pod       *pod
	rng       *rng
	// static quirks: the silicon lottery and the airflow.
	tempOffset, powerScale float64
	st                     gpuState
	cond                   gpuCond
}

// pod is one Kubernetes pod.
type pod struct {
	name, namespace, uid, ip string
	container                string
	node                     *node
	gpus                     []*gpu
	ownerKind, ownerName     string
	cpuRequest, memRequest   float64
	created                  time.Time
	st                       podState
	// memLeak is the share of the way from the container's usual working
	// set to its memory limit a leak has taken it this tick (0 healthy).
	memLeak float64
	// rep is the vLLM replica the pod runs, if any; training marks a rank
	// of the training job.
	rep      *replica
	training bool
	// image, if set, is the container's image instead of its workload's
	// (a rollout's new version).
	image string
}

// podState is what kube-state-metrics reports of a pod over time.
type podState struct {
	phase          string
	reason         string // pod status reason (Evicted, ...), "" when none
	ready          bool
	restarts       float64
	lastReason     string    // last terminated reason, "" when none
	lastTerminated time.Time // when
	waitingReason  string
	started        time.Time // kube_pod_start_time
	// oomKills counts the OOM kills in the pod's cgroup (cAdvisor's
	// pod-level container_oom_events_total).
	oomKills float64
}

// newCluster lays out the cluster a resolved, valid Config describes.
func newCluster(cfg Config) *cluster {
	spec, _ := LookupGPU(cfg.GPUModel)
	c := &cluster{cfg: cfg, spec: spec}
	r := newRand(cfg, "cluster")
	for i := range cfg.Nodes {
		c.nodes = append(c.nodes, c.newNode(i, r))
	}
	c.job = c.newTrainJob(r)
	c.serve = c.newServing(r)
	c.notebook = c.placeNotebook(r)
	return c
}

// hgxBusIDs are the PCI bus IDs of the eight GPUs of an HGX H100 board.
var hgxBusIDs = [...]string{"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"}

func (c *cluster) newNode(i int, r *rng) *node {
	n := &node{
		idx:      i,
		name:     fmt.Sprintf("gpu-node-%02d", i+1),
		ip:       fmt.Sprintf("10.0.%d.%d", 1+i/200, 11+i%200),
		rng:      newRand(c.cfg, "node", fmt.Sprint(i)),
		hcas:     c.cfg.GPUsPerNode,
		kernel:   "5.15.0-124-generic",
		kubelet:  "v1.31.4",
		provider: fmt.Sprintf("aws:///us-east-1a/i-0%s", hexID(r, 16)),
	}
	n.boot = c.cfg.Start.Add(-time.Duration(3+r.IntN(40)) * 24 * time.Hour).Add(-time.Duration(r.IntN(86400)) * time.Second)
	n.ambient = 24 + 4*r.Float64()
	for g := range c.cfg.GPUsPerNode {
		bus := fmt.Sprintf("%02X", 0x18+g*0x10)
		if g < len(hgxBusIDs) {
			bus = hgxBusIDs[g]
		}
		n.gpus = append(n.gpus, &gpu{
			node:       n,
			idx:        g,
			uuid:       "GPU-" + uuid(r),
			pci:        "00000000:" + bus + ":00.0",
			rng:        newRand(c.cfg, "gpu", fmt.Sprint(i), fmt.Sprint(g)),
			tempOffset: gauss(r, 1),
			powerScale: 1 + gauss(r, 0.02),
		})
	}
	n.host = newHostState(c.cfg, n, r)
	return n
}

// addPod registers a pod on a node using gpus.
func (c *cluster) addPod(p *pod, n *node, gpus []*gpu) {
	p.node, p.gpus = n, gpus
	for _, g := range gpus {
		g.pod = p
	}
	n.pods = append(n.pods, p)
	c.pods = append(c.pods, p)
	p.ip = fmt.Sprintf("10.244.%d.%d", n.idx, 10+len(n.pods))
	p.st = podState{phase: "Running", ready: true, started: p.created}
}

// workloadName turns a served model into a deployment name the way people
// do: meta-llama/Llama-3.1-70B-Instruct becomes vllm-llama-3-1-70b.
func workloadName(model string) string {
	base := strings.ToLower(model[strings.LastIndex(model, "/")+1:])
	base = strings.TrimSuffix(base, "-instruct")
	base = regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(base, "-")
	return "vllm-" + strings.Trim(base, "-")
}
