package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// DefaultStart is the first simulated instant unless a Config says
// otherwise: a fixed date, so that output is reproducible.
var DefaultStart = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

// Label variants: the ways real deployments spell the same thing.
const (
	// HostnameUpper is dcgm-exporter's node label until 2026 ("Hostname").
	HostnameUpper = "Hostname"
	// HostnameLower is dcgm-exporter's node label since 2026 ("hostname").
	HostnameLower = "hostname"
	// PodLabelsNew are dcgm-exporter's pod attribution labels (pod,
	// namespace, container) and UUID.
	PodLabelsNew = "new"
	// PodLabelsOld are the labels of --use-old-namespace (pod_name,
	// pod_namespace, container_name) and uuid.
	PodLabelsOld = "old"
	// NVLinkGauge types DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL gauge, as
	// dcgm-exporter does since 2026.
	NVLinkGauge = "gauge"
	// NVLinkCounter types it counter, as older dcgm-exporters did, although
	// it is a MiB/s gauge.
	NVLinkCounter = "counter"
	// InstanceIP makes node-exporter's instance an IP:port.
	InstanceIP = "ip"
	// InstanceName makes node-exporter's instance a node name:port.
	InstanceName = "name"
	// On and Off switch an optional exporter feature (XIDCount,
	// NVLinkErrors).
	On  = "on"
	Off = "off"
	// KSMHonored keeps kube-state-metrics' namespace, pod and container
	// labels (honor_labels: true).
	KSMHonored = "honored"
	// KSMExported scrapes kube-state-metrics without honor_labels: its
	// namespace, pod and container become exported_namespace, exported_pod
	// and exported_container, and namespace, pod and container name the
	// kube-state-metrics pod itself.
	KSMExported = "exported"
	// BlankAbsent leaves DCGM_FI_DEV_MEMORY_TEMP a real reading;
	// BlankSentinel makes the GPUs report it unsupported: DCGM's int64
	// NOT_SUPPORTED blank (9223372036854775794), as some GPUs and drivers
	// do.
	BlankAbsent   = "value"
	BlankSentinel = "blank"
	// VLLMNew speaks vLLM 0.11's names; VLLMOld vLLM 0.9's
	// (vllm:gpu_cache_usage_perc, vllm:time_per_output_token_seconds, no
	// engine label).
	VLLMNew = "0.11"
	VLLMOld = "0.9"
)

// Labels chooses the label variants of one run. An empty field is drawn
// from the seed (Config.Resolve), so that a series of seeds covers every
// spelling.
type Labels struct {
	// DCGMHost is HostnameUpper or HostnameLower.
	DCGMHost string
	// DCGMPod is PodLabelsNew or PodLabelsOld.
	DCGMPod string
	// NVLinkType is NVLinkGauge or NVLinkCounter.
	NVLinkType string
	// NodeInstance is InstanceIP or InstanceName.
	NodeInstance string
	// XIDCount is On when dcgm-exporter also exports
	// DCGM_EXP_XID_ERRORS_COUNT (XIDs per code over its 5-minute window).
	XIDCount string
	// NVLinkErrors is On when dcgm-exporter exports the NVLink CRC, replay
	// and recovery error counters.
	NVLinkErrors string
	// KSM is KSMHonored or KSMExported.
	KSM string
	// DCGMBlank is BlankAbsent or BlankSentinel.
	DCGMBlank string
	// VLLM is VLLMNew or VLLMOld.
	VLLM string
	// XIDField is On (the default, never drawn from the seed) when
	// dcgm-exporter's counters CSV has DCGM_FI_DEV_XID_ERRORS, Off for one
	// without it: neither the sticky XID gauge nor
	// DCGM_EXP_XID_ERRORS_COUNT is exported, and only the kernel log tells
	// of an XID.
	XIDField string
}

// Config describes the simulated cluster and run. The zero value of every
// field takes its default in Resolve; DefaultConfig returns them.
type Config struct {
	// Seed makes a run reproducible: the same Config and scenario give the
	// same bytes.
	Seed uint64
	// Start is the first simulated instant (default DefaultStart).
	Start time.Time
	// Duration is how long the run lasts (default 1h).
	Duration time.Duration
	// Nodes is the number of GPU nodes, gpu-node-01 onwards (default 10).
	Nodes int
	// GPUsPerNode is the number of GPUs of each node (default 8).
	GPUsPerNode int
	// GPUModel is A100, H100 or H200 (default H100).
	GPUModel string
	// TrainingNodes is the number of nodes of the synchronous training job,
	// one rank (pod) of GPUsPerNode GPUs on each, from the first node
	// (default 8; 0 is not allowed: use 1 for a one-node job).
	TrainingNodes int
	// Replicas is the number of vLLM replicas (default 4), placed on the
	// nodes after the training job.
	Replicas int
	// GPUsPerReplica is each replica's tensor-parallel size (default 2).
	GPUsPerReplica int
	// ServedModel is vLLM's model_name (default
	// meta-llama/Llama-3.1-70B-Instruct).
	ServedModel string
	// Tenants share the inference traffic (default tenant-a to tenant-e,
	// the request path's tenants).
	Tenants []string
	// PeakRequestRate is the deployment's request rate at the diurnal peak,
	// in requests per second (default 12).
	PeakRequestRate float64
	// ScrapeInterval is Prometheus's scrape interval (default 15s).
	ScrapeInterval time.Duration
	// DCGMInterval is dcgm-exporter's collection and scrape interval
	// (default 30s, its own default); a multiple of ScrapeInterval.
	DCGMInterval time.Duration
	// CheckpointEvery is how often the training job checkpoints (default
	// 20m); CheckpointFor is how long a checkpoint stalls it (default 60s).
	CheckpointEvery, CheckpointFor time.Duration
	// NodeCPUs is the number of CPUs node-exporter reports per node
	// (default 16: enough for per-CPU realism, few enough to keep an hour's
	// output small).
	NodeCPUs int
	// FaultScale multiplies every fault's effect size, its distance from
	// healthy (an NVLink factor of 0.01 is 0.99 away from healthy), clamped
	// so that a fault stays the kind it is (default 1; evaluations draw it
	// in [0.5, 1.5]).
	FaultScale float64
	// NoiseScale multiplies every noise amplitude, and so the healthy
	// spreads (default 1).
	NoiseScale float64
	// Labels are the label variants; empty fields are drawn from Seed.
	Labels Labels
	// NCCLTimeout is the NCCL watchdog timeout the training job runs with
	// (the timeout of torch.distributed.init_process_group): how long after a rank is
	// lost the surviving ranks log the watchdog's timeout (see Logs).
	// PyTorch's default is 10 minutes; the default here is 5, so that a
	// 30-minute run shows it. At most 10 minutes: the metrics' job model
	// tears the hung ranks down 10 minutes after a hang whatever this is.
	NCCLTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultDuration        = time.Hour
	DefaultNodes           = 10
	DefaultGPUsPerNode     = 8
	DefaultGPUModel        = "H100"
	DefaultTrainingNodes   = 8
	DefaultReplicas        = 4
	DefaultGPUsPerReplica  = 2
	DefaultServedModel     = "meta-llama/Llama-3.1-70B-Instruct"
	DefaultPeakRequestRate = 12
	DefaultScrapeInterval  = 15 * time.Second
	DefaultDCGMInterval    = 30 * time.Second
	DefaultCheckpointEvery = 20 * time.Minute
	DefaultCheckpointFor   = 60 * time.Second
	DefaultNodeCPUs        = 16
	DefaultNCCLTimeout     = 5 * time.Minute
)

// Limits that keep a Config from asking for more than a test machine holds.
const (
	maxNodes       = 1000
	maxGPUsPerNode = 16
	maxDuration    = 7 * 24 * time.Hour
	maxNodeCPUs    = 256
	maxScale       = 4.0
)

// DefaultTenants are the tenants of a Config that names none; they match the
// request path's (internal/sim/reqpath).
func DefaultTenants() []string {
	return []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d", "tenant-e"}
}

// DefaultConfig returns the default cluster with seed 1 and every label
// variant still to be drawn.
func DefaultConfig() Config {
	return Config{Seed: 1}.withDefaults()
}

// withDefaults fills the zero fields except Labels.
func (c Config) withDefaults() Config {
	set := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	c.Start = c.Start.UTC()
	setD(&c.Duration, DefaultDuration)
	set(&c.Nodes, DefaultNodes)
	set(&c.GPUsPerNode, DefaultGPUsPerNode)
	if c.GPUModel == "" {
		c.GPUModel = DefaultGPUModel
	}
	set(&c.TrainingNodes, min(DefaultTrainingNodes, c.Nodes))
	set(&c.Replicas, DefaultReplicas)
	set(&c.GPUsPerReplica, DefaultGPUsPerReplica)
	if c.ServedModel == "" {
		c.ServedModel = DefaultServedModel
	}
	if len(c.Tenants) == 0 {
		c.Tenants = DefaultTenants()
	} else {
		c.Tenants = slices.Clone(c.Tenants)
	}
	if c.PeakRequestRate == 0 {
		c.PeakRequestRate = DefaultPeakRequestRate
	}
	setD(&c.ScrapeInterval, DefaultScrapeInterval)
	setD(&c.DCGMInterval, DefaultDCGMInterval)
	setD(&c.CheckpointEvery, DefaultCheckpointEvery)
	setD(&c.CheckpointFor, DefaultCheckpointFor)
	set(&c.NodeCPUs, DefaultNodeCPUs)
	setD(&c.NCCLTimeout, DefaultNCCLTimeout)
	if c.FaultScale == 0 {
		c.FaultScale = 1
	}
	if c.NoiseScale == 0 {
		c.NoiseScale = 1
	}
	return c
}

// Resolve returns c with every zero field set to its default and every
// empty label variant drawn from the seed. Resolve(Resolve(c)) == Resolve(c).
func (c Config) Resolve() Config {
	c = c.withDefaults()
	r := rand.New(rand.NewPCG(c.Seed, streamLabels))
	pick := func(p *string, a, b string, pa float64) {
		v := b
		if r.Float64() < pa {
			v = a
		}
		if *p == "" {
			*p = v
		}
	}
	// Every draw happens whatever is set, so one fixed field does not
	// change the others.
	pick(&c.Labels.DCGMHost, HostnameUpper, HostnameLower, 0.5)
	pick(&c.Labels.DCGMPod, PodLabelsOld, PodLabelsNew, 0.2)
	pick(&c.Labels.NVLinkType, NVLinkCounter, NVLinkGauge, 0.4)
	pick(&c.Labels.NodeInstance, InstanceName, InstanceIP, 0.5)
	pick(&c.Labels.XIDCount, On, Off, 0.5)
	pick(&c.Labels.NVLinkErrors, On, Off, 0.6)
	pick(&c.Labels.KSM, KSMExported, KSMHonored, 0.3)
	pick(&c.Labels.DCGMBlank, BlankSentinel, BlankAbsent, 0.3)
	pick(&c.Labels.VLLM, VLLMOld, VLLMNew, 0.3)
	if c.Labels.XIDField == "" {
		c.Labels.XIDField = On
	}
	return c
}

// ErrInvalidConfig is wrapped by every error of Validate.
var ErrInvalidConfig = errors.New("invalid simulator config")

// Validate reports the first problem of a resolved Config (see Resolve).
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if _, err := LookupGPU(c.GPUModel); err != nil {
		return bad("%v", err)
	}
	switch {
	case c.Start.IsZero():
		return bad("start is required")
	case c.Duration <= 0 || c.Duration > maxDuration:
		return bad("duration %s is outside (0, %s]", c.Duration, maxDuration)
	case c.Nodes < 1 || c.Nodes > maxNodes:
		return bad("nodes %d is outside [1, %d]", c.Nodes, maxNodes)
	case c.GPUsPerNode < 1 || c.GPUsPerNode > maxGPUsPerNode:
		return bad("GPUs per node %d is outside [1, %d]", c.GPUsPerNode, maxGPUsPerNode)
	case c.TrainingNodes < 1 || c.TrainingNodes > c.Nodes:
		return bad("training nodes %d is outside [1, nodes=%d]", c.TrainingNodes, c.Nodes)
	case c.Replicas < 1 || c.GPUsPerReplica < 1 || c.GPUsPerReplica > c.GPUsPerNode:
		return bad("%d replicas of %d GPUs: need at least one replica of 1 to %d GPUs", c.Replicas, c.GPUsPerReplica, c.GPUsPerNode)
	case c.ServedModel == "":
		return bad("served model is empty")
	case !(c.PeakRequestRate > 0 && c.PeakRequestRate <= 10_000):
		return bad("peak request rate %g is outside (0, 10000]", c.PeakRequestRate)
	case c.ScrapeInterval < time.Second || c.ScrapeInterval%time.Second != 0:
		return bad("scrape interval %s must be a whole number of seconds, at least 1s", c.ScrapeInterval)
	case c.DCGMInterval < c.ScrapeInterval || c.DCGMInterval%c.ScrapeInterval != 0:
		return bad("DCGM interval %s must be a multiple of the scrape interval %s", c.DCGMInterval, c.ScrapeInterval)
	case c.Duration < c.DCGMInterval:
		return bad("duration %s is shorter than the DCGM interval %s", c.Duration, c.DCGMInterval)
	case c.CheckpointEvery <= c.CheckpointFor || c.CheckpointFor < 0:
		return bad("checkpoints every %s for %s: the stall must be shorter than the period", c.CheckpointEvery, c.CheckpointFor)
	case c.NodeCPUs < 1 || c.NodeCPUs > maxNodeCPUs:
		return bad("node CPUs %d is outside [1, %d]", c.NodeCPUs, maxNodeCPUs)
	case !(c.FaultScale > 0 && c.FaultScale <= maxScale):
		return bad("fault scale %g is outside (0, %g]", c.FaultScale, maxScale)
	case !(c.NoiseScale > 0 && c.NoiseScale <= maxScale):
		return bad("noise scale %g is outside (0, %g]", c.NoiseScale, maxScale)
	case c.NCCLTimeout < time.Second || c.NCCLTimeout > ncclTimeout:
		return bad("NCCL timeout %s is outside [1s, %s]", c.NCCLTimeout, ncclTimeout)
	}
	// The inference replicas and the notebook fit on the nodes the
	// training job leaves.
	free := (c.Nodes - c.TrainingNodes) * c.GPUsPerNode
	perNode := c.GPUsPerNode / c.GPUsPerReplica
	if need := (c.Replicas + perNode - 1) / perNode; c.Nodes-c.TrainingNodes < need || free < c.Replicas*c.GPUsPerReplica+1 {
		return bad("%d replicas of %d GPUs and a notebook do not fit on the %d nodes the training job leaves",
			c.Replicas, c.GPUsPerReplica, c.Nodes-c.TrainingNodes)
	}
	seen := map[string]bool{}
	for _, t := range c.Tenants {
		if t == "" || seen[t] {
			return bad("tenant %q is empty or repeated", t)
		}
		seen[t] = true
	}
	l := c.Labels
	switch {
	case l.DCGMHost != HostnameUpper && l.DCGMHost != HostnameLower:
		return bad("DCGM host label %q is neither %s nor %s", l.DCGMHost, HostnameUpper, HostnameLower)
	case l.DCGMPod != PodLabelsNew && l.DCGMPod != PodLabelsOld:
		return bad("DCGM pod labels %q are neither %s nor %s", l.DCGMPod, PodLabelsNew, PodLabelsOld)
	case l.NVLinkType != NVLinkGauge && l.NVLinkType != NVLinkCounter:
		return bad("NVLink type %q is neither %s nor %s", l.NVLinkType, NVLinkGauge, NVLinkCounter)
	case l.NodeInstance != InstanceIP && l.NodeInstance != InstanceName:
		return bad("node-exporter instance %q is neither %s nor %s", l.NodeInstance, InstanceIP, InstanceName)
	case l.XIDCount != On && l.XIDCount != Off:
		return bad("XID count %q is neither %s nor %s", l.XIDCount, On, Off)
	case l.NVLinkErrors != On && l.NVLinkErrors != Off:
		return bad("NVLink errors %q is neither %s nor %s", l.NVLinkErrors, On, Off)
	case l.KSM != KSMHonored && l.KSM != KSMExported:
		return bad("kube-state-metrics labels %q are neither %s nor %s", l.KSM, KSMHonored, KSMExported)
	case l.DCGMBlank != BlankAbsent && l.DCGMBlank != BlankSentinel:
		return bad("DCGM blank %q is neither %s nor %s", l.DCGMBlank, BlankAbsent, BlankSentinel)
	case l.VLLM != VLLMNew && l.VLLM != VLLMOld:
		return bad("vLLM names %q are neither %s nor %s", l.VLLM, VLLMNew, VLLMOld)
	case l.XIDField != On && l.XIDField != Off:
		return bad("XID field %q is neither %s nor %s", l.XIDField, On, Off)
	}
	return nil
}
