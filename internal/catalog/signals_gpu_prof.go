package catalog

// gpuProfSignals are DCGM's profiling (DCP) fields: engine and pipe activity
// ratios and PCIe rates, sampled by the hardware counters (data-center GPUs
// only; one profiling client at a time).
func gpuProfSignals() []Signal {
	ratio := func(name, metric string, field int, meaning string) Signal {
		return Signal{Name: name, Level: LevelGPU, Type: Gauge, Unit: UnitRatio, Agg: Avg, Meaning: meaning,
			Sources: []Source{dcgm(metric, field)}}
	}
	return []Signal{
		ratio("gpu.gr_engine_active", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1001,
			"Fraction of time the graphics/compute engine was active. With MIG, per GPU instance."),
		ratio("gpu.sm_active", "DCGM_FI_PROF_SM_ACTIVE", 1002,
			"Fraction of cycles an SM had at least one warp assigned, averaged over SMs: how much of the GPU the work covers."),
		ratio("gpu.sm_occupancy", "DCGM_FI_PROF_SM_OCCUPANCY", 1003,
			"Fraction of the maximum resident warps present on an SM, averaged over SMs."),
		ratio("gpu.tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004,
			"Fraction of cycles the tensor (HMMA/IMMA) pipe was active: the best single measure of useful work in training and inference. A job whose ranks drop together stalled; one rank far below its peers is a straggler or waits on a bad link."),
		ratio("gpu.dram_active", "DCGM_FI_PROF_DRAM_ACTIVE", 1005,
			"Fraction of cycles the device memory interface was sending or receiving data: memory-bandwidth bound near 1."),
		ratio("gpu.fp64_active", "DCGM_FI_PROF_PIPE_FP64_ACTIVE", 1006,
			"Fraction of cycles the FP64 pipe was active."),
		ratio("gpu.fp32_active", "DCGM_FI_PROF_PIPE_FP32_ACTIVE", 1007,
			"Fraction of cycles the FP32 pipe was active."),
		ratio("gpu.fp16_active", "DCGM_FI_PROF_PIPE_FP16_ACTIVE", 1008,
			"Fraction of cycles the FP16 pipe was active (not counting tensor cores)."),
		ratio("gpu.tensor_imma_active", "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", 1013,
			"Fraction of cycles the integer tensor pipe was active."),
		ratio("gpu.tensor_hmma_active", "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", 1014,
			"Fraction of cycles the half-precision tensor pipe was active."),
		ratio("gpu.tensor_dfma_active", "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", 1015,
			"Fraction of cycles the double-precision tensor pipe was active."),
		ratio("gpu.int_active", "DCGM_FI_PROF_PIPE_INT_ACTIVE", 1016,
			"Fraction of cycles the integer pipe was active."),
		{Name: "gpu.pcie_tx_rate", Level: LevelGPU, Type: Gauge, Unit: UnitBytesPerS, Agg: Sum,
			Meaning: "PCIe bytes transmitted per second, headers and payload (profiling field): a rate already.",
			Sources: []Source{dcgm("DCGM_FI_PROF_PCIE_TX_BYTES", 1009).
				with("a rate (bytes/s): never rate() it; the dcp CSV's commented line calls it a counter, its active line a gauge")}},
		{Name: "gpu.pcie_rx_rate", Level: LevelGPU, Type: Gauge, Unit: UnitBytesPerS, Agg: Sum,
			Meaning: "PCIe bytes received per second, headers and payload (profiling field): a rate already. A dataloader-bound job shows high PCIe RX and low tensor activity.",
			Sources: []Source{dcgm("DCGM_FI_PROF_PCIE_RX_BYTES", 1010).
				with("a rate (bytes/s): never rate() it")}},
	}
}
