// Package robust is the diagnosis engine's adversary: a generator of GPU
// cluster telemetry written apart from internal/sim (it imports nothing of
// it and shares none of its code or constants), from what the exporters
// document, so that the engine is tested on data it was not tuned on.
//
// A run is a cluster drawn from the seed: 4 to 16 nodes of eight A100,
// H100 or H200 GPUs, a synchronous training job with one pod of 8 GPUs on
// most nodes (PyTorchJob or Job, pods NAME-worker-I), a vLLM Deployment of
// a few replicas, maybe a notebook and a spare node. It emits only what
// default installations export:
//
//   - dcgm-exporter's default fields (etc/default-counters.csv: clocks,
//     temperatures, power, energy, PCIe throughput and replays,
//     utilisations, XID, framebuffer, NVLink bandwidth, remapped rows) —
//     no profiling (DCGM_FI_PROF_*), violation or clock-event fields —
//     with its labels (gpu, UUID, pci_bus_id, device, modelName, Hostname
//     or hostname, DCGM_FI_DRIVER_VERSION, and container, namespace, pod
//     for GPUs pods hold) and its quirks: PCIe throughput is NVML's KB/s
//     reading over 20 ms typed as a counter, the NVLink bandwidth a MiB/s
//     gauge typed as a counter before 2026, the XID field sticky;
//   - kube-state-metrics (nodes, conditions, capacity, pods, owners,
//     phases, readiness, GPU requests, restarts, waiting and last
//     terminated reasons, ReplicaSets, Deployments);
//   - node-exporter (CPU seconds per CPU and mode, memory, load, network,
//     PSI pressure);
//   - vLLM (requests running and waiting, KV-cache usage, tokens,
//     preemptions, time-to-first-token, end-to-end, inter-token and queue
//     histograms);
//
// with the target labels Prometheus adds (job, instance, and through a
// ServiceMonitor namespace, pod, container, service, endpoint, honouring
// the exporter's pod labels or renaming them exported_*), an up series per
// target, and staleness markers where Prometheus writes them.
//
// The physics: power follows utilisation, the core temperature follows
// power with a first-order lag of about a minute plus a per-GPU offset and
// a slow wander of the node's inlet, clocks sit at boost with a per-GPU
// spread, the energy counter integrates power, throughput follows the
// job's progress, and the job runs at the pace of its slowest GPU.
//
// Healthy variation, drawn per run: per-GPU temperature offsets up to
// ±10 °C, checkpoints of 30 s to 10 minutes at irregular intervals (every
// rank pauses together), per-node speed ±5%, power noise, boost-clock
// spread, application XIDs (13, 31, 43, 45) on a notebook or a replaced
// replica, old sticky XIDs, single PCIe replays and correctable row
// remaps, one scrape interval per exporter (dcgm-exporter 10, 15, 30 or 60
// s, sometimes scraped twice per collection), missed scrapes, Prometheus
// and exporter restarts (gaps; a driver reload on a spare node resets its
// GPU counters to 0), a vLLM rollout or replica restart (counters from 0),
// a daily inference curve with bursts, and the naming and labelling of
// real installations (node names, scrape set-ups, exporter versions).
//
// Faults (Kinds) come at half and at double their usual size (Scenario),
// with their ground truth (Fault): the kind, the entity with DESIGN.md's
// keys and the onset. The sizes come from the physics and vendor
// documentation; each kind's build function says what its sizes are.
//
// It does not diagnose or score: internal/eval runs its scenarios (suite
// robust) through the engine.
package robust
