package catalog

import (
	"sort"

	"github.com/vigil-obs/vigil/internal/kinds"
)

// Action is a resolution bucket of NVIDIA's XID catalog.
type Action string

// The immediate actions Vigil recommends; each XID maps to one.
const (
	RestartApp     Action = "RESTART_APP"
	ResetGPU       Action = "RESET_GPU"
	RestartBM      Action = "RESTART_BM"
	ContactSupport Action = "CONTACT_SUPPORT"
	Ignore         Action = "IGNORE"
)

// Severity ranks an XID for diagnosis.
type Severity string

// The severities.
const (
	// SeverityInfo is benign: an event, not a fault (XID 63, 92, 45 alone).
	SeverityInfo Severity = "info"
	// SeverityApp is an application fault; the GPU stays healthy.
	SeverityApp Severity = "app"
	// SeverityCritical needs the GPU or node reset, or a replacement.
	SeverityCritical Severity = "critical"
)

// XID is one row of NVIDIA's XID catalog
// (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html).
type XID struct {
	Code int
	// Mnemonic is NVIDIA's name, e.g. ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS.
	Mnemonic string
	// Meaning is the catalog's description, with what it tells an operator.
	Meaning string
	// Bucket is the catalog's immediate resolution bucket as written there
	// (it may be a workflow such as WORKFLOW_XID_48).
	Bucket string
	// Action is the immediate action, one of the five Action values; a
	// workflow bucket is resolved to its first step.
	Action Action
	// Severity ranks it.
	Severity Severity
	// Cause is the DESIGN.md cause kind the XID evidences.
	Cause string
}

// Cause kinds an XID evidences (DESIGN.md).
const (
	CauseXID       = kinds.GPUXIDError
	CauseGPULost   = kinds.GPULost
	CauseNVLink    = kinds.NVLinkDegraded
	CauseMemory    = kinds.GPUMemoryErrors
	CausePCIe      = kinds.PCIeDegraded
	CausePowerTemp = kinds.GPUPowerThrottle
)

// XID returns the catalog row of an XID code.
func (c *Catalog) XID(code int) (XID, bool) {
	x, ok := c.xids[code]
	return x, ok
}

// XIDs returns every known XID, by code.
func (c *Catalog) XIDs() []XID {
	out := make([]XID, 0, len(c.xids))
	for _, x := range c.xids {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// xidTable is NVIDIA's catalog for Ampere and newer (A100, H100, B100,
// GB200), the codes those GPUs log; codes marked unused there are left out
// except 61, which older GPUs still log.
func xidTable() []XID {
	const (
		app  = SeverityApp
		crit = SeverityCritical
		info = SeverityInfo
	)
	return []XID{
		{8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing.", "RESTART_APP", RestartApp, app, CauseXID},
		{11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream.", "RESTART_APP", RestartApp, app, CauseXID},
		{13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics engine exception: usually an application fault (out-of-bounds access, illegal instruction); rarely hardware.", "RESTART_APP", RestartApp, app, CauseXID},
		{25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream.", "RESTART_APP", RestartApp, app, CauseXID},
		{31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault: an illegal address access, usually an application bug, sometimes a driver or hardware fault.", "RESTART_APP", RestartApp, app, CauseXID},
		{32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream reported by the DMA controller: mostly PCIe quality problems, not the application.", "RESTART_APP", RestartApp, app, CausePCIe},
		{37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error.", "IGNORE", Ignore, info, CauseXID},
		{38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error.", "IGNORE", Ignore, info, CauseXID},
		{39, "ROBUST_CHANNEL_CE0_ERROR", "Copy engine exception.", "RESTART_APP", RestartApp, app, CauseXID},
		{40, "ROBUST_CHANNEL_CE1_ERROR", "Copy engine exception.", "RESTART_APP", RestartApp, app, CauseXID},
		{41, "ROBUST_CHANNEL_CE2_ERROR", "Copy engine exception.", "RESTART_APP", RestartApp, app, CauseXID},
		{43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing: an application hit a software-induced fault and had to terminate; the GPU remains healthy.", "IGNORE", Ignore, info, CauseXID},
		{44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics engine fault during a context switch.", "IGNORE", Ignore, info, CauseXID},
		{45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup after an application was aborted (Ctrl-C, kill, GPU reset) or after another error; alone it is no fault, with another XID follow that one.", "WORKFLOW_XID_45", Ignore, info, CauseXID},
		{46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing.", "RESET_GPU", ResetGPU, crit, CauseXID},
		{48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double-bit (uncorrectable) ECC error; a GPU reset or node reboot clears it. For SRAM errors check the SRAM DBE threshold and RMA if exceeded.", "WORKFLOW_XID_48", ResetGPU, crit, CauseMemory},
		{54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board.", "CHECK_MECHANICALS", ContactSupport, crit, CausePowerTemp},
		{60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception.", "RESTART_APP", RestartApp, app, CauseXID},
		{61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint or warning; unused on Ampere and newer, logged by older GPUs.", "CONTACT_SUPPORT", ContactSupport, crit, CauseXID},
		{62, "PMU_HALT_ERROR", "Internal micro-controller halt.", "RESET_GPU", ResetGPU, crit, CauseXID},
		{63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory row remapping (or, before Ampere, page retirement) event: the GPU handled an ECC error as designed. Benign; the remap takes effect at the next GPU reset.", "IGNORE", Ignore, info, CauseMemory},
		{64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory row remapping (or page retirement) failed: the memory can no longer protect itself.", "RESET_GPU", ResetGPU, crit, CauseMemory},
		{66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by the driver.", "IGNORE", Ignore, info, CauseXID},
		{67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by the driver.", "IGNORE", Ignore, info, CauseXID},
		{68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 exception.", "RESTART_APP", RestartApp, app, CauseXID},
		{69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics engine class error.", "RESTART_APP", RestartApp, app, CauseXID},
		{74, "NVLINK_ERROR", "NVLink error on a link to another GPU or NVSwitch; a GPU reset or node reboot clears it. The fault may be at the remote end: a failed GPU makes its peers log XID 74 too.", "WORKFLOW_NVLINK_ERR", ResetGPU, crit, CauseNVLink},
		{78, "VGPU_START_ERROR", "vGPU start error.", "UPDATE_SWFW", ContactSupport, app, CauseXID},
		{79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus: the driver cannot reach it over PCIe (link failure or failing GPU).", "RESTART_BM", RestartBM, crit, CauseGPULost},
		{80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to the GPU.", "RESTART_APP", RestartApp, app, CausePCIe},
		{92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit (corrected) ECC error rate.", "IGNORE", Ignore, info, CauseMemory},
		{93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of the provisioned InfoROM wear limit.", "IGNORE", Ignore, info, CauseXID},
		{94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory (ECC) error: only the application that hit it must restart; reset the GPU when convenient.", "RESTART_APP", RestartApp, app, CauseMemory},
		{95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory (ECC) error: affects every application on the GPU, which must be reset before they restart.", "RESET_GPU", ResetGPU, crit, CauseMemory},
		{109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context switch timeout.", "RESET_GPU", ResetGPU, crit, CauseXID},
		{110, "SEC_FAULT_ERROR", "Security fault; uncommon without a hardware failure: cold-reset the system.", "RESET_GPU", ResetGPU, crit, CauseXID},
		{119, "GSP_RPC_TIMEOUT", "Timeout waiting for the GPU System Processor (GSP) to answer an RPC; reset the GPU or power-cycle the node if it persists.", "RESET_GPU", ResetGPU, crit, CauseXID},
		{120, "GSP_ERROR", "Error in code running on the GPU System Processor (GSP).", "RESET_GPU", ResetGPU, crit, CauseXID},
		{121, "C2C_ERROR", "Corrected errors on the C2C NVLink to a Grace CPU; no operational impact.", "IGNORE", Ignore, info, CauseNVLink},
		{136, "ALI_TRAINING_FAIL", "NVLink link training failed.", "RESET_GPU", ResetGPU, crit, CauseNVLink},
		{137, "NVLINK_PRIV_ERR", "NVLink privilege error: an illegal peer-to-peer access reported by the remote MMU, usually an application bug; presents as NVLink but is not a link fault.", "IGNORE", Ignore, app, CauseXID},
		{140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "Uncorrectable memory errors the driver could not mark for row remapping.", "RESET_GPU", ResetGPU, crit, CauseMemory},
		{143, "GPU_INIT_ERROR", "GPU initialization error.", "RESET_GPU", ResetGPU, crit, CauseXID},
		{144, "NVLINK_SAW_ERROR", "NVLink 5 SAW error (Blackwell).", "WORKFLOW_NVLINK5_ERR", ResetGPU, crit, CauseNVLink},
		{145, "NVLINK_RLW_ERROR", "NVLink 5 RLW error (Blackwell).", "WORKFLOW_NVLINK5_ERR", ResetGPU, crit, CauseNVLink},
		{146, "NVLINK_TLW_ERROR", "NVLink 5 TLW error (Blackwell).", "WORKFLOW_NVLINK5_ERR", ResetGPU, crit, CauseNVLink},
		{147, "NVLINK_TREX_ERROR", "NVLink 5 TREX error (Blackwell).", "WORKFLOW_NVLINK5_ERR", ResetGPU, crit, CauseNVLink},
		{148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink 5 NVLPW_CTRL error (Blackwell).", "WORKFLOW_NVLINK5_ERR", ResetGPU, crit, CauseNVLink},
		{149, "NVLINK_NETIR_ERROR", "NVLink 5 NETIR error (Blackwell).", "WORKFLOW_NVLINK5_ERR", ResetGPU, crit, CauseNVLink},
		{150, "NVLINK_MSE_ERROR", "NVLink 5 MSE error (Blackwell).", "WORKFLOW_NVLINK5_ERR", ResetGPU, crit, CauseNVLink},
		{151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation error (confidential computing).", "RESTART_VM", RestartBM, crit, CauseXID},
		{154, "GPU_RECOVERY_ACTION_CHANGED", "Informational: summarizes the recovery action another XID requires (None, Drain P2P, Drain and Reset, GPU Reset Required, Node Reboot Required).", "XID_154", Ignore, info, CauseXID},
		{155, "NVLINK_SW_DEFINED_ERROR", "NVLink link down flagged as intentional (including sleep transitions).", "RESET_GPU", ResetGPU, crit, CauseNVLink},
		{156, "RESOURCE_RETIREMENT_EVENT", "Resource retirement event.", "RESET_GPU", ResetGPU, crit, CauseMemory},
		{157, "RESOURCE_RETIREMENT_FAILURE", "Resource retirement failure: no repair possible for lack of resources; workloads may run but may hit the same XID again.", "IGNORE", Ignore, app, CauseMemory},
		{158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout.", "RESET_GPU", ResetGPU, crit, CauseXID},
		{159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI non-data error on a C2C-connected GPU.", "CHECK_UVM", ContactSupport, crit, CauseXID},
	}
}
