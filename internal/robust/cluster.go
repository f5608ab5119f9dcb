package robust

import (
	"fmt"
	"math"
	"time"
)

// cluster is the simulated cluster: its nodes and GPUs and the pods on
// them, drawn from the seed.
type cluster struct {
	cfg    Config
	model  gpuModel
	driver string
	nodes  []*node
	pods   []*pod // every pod kube-state-metrics lists, in creation order
	job    *trainJob
	serve  *deployment
	nb     *notebook // nil: no notebook this run
	style  scrapeStyle
	ksmPod *pod
}

// node is one GPU node.
type node struct {
	idx        int
	name, ip   string
	gpus       []*gpu
	cpus       int
	memTotal   float64 // bytes
	inlet      float64 // °C, the node's cold-aisle temperature
	fan        ou      // slow wander of the inlet and fan curve
	speed      float64 // how fast its GPUs train relative to nominal
	kernel     string
	bootTime   float64 // Unix seconds
	host       hostState
	dcgmPod    *pod    // dcgm-exporter's DaemonSet pod
	dcgmTarget *target // its scrape target
	nodeExPod  *pod    // node-exporter's DaemonSet pod
	rng        *rng
	// down: the node is off the network (kubelet and exporters gone).
	down bool
	k8s  nodeK8s
}

// nodeK8s is what the API server says of a node.
type nodeK8s struct {
	ready       string // Ready's status: true, false or unknown
	memPressure bool
	gpuAlloc    int // allocatable nvidia.com/gpu
	unknownAt   time.Time
	// memPressureUntil: MemoryPressure is true until then.
	memPressureUntil time.Time
}

// gpu is one GPU and its physical state.
type gpu struct {
	node      *node
	idx       int
	uuid, bus string
	offset    float64 // °C above the node's other GPUs at equal power
	rthMul    float64 // its heatsink's spread around the model's rth
	tau       time.Duration
	boost     float64 // its highest clock under load (silicon spread), MHz
	holder    *pod    // the pod holding it, nil when unallocated
	rng       *rng
	st        gpuState
	// lost: fell off the bus; dcgm-exporter no longer reports it.
	lost bool
}

// pod is one Kubernetes pod.
type pod struct {
	namespace, name, uid, ip, container string
	node                                *node
	gpus                                []*gpu
	ownerKind, ownerName                string
	start                               time.Time
	cpuReq, memReq                      float64 // cores, bytes
	st                                  podState
}

// podState is what kube-state-metrics reports about a pod now.
type podState struct {
	phase     string // Pending, Running, ...
	ready     bool
	running   bool
	restarts  int
	waiting   string    // waiting reason, "" when not waiting
	lastTerm  string    // last terminated reason, "" when none
	deleted   bool      // gone from the API: kube-state-metrics drops it
	nodeLost  bool      // the node controller marked it (status reason NodeLost)
	container bool      // the container's process runs (its GPUs work)
	backAt    time.Time // when a restarted container runs again
	lastExit  time.Time
	backoff   time.Duration // the kubelet's next back-off
}

// scrapeStyle is how Prometheus discovers and labels the targets.
type scrapeStyle struct {
	// dcgmHonor: the dcgm-exporter ServiceMonitor honours the exporter's
	// pod labels (else they become exported_*); dcgmMonitor: scraped
	// through a ServiceMonitor at all (else a static job, instance and
	// job labels only).
	dcgmMonitor, dcgmHonor bool
	// hostnameLower: dcgm-exporter 2026 spells Hostname hostname.
	hostnameLower bool
	// nvlinkGaugeType: dcgm-exporter types the NVLink bandwidth a gauge
	// (2026 and later; a counter before).
	nvlinkGaugeType bool
	// nodeExInstanceIsNode: node-exporter's instance is the node name
	// (kube-prometheus relabels it), else IP:9100.
	nodeExInstanceIsNode bool
	// vllmPodMonitor: vLLM is scraped through a PodMonitor (job
	// "NAMESPACE/NAME"), else a ServiceMonitor (job is the service).
	vllmPodMonitor bool
	dcgmJob        string
	nodeExJob      string
}

// Namespaces of the platform's own pods.
const (
	nsGPUOperator = "gpu-operator"
	nsMonitoring  = "monitoring"
)

// newCluster draws the cluster of a resolved config.
func newCluster(cfg Config) *cluster {
	r := newRNG(cfg.Seed, "layout")
	c := &cluster{cfg: cfg, model: pick(r, gpuModels), driver: pick(r, drivers)}
	c.style = scrapeStyle{
		dcgmMonitor: r.chance(0.75), dcgmHonor: r.chance(0.5), hostnameLower: r.chance(0.3),
		nvlinkGaugeType: r.chance(0.3), nodeExInstanceIsNode: r.chance(0.5), vllmPodMonitor: r.chance(0.5),
		dcgmJob:   pick(r, []string{"nvidia-dcgm-exporter", "dcgm-exporter", "gpu-metrics"}),
		nodeExJob: pick(r, []string{"node-exporter", "node", "prometheus-node-exporter"}),
	}
	names := nodeNames(r, cfg.Nodes, c.model)
	subnet := r.between(0, 200)
	for i := range cfg.Nodes {
		n := &node{
			idx: i, name: names[i], ip: fmt.Sprintf("10.%d.%d.%d", 10+subnet/100, subnet%100+i/200, 10+i%200),
			cpus: pick(r, []int{24, 32, 48}), memTotal: pick(r, []float64{1024, 2048}) * (1 << 30) * 0.985,
			inlet: r.uniform(20, 29), speed: r.uniform(0.95, 1.05),
			kernel: pick(r, []string{"5.15.0-126-generic", "6.8.0-52-generic", "5.14.0-427.42.1.el9_4.x86_64"}),
			rng:    newRNG(cfg.Seed, "node/"+names[i]),
		}
		n.fan = ou{sd: r.uniform(0.8, 2.2), tau: r.duration(6*time.Minute, 20*time.Minute)}
		n.bootTime = float64(cfg.Start.Unix()) - r.uniform(2, 90)*86400
		// Per-GPU temperature offsets up to ±10 °C: slot position in the
		// chassis' airflow, heatsink mounting, paste.
		spread := r.uniform(7, 10)
		for j := range 8 {
			g := &gpu{
				node: n, idx: j, uuid: "GPU-" + r.hex(8) + "-" + r.hex(4) + "-" + r.hex(4) + "-" + r.hex(4) + "-" + r.hex(12),
				bus: dgxBusIDs[j], offset: r.uniform(-spread, spread), rthMul: r.uniform(0.93, 1.07),
				tau:   r.duration(45*time.Second, 75*time.Second),
				boost: c.model.maxSM - c.model.step*float64(r.between(0, 4)),
			}
			g.rng = newRNG(cfg.Seed, "gpu/"+g.uuid)
			n.gpus = append(n.gpus, g)
		}
		c.nodes = append(c.nodes, n)
	}
	c.place(r)
	return c
}

// nodeNames draws a naming scheme (DGX hostnames, EC2 private DNS names,
// GKE node names, a plain pool) and the nodes' names.
func nodeNames(r *rng, n int, m gpuModel) []string {
	short := map[string]string{"NVIDIA A100-SXM4-80GB": "a100", "NVIDIA H100 80GB HBM3": "h100", "NVIDIA H200": "h200"}[m.name]
	first, pool, scheme := r.between(1, 40), r.hex(8), r.intn(4)
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		var s string
		switch scheme {
		case 0:
			s = fmt.Sprintf("dgx-%s-%03d", short, first+i)
		case 1:
			s = fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", r.between(0, 3), r.between(0, 255), r.between(1, 254))
		case 2:
			s = fmt.Sprintf("gke-train-%s-pool-%s-%s", short, pool, r.suffix(4))
		default:
			s = fmt.Sprintf("gpu-%s-%02d", short, first+i)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// place draws the workloads and puts them on the nodes: the training job
// on most nodes (one pod of 8 GPUs each), the vLLM deployment after it,
// a notebook maybe, and a spare node maybe.
func (c *cluster) place(r *rng) {
	n := len(c.nodes)
	serveNodes := 1
	spare := 0
	if n >= 6 && r.chance(0.5) {
		spare = 1
	}
	train := n - serveNodes - spare
	c.ksmPod = c.newPod(r, nsMonitoring, "kube-state-metrics-"+r.suffix(10)[:10]+"-"+r.suffix(5), "kube-state-metrics",
		c.nodes[n-1], "ReplicaSet", "kube-state-metrics-"+r.suffix(10)[:10], 0.1, 256<<20)
	for _, nd := range c.nodes {
		nd.dcgmPod = c.newPod(r, nsGPUOperator, "nvidia-dcgm-exporter-"+r.suffix(5), "nvidia-dcgm-exporter", nd,
			"DaemonSet", "nvidia-dcgm-exporter", 0.1, 512<<20)
		nd.nodeExPod = c.newPod(r, nsMonitoring, "node-exporter-"+r.suffix(5), "node-exporter", nd,
			"DaemonSet", "node-exporter", 0.1, 180<<20)
	}
	c.job = newTrainJob(c, r, c.nodes[:train])
	c.serve = newDeployment(c, r, c.nodes[train])
	free := 0
	for _, g := range c.nodes[train].gpus {
		if g.holder == nil {
			free++
		}
	}
	if free > 0 && r.chance(0.8) {
		c.nb = newNotebook(c, r, c.nodes[train])
	}
}

// newPod makes a pod on node and lists it.
func (c *cluster) newPod(r *rng, ns, name, container string, nd *node, ownerKind, ownerName string, cpu, mem float64) *pod {
	p := &pod{
		namespace: ns, name: name, container: container, node: nd, ownerKind: ownerKind, ownerName: ownerName,
		uid:    r.hex(8) + "-" + r.hex(4) + "-4" + r.hex(3) + "-" + r.hex(4) + "-" + r.hex(12),
		ip:     fmt.Sprintf("10.244.%d.%d", nd.idx, r.between(2, 250)),
		start:  c.cfg.Start.Add(-time.Duration(r.uniform(0.5, 20)*86400) * time.Second).Truncate(time.Second),
		cpuReq: cpu, memReq: mem,
		st: podState{phase: "Running", ready: true, running: true, container: true},
	}
	c.pods = append(c.pods, p)
	return p
}

// hold gives k free GPUs of nd to p, lowest index first.
func (p *pod) hold(nd *node, k int) {
	for _, g := range nd.gpus {
		if k == 0 {
			return
		}
		if g.holder == nil {
			g.holder = p
			p.gpus = append(p.gpus, g)
			k--
		}
	}
}

// round to d decimals.
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}
