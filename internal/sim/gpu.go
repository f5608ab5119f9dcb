package sim

import (
	"fmt"
	"slices"
	"strings"
)

// GPUSpec is what the simulator needs to know of one GPU product: its
// identity as dcgm-exporter reports it and the envelope of its readings.
type GPUSpec struct {
	// Model is the short name a Config uses: A100, H100 or H200.
	Model string
	// Name is the product name (dcgm-exporter's modelName label).
	Name string
	// TDP is the default power limit in watts.
	TDP float64
	// IdlePower is the draw of an idle GPU in watts.
	IdlePower float64
	// MaxSMClock and IdleSMClock are the SM clocks in MHz when busy and idle.
	MaxSMClock, IdleSMClock float64
	// MemClock is the memory clock in MHz.
	MemClock float64
	// FBTotal is the framebuffer size in MiB as DCGM reports it.
	FBTotal float64
	// FBReserved is the framebuffer the driver reserves, in MiB.
	FBReserved float64
	// NVLinkTrain is the NVLink bandwidth in MiB/s (DCGM field 449) a GPU
	// of a healthy data-parallel training job averages.
	NVLinkTrain float64
	// SlowdownTemp is the GPU temperature (°C) at which clocks slow down.
	SlowdownTemp float64
	// PCIeGen and PCIeWidth are the host link's generation and lane count.
	PCIeGen, PCIeWidth float64
	// Driver is the driver version label.
	Driver string
}

// gpuSpecs are the products the simulator knows. Values are the vendors'
// data-sheet figures (TDP, clocks, memory) and typical readings of busy
// training clusters (NVLink bandwidth, temperatures).
func gpuSpecs() []GPUSpec {
	return []GPUSpec{
		{Model: "A100", Name: "NVIDIA A100-SXM4-80GB", TDP: 400, IdlePower: 55, MaxSMClock: 1410, IdleSMClock: 210,
			MemClock: 1593, FBTotal: 81920, FBReserved: 649, NVLinkTrain: 95_000, SlowdownTemp: 88, PCIeGen: 4, PCIeWidth: 16,
			Driver: "550.90.07"},
		{Model: "H100", Name: "NVIDIA H100 80GB HBM3", TDP: 700, IdlePower: 72, MaxSMClock: 1980, IdleSMClock: 345,
			MemClock: 2619, FBTotal: 81559, FBReserved: 530, NVLinkTrain: 145_000, SlowdownTemp: 87, PCIeGen: 5, PCIeWidth: 16,
			Driver: "560.35.03"},
		{Model: "H200", Name: "NVIDIA H200", TDP: 700, IdlePower: 78, MaxSMClock: 1980, IdleSMClock: 345,
			MemClock: 3201, FBTotal: 143771, FBReserved: 560, NVLinkTrain: 150_000, SlowdownTemp: 87, PCIeGen: 5, PCIeWidth: 16,
			Driver: "560.35.03"},
	}
}

// GPUModels returns the short names a Config accepts, sorted.
func GPUModels() []string {
	var out []string
	for _, s := range gpuSpecs() {
		out = append(out, s.Model)
	}
	slices.Sort(out)
	return out
}

// LookupGPU returns the spec of a short model name (case-insensitive).
func LookupGPU(model string) (GPUSpec, error) {
	for _, s := range gpuSpecs() {
		if strings.EqualFold(s.Model, model) {
			return s, nil
		}
	}
	return GPUSpec{}, fmt.Errorf("unknown GPU model %q (known: %s)", model, strings.Join(GPUModels(), ", "))
}
