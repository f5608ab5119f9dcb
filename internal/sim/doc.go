// Package sim owns the cluster simulator: a deterministic model of a GPU
// Kubernetes cluster — by default 10 nodes of 8 H100s, an 8-node
// synchronous training job (a PyTorchJob, pods llm-pretrain-worker-N in
// ml-train), a vLLM deployment of 4 tensor-parallel replicas in inference,
// and a research notebook holding one GPU — that emits the telemetry such a
// cluster emits, in the real vocabularies with their quirks, and injects
// faults with their ground truth.
//
// What it emits, through the names and label sets of internal/catalog:
//
//   - dcgm-exporter every 30 s: utilization, profiling ratios (SM, tensor,
//     DRAM), power, temperatures, clocks, framebuffer, NVLink bandwidth as
//     the MiB/s gauge it is (typed counter in some runs, as exporters did
//     until 2026), the sticky XID gauge, clock-event reasons, ECC and row
//     remap counts, PCIe replays and link, energy and violation counters;
//     Hostname or hostname, and --use-old-namespace's labels, by seed; by
//     seed too (Labels), DCGM_EXP_XID_ERRORS_COUNT (XIDs per code over its
//     5-minute window, repeats included), the NVLink CRC, replay and
//     recovery error counters, and DCGM's NOT_SUPPORTED blank for the
//     memory temperature instead of a reading.
//   - kube-state-metrics (in some seeds scraped without honor_labels:
//     exported_namespace, exported_pod, exported_container, with
//     namespace and pod its own), node-exporter (CPU, memory, pressure,
//     network, disk, InfiniBand; instance an IP:port or a name:port by
//     seed), vLLM v1 (0.11's names, or 0.9's in some seeds:
//     gpu_cache_usage_perc, time_per_output_token_seconds, no engine label;
//     queues, KV cache, tokens, and its histograms with vLLM's own bucket
//     boundaries), an online evaluator's model_accuracy, the kubelet's
//     cAdvisor (CPU, working set, memory limit, OOM events, CFS throttling
//     of every pod's container and of the pod's own cgroup; a restarted
//     container is a new ID and new series), every 15 s, and Prometheus's
//     up for every target.
//   - The request path (OTLP traces and logs) through internal/sim/reqpath,
//     given the same deployment, pods, nodes, tenants, traffic and fault
//     onsets (Simulator.RequestPath, Simulator.WriteRequestPath); a
//     bad_rollout is the same rolling update of the vLLM deployment in
//     both (new ReplicaSet, pods, version and takeover times), while
//     dependency_slow and tenant_failure show only in the request path.
//   - The cluster's logs as OTLP log records (RunOptions.OnLogs,
//     Simulator.WriteLogs; logs.go says what): every GPU node's kernel log
//     (the driver's XID lines with the GPU's PCI address, "GPU has fallen
//     off the bus", the OOM killer, AER, boot and benign noise), the
//     training ranks' output (the CUDA and NCCL errors of a rank whose GPU
//     broke, PyTorch's NCCL watchdog timeout Config.NCCLTimeout after the
//     job hung) and a Kubernetes event for each OOM-killed container.
//     Labels.XIDField Off is a dcgm-exporter without the XID field, where
//     only the kernel log tells of an XID.
//
// What the model gets right, because diagnosis depends on it: the training
// job is synchronous (the slowest rank sets every rank's pace, and a rank's
// trouble shows in its peers one DCGM interval later); an NCCL hang keeps
// GPU_UTIL near 100% while tensor activity, power and NVLink traffic
// collapse; checkpoints make every rank dip at once; counters reset when a
// process or a node restarts; a dead target's series vanish and up goes 0;
// inference traffic is diurnal with noise. Every run, healthy or faulty,
// holds the same benign decoys (Decoy): a warm GPU inside its limits, one
// correctable row remap (XID 63), a PCIe replay blip, a brief traffic
// spike, an XID left from days ago and an OOMKilled reason from an old
// restart.
//
// Faults (Scenario, FaultSpec, Fault): the scenario names are the cause
// kinds of DESIGN.md (every one but metric_anomaly), healthy, KIND/VARIANT
// and KIND+KIND; every kind has a subtle variant whose effect is about two
// of the healthy peers' spreads (within 3×, tests hold it), or the smallest
// real form of a discrete fault. Each fault picks its entity from the seed
// unless FaultSpec pins it (onsets fall between 40% and 65% of the run) and
// its truth names the entity with DESIGN.md's canonical keys.
// Config.FaultScale multiplies every fault's effect size (its distance
// from healthy, clamped so that a full fault stays its kind) and
// Config.NoiseScale every noise amplitude; evaluations draw both in
// [0.5, 1.5]. ScenarioNames lists them; ParseScenario reads a name; DemoScenario is
// NVLink degradation on GPU 3 of gpu-node-06.
//
// Entry points: New checks a Config and a Scenario; Simulator.WriteOpenMetrics
// writes a run as OpenMetrics text (what promtool's backfill and `vigil
// import` read); Simulator.Run appends a run into any storage.AppendableV2
// one scrape round per commit, moving an injected Clock and calling back
// after each round, so that `vigil demo`, `vigil eval` and tests drive the
// engine in accelerated time. Simulator.Truth and Simulator.Decoys give
// the ground truth.
//
// Determinism: time is never read (Config.Start defaults to a fixed date)
// and every concern draws from its own seeded math/rand/v2 stream, so the
// same Config and Scenario give byte-identical output, and a faulty run
// shares every draw with the healthy run of its seed except what the fault
// touches.
//
// The request path's spans and logs are internal/sim/reqpath's; this
// package only configures it. It does not diagnose anything.
package sim
