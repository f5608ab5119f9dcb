package catalog

// gpuLinkSignals are NVLink fields: bandwidth and link errors.
func gpuLinkSignals() []Signal {
	return []Signal{
		{Name: "gpu.nvlink_bandwidth", Level: LevelGPU, Type: Gauge, Unit: UnitMiBPerS, Agg: Sum,
			Meaning: "NVLink bandwidth over all links of a GPU, an instantaneous rate. During collective communication every GPU of a job moves about the same; one GPU far below its peers is a degraded link.",
			Sources: []Source{
				dcgm("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449).declared(Counter).versions("typed counter until 2026 (NVIDIA/dcgm-exporter #417, PR #658), gauge since").
					with("an instantaneous MiB/s gauge despite its # TYPE line: never rate() it"),
			}},
		{Name: "gpu.nvlink_link_bandwidth", Level: LevelGPU, Type: Gauge, Unit: UnitMiBPerS, Agg: Sum,
			Meaning: "NVLink bandwidth of one link (DCGM_FI_DEV_NVLINK_BANDWIDTH_L0..L17); compare links of one GPU to find the bad one.",
			Sources: []Source{dcgm("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", 440).declared(Counter).monotonicUnsure().
				with("link 0 (fields 440-445 are L0-L5; later links have later fields); DCGM calls it a bandwidth counter and the dcp CSV a byte count, but it comes from the same source as the total: check monotonicity")}},
		{Name: "gpu.nvlink_tx", Level: LevelGPU, Type: Gauge, Unit: UnitBytesPerS, Agg: Sum,
			Meaning: "NVLink bytes transmitted per second (profiling field, headers and payload): a rate already.",
			Sources: []Source{dcgm("DCGM_FI_PROF_NVLINK_TX_BYTES", 1011).with("a rate (bytes/s), not a counter: never rate() it")}},
		{Name: "gpu.nvlink_rx", Level: LevelGPU, Type: Gauge, Unit: UnitBytesPerS, Agg: Sum,
			Meaning: "NVLink bytes received per second (profiling field): a rate already.",
			Sources: []Source{dcgm("DCGM_FI_PROF_NVLINK_RX_BYTES", 1012).with("a rate (bytes/s), not a counter: never rate() it")}},
		{Name: "gpu.nvlink_crc_flit_errors", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "NVLink flow-control CRC errors over all links; a rising rate is a degrading link (cable, connector, NVSwitch port).",
			Healthy: AtMost(0, "a healthy link shows none; DCGM's NVLink health watch fails on a rising count"),
			Sources: []Source{dcgm("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 409)}},
		{Name: "gpu.nvlink_crc_data_errors", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "NVLink data CRC errors over all links.",
			Healthy: AtMost(0, "a healthy link shows none"),
			Sources: []Source{dcgm("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", 419)}},
		{Name: "gpu.nvlink_replay_errors", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "NVLink retransmissions (replays) over all links: recovered, but they cost bandwidth.",
			Healthy: AtMost(0, "a healthy link shows none"),
			Sources: []Source{dcgm("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", 429)}},
		{Name: "gpu.nvlink_recovery_errors", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "NVLink recovery events over all links: the link went down and retrained; traffic stalls meanwhile.",
			Healthy: AtMost(0, "any recovery is a link fault"),
			Sources: []Source{dcgm("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", 439)}},
	}
}
