package kinds

import "slices"

// Layer is where in the stack a kind's fault sits (DESIGN.md's table).
type Layer string

// Layers.
const (
	LayerGPU           Layer = "gpu"
	LayerNode          Layer = "node"
	LayerWorkload      Layer = "workload"
	LayerObservability Layer = "observability"
	LayerWaste         Layer = "waste"
	LayerGeneric       Layer = "generic"
)

// Read is one catalog signal a detector reads, with the source labels it
// keeps apart (xid, reason, condition, le, ...).
type Read struct {
	Signal string
	Keep   []string
	// Lazy reads are read only when a detector asks (a large series
	// family needed for few candidates), not prefetched with the rest.
	Lazy bool
}

// Kind is one cause or finding kind.
type Kind struct {
	// Name is DESIGN.md's kind name: "nvlink_degraded".
	Name  string
	Layer Layer
	// Prior is how often the kind interrupts a large training run (see
	// All); it only breaks ties in ranking. 0 where no study counts it.
	Prior float64
	// Reads are the catalog signals its detectors read.
	Reads []Read
	// Title names the fault in a headline, after its entity:
	// "gpu-node-06 " + "NVLink degradation".
	Title string
	// Action is what to do, where a detector has nothing more specific.
	Action string
}

// Symptom is one symptom kind: a user-visible effect.
type Symptom struct {
	// Name is DESIGN.md's symptom kind name: "training_stall".
	Name string
	// Words name it in a headline: "... — probable cause of training stall".
	Words string
	// Reads are the catalog signals its detector reads.
	Reads []Read
}

// Cause and finding kinds (DESIGN.md).
const (
	NVLinkDegraded      = "nvlink_degraded"
	GPUXIDError         = "gpu_xid_error"
	GPULost             = "gpu_lost"
	GPUThermalThrottle  = "gpu_thermal_throttle"
	GPUPowerThrottle    = "gpu_power_throttle"
	GPUMemoryErrors     = "gpu_memory_errors"
	PCIeDegraded        = "pcie_degraded"
	NodeDown            = "node_down"
	NodeCPUSaturated    = "node_cpu_saturated"
	NodeMemoryPressure  = "node_memory_pressure"
	NodeNetworkDegraded = "node_network_degraded"
	InputPipelineSlow   = "input_pipeline_slow"
	PodOOMKilled        = "pod_oom_killed"
	PodCrashLoop        = "pod_crash_loop"
	PodEvicted          = "pod_evicted"
	Straggler           = "straggler"
	CapacitySaturated   = "inference_capacity_saturated"
	KVCacheExhausted    = "kv_cache_exhausted"
	DependencySlow      = "dependency_slow"
	TenantFailure       = "tenant_failure"
	BadRollout          = "bad_rollout"
	ModelDrift          = "model_drift"
	ExporterDown        = "exporter_down"
	GPUIdle             = "gpu_idle"
	MetricAnomaly       = "metric_anomaly"
)

// Symptom kinds (DESIGN.md).
const (
	TrainingStall        = "training_stall"
	TrainingSlowdown     = "training_slowdown"
	JobFailed            = "job_failed"
	InferenceLatencyHigh = "inference_latency_high"
	TTFTHigh             = "ttft_high"
	QueueGrowing         = "queue_growing"
	ErrorRateHigh        = "error_rate_high"
	ThroughputDrop       = "throughput_drop"
	SLOBurn              = "slo_burn"
)

func r(signal string, keep ...string) Read { return Read{Signal: signal, Keep: keep} }

// lazy is r for a read that is not prefetched.
func lazy(signal string) Read { return Read{Signal: signal, Lazy: true} }

// gpuWork are the signals a training job's work is read from, best first.
var gpuWork = []Read{r("gpu.tensor_active"), r("gpu.sm_active"), r("gpu.gr_engine_active"), r("gpu.util")}

// All returns every cause and finding kind, in DESIGN.md's order, which
// is also the order the engine runs their detectors in.
//
// The priors are how often each kind caused an unexpected interruption of
// a large training run: Meta's Llama 3 report (419 interruptions in 54
// days on 16,384 H100s: faulty GPU 30.1%, GPU HBM3 memory 17.2%, software
// 12.9%, network switch and cable 8.4%, host maintenance 7.6%, GPU SRAM
// 4.5%, GPU system processor 3.8%, NIC 1.7%, NCCL watchdog 1.7%, silent
// data corruption 1.4%, GPU thermal 0.2%, ...), spread over the kinds
// that name those components.
func All() []Kind {
	xid := []Read{r("gpu.xid"), r("gpu.xid_count", "xid")}
	return []Kind{
		{Name: NVLinkDegraded, Layer: LayerGPU, Prior: 0.06, Title: "NVLink degradation",
			Reads: append(slices.Clone(xid), r("gpu.nvlink_bandwidth"), r("gpu.nvlink_crc_flit_errors"), r("gpu.nvlink_crc_data_errors"),
				r("gpu.nvlink_replay_errors"), r("gpu.nvlink_recovery_errors")),
			Action: "drain the node and reset the GPU's NVLink (nvidia-smi nvlink -s); restart the job on healthy nodes"},
		{Name: GPUXIDError, Layer: LayerGPU, Prior: 0.30, Title: "GPU error (XID)", Reads: xid,
			Action: "drain the node and follow the XID's documented action (reset the GPU or reboot); restart the job on healthy nodes"},
		{Name: GPULost, Layer: LayerGPU, Prior: 0.10, Title: "GPU lost (fell off the bus)", Reads: append(slices.Clone(xid), r("gpu.temp")),
			Action: "drain the node and reboot it; replace the GPU if it falls off the bus again"},
		{Name: GPUThermalThrottle, Layer: LayerGPU, Prior: 0.01, Title: "thermal throttling",
			Reads:  []Read{r("gpu.temp"), r("gpu.slowdown_temp"), r("gpu.sm_clock"), r("gpu.power"), r("gpu.thermal_violation"), r("gpu.clock_event_reasons")},
			Action: "check the node's cooling (fans, airflow, inlet temperature); drain it if the GPU keeps throttling"},
		{Name: GPUPowerThrottle, Layer: LayerGPU, Prior: 0.01, Title: "power throttling",
			Reads:  []Read{r("gpu.power_violation"), r("gpu.clock_event_reasons"), r("gpu.power"), r("gpu.util"), r("gpu.sm_clock"), r("gpu.temp"), r("gpu.slowdown_temp")},
			Action: "check the node's power supplies and power limits (nvidia-smi -q -d POWER); drain it if the brake stays on"},
		{Name: GPUMemoryErrors, Layer: LayerGPU, Prior: 0.17, Title: "GPU memory errors",
			Reads: append(slices.Clone(xid), r("gpu.ecc_dbe_volatile"), r("gpu.ecc_sbe_volatile"), r("gpu.remapped_rows_uncorrectable"),
				r("gpu.remapped_rows_correctable"), r("gpu.row_remap_failure")),
			Action: "drain the node and reset the GPU to apply pending row remaps; replace it if remapping failed"},
		{Name: PCIeDegraded, Layer: LayerGPU, Prior: 0.02, Title: "PCIe link degraded",
			Reads:  []Read{r("gpu.pcie_replays"), lazy("gpu.pcie_tx"), lazy("gpu.pcie_rx"), r("gpu.pcie_link_width"), r("gpu.pcie_link_gen")},
			Action: "drain the node and reseat or replace the GPU's riser or cable; check lspci -vv for the link state"},
		{Name: NodeDown, Layer: LayerNode, Prior: 0.076, Title: "node down",
			Reads:  []Read{r("k8s.node_condition", "condition", "status"), r("gpu.temp"), r("node.load1")},
			Action: "check the node's kubelet and power; cordon it and reschedule its pods"},
		{Name: NodeCPUSaturated, Layer: LayerNode, Title: "CPU saturated", Reads: []Read{r("node.cpu_seconds", "mode"), r("node.load1")},
			Action: "find the process using the node's CPUs (top, kubectl top pods); move it or give the job more CPUs"},
		{Name: NodeMemoryPressure, Layer: LayerNode, Title: "memory pressure",
			Reads:  []Read{r("node.memory_available"), r("node.memory_total"), r("k8s.node_condition", "condition", "status")},
			Action: "find what fills the node's memory; set memory limits or move pods off the node"},
		{Name: NodeNetworkDegraded, Layer: LayerNode, Prior: 0.08, Title: "network degraded",
			Reads: []Read{r("node.ib_state", "device", "port"), r("node.ib_link_downed"), r("node.ib_symbol_errors"),
				r("node.ib_receive_errors"), r("node.network_receive_errors")},
			Action: "check the node's NICs, cables and switch ports (ibstat, ethtool -S); drain it if a port stays down"},
		{Name: InputPipelineSlow, Layer: LayerNode, Title: "input pipeline slow", Reads: []Read{r("node.pressure_io_waiting")},
			Action: "check the shared storage and the dataloaders (workers, prefetch); the GPUs wait for data on every rank"},
		{Name: PodOOMKilled, Layer: LayerNode, Title: "OOM-killed",
			Reads:  []Read{r("k8s.container_restarts"), r("k8s.container_last_terminated_reason", "reason")},
			Action: "raise the container's memory limit or lower its batch size"},
		{Name: PodCrashLoop, Layer: LayerNode, Prior: 0.13, Title: "crash loop",
			Reads:  []Read{r("k8s.container_restarts"), r("k8s.container_waiting_reason", "reason"), r("k8s.container_last_terminated_reason", "reason")},
			Action: "read the container's last logs (kubectl logs --previous) and fix what makes it exit"},
		{Name: PodEvicted, Layer: LayerNode, Title: "evicted", Reads: []Read{r("k8s.pod_status_reason", "reason")},
			Action: "check the node's pressure conditions and the pod's priority; reschedule it"},
		{Name: Straggler, Layer: LayerNode, Prior: 0.02, Title: "straggling rank", Reads: gpuWork,
			Action: "profile the rank (py-spy, nsys); cordon the node and restart the job on healthy nodes if it stays slow"},
		{Name: CapacitySaturated, Layer: LayerWorkload, Title: "inference capacity saturated",
			Reads:  []Read{r("infer.queue_depth"), r("infer.request_success"), r("gpu.util")},
			Action: "scale the deployment out (more replicas) or shed load"},
		{Name: KVCacheExhausted, Layer: LayerWorkload, Title: "KV cache exhausted",
			Reads:  []Read{r("infer.kv_cache_usage"), r("infer.preemptions")},
			Action: "lower max_num_seqs or the context length, or give the model more GPU memory"},
		{Name: DependencySlow, Layer: LayerWorkload, Title: "slow dependency",
			Action: "look at the slow hop's own telemetry; add a timeout or a fallback for it"},
		{Name: TenantFailure, Layer: LayerWorkload, Title: "one tenant's requests failing",
			Action: "look at the tenant's requests (vigil slow, vigil logs); it is not a platform outage"},
		{Name: BadRollout, Layer: LayerWorkload, Title: "bad rollout", Reads: []Read{r("k8s.deployment_generation")},
			Action: "roll the deployment back (kubectl rollout undo) and compare the two versions"},
		{Name: ModelDrift, Layer: LayerWorkload, Title: "model drift",
			Action: "compare the current inputs with the training data; retrain or roll back the model"},
		{Name: ExporterDown, Layer: LayerObservability, Title: "exporter down", Reads: []Read{r("gpu.temp"), r("node.load1")},
			Action: "restart the exporter on the node; Vigil cannot see its GPUs until then"},
		{Name: GPUIdle, Layer: LayerWaste, Title: "GPUs held but idle", Reads: gpuWork,
			Action: "release the GPUs (scale the pod down or stop the notebook)"},
		{Name: MetricAnomaly, Layer: LayerGeneric, Title: "anomaly",
			Action: "look at the entity's own telemetry first: its anomaly started no later than the others'"},
	}
}

// Symptoms returns every symptom kind, in DESIGN.md's order.
func Symptoms() []Symptom {
	infer := []Read{r("infer.ttft", "le"), r("infer.e2e_latency", "le"), r("infer.queue_depth"),
		r("infer.request_success"), r("infer.request_success", "finished_reason")}
	return []Symptom{
		{Name: TrainingStall, Words: "training stall", Reads: gpuWork},
		{Name: TrainingSlowdown, Words: "training slowdown", Reads: gpuWork},
		{Name: JobFailed, Words: "job failure", Reads: []Read{r("k8s.container_restarts")}},
		{Name: InferenceLatencyHigh, Words: "high inference latency", Reads: infer},
		{Name: TTFTHigh, Words: "high time to first token", Reads: infer},
		{Name: QueueGrowing, Words: "growing queue", Reads: infer},
		{Name: ErrorRateHigh, Words: "high error rate", Reads: infer},
		{Name: ThroughputDrop, Words: "throughput drop", Reads: infer},
		{Name: SLOBurn, Words: "SLO burn"},
	}
}

// Lookup returns the cause or finding kind of a name.
func Lookup(name string) (Kind, bool) {
	for _, k := range All() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// LookupSymptom returns the symptom kind of a name.
func LookupSymptom(name string) (Symptom, bool) {
	for _, s := range Symptoms() {
		if s.Name == name {
			return s, true
		}
	}
	return Symptom{}, false
}

// Names returns the cause and finding kind names, in All's order.
func Names() []string {
	var out []string
	for _, k := range All() {
		out = append(out, k.Name)
	}
	return out
}

// OfLayer returns the names of the kinds of a layer, in All's order.
func OfLayer(l Layer) []string {
	var out []string
	for _, k := range All() {
		if k.Layer == l {
			out = append(out, k.Name)
		}
	}
	return out
}

// Reads returns every signal read the kinds and symptoms declare, each
// signal with its kept labels once, in declaration order.
func Reads() []Read {
	var out []Read
	add := func(rs []Read) {
		for _, rd := range rs {
			if !slices.ContainsFunc(out, func(o Read) bool { return o.Signal == rd.Signal && slices.Equal(o.Keep, rd.Keep) }) {
				out = append(out, rd)
			}
		}
	}
	for _, s := range Symptoms() {
		add(s.Reads)
	}
	for _, k := range All() {
		add(k.Reads)
	}
	return out
}

// Declares reports whether some kind or symptom declares reading signal.
func Declares(signal string) bool {
	return slices.ContainsFunc(Reads(), func(rd Read) bool { return rd.Signal == signal })
}
