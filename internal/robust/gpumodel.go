package robust

// gpuModel is what a GPU model's datasheet and nvidia-smi -q say about
// it: the figures the physics needs.
type gpuModel struct {
	// name is dcgm-exporter's modelName.
	name string
	// tdp is the board power limit and idle the power of an idle GPU with
	// persistence mode on, in watts.
	tdp, idle float64
	// maxSM is the highest boost clock, idleSM the clock an idle GPU
	// falls to, step the clock granularity, memClock the memory clock,
	// in MHz.
	maxSM, idleSM, step, memClock float64
	// fbTotal is the framebuffer nvidia-smi reports and fbReserved what
	// the driver keeps of it, in MiB.
	fbTotal, fbReserved float64
	// nvlink is the NVLink bandwidth of one GPU over all its links in MiB/s
	// (600 GB/s NVLink 3, 900 GB/s NVLink 4), pcie the usable PCIe
	// bandwidth per direction in KB/s (Gen4 x16 about 25 GB/s, Gen5 x16
	// about 50 GB/s).
	nvlink, pcie float64
	// rth is the core's rise over the inlet per watt with a healthy
	// heatsink and fan curve, in °C/W; slowdown is the driver's slowdown
	// temperature; hbm is how much warmer the HBM runs than the core.
	rth, slowdown, hbm float64
	// trainFB is how much framebuffer a training rank holds per GPU
	// (MiB); a vLLM server holds its gpu_memory_utilization of fbTotal.
	trainFB float64
}

// gpuModels are the models a run draws from.
var gpuModels = []gpuModel{
	{name: "NVIDIA A100-SXM4-80GB", tdp: 400, idle: 58, maxSM: 1410, idleSM: 210, step: 15, memClock: 1593,
		fbTotal: 81920, fbReserved: 575, nvlink: 600e9 / (1 << 20), pcie: 25e9 / 1024,
		rth: 0.105, slowdown: 87, hbm: 7, trainFB: 71000},
	{name: "NVIDIA H100 80GB HBM3", tdp: 700, idle: 72, maxSM: 1980, idleSM: 345, step: 15, memClock: 2619,
		fbTotal: 81559, fbReserved: 527, nvlink: 900e9 / (1 << 20), pcie: 50e9 / 1024,
		rth: 0.064, slowdown: 89, hbm: 6, trainFB: 72500},
	{name: "NVIDIA H200", tdp: 700, idle: 76, maxSM: 1980, idleSM: 345, step: 15, memClock: 3201,
		fbTotal: 143771, fbReserved: 565, nvlink: 900e9 / (1 << 20), pcie: 50e9 / 1024,
		rth: 0.061, slowdown: 89, hbm: 5, trainFB: 121000},
}

// drivers are data-centre driver branches of 2024–2026.
var drivers = []string{"535.183.06", "550.90.07", "550.127.08", "560.35.03", "570.124.06", "570.133.20"}

// dgxBusIDs are the PCI bus IDs of the eight GPUs of an HGX board.
var dgxBusIDs = []string{"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
	"00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"}
