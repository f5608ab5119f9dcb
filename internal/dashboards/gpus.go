//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// perGPU writes the value of a dcgm-exporter metric per GPU, through f
// (identity when nil), by node label and GPU index.
func perGPU(metric string, f func(string) string, more ...string) string {
	return gpuExpr(func(m []string, node string) string {
		s := gsel(metric, m, more...)
		if f != nil {
			s = f(s)
		}
		return fmt.Sprintf("max by (%s, gpu) (%s)", node, s)
	})
}

// perGPURate is perGPU of a counter's rate.
func perGPURate(metric string) string { return perGPU(metric, rate) }

// clockReasons are the clock-event reason bits that slow work down (the
// catalog's non-benign ones), whose GPUs the GPU dashboard counts.
func clockReasons() []target {
	var out []target
	for _, r := range catalog.ClockReasons() {
		if r.Benign {
			continue
		}
		bit := num(float64(r.Bit))
		// Either name of the field (DCGM 3.3 renamed it), the bit tested
		// with arithmetic: one series per reason, 0 when no GPU has it.
		expr := gpuExpr(func(m []string, _ string) string {
			v := "(" + gsel("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", m) + " or " + gsel("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", m) + ")"
			return "sum(floor(" + v + " / " + bit + ") % 2)"
		})
		out = append(out, q(expr, r.Name))
	}
	return out
}

// gpus answers "are the GPUs healthy, and who uses them?": utilisation,
// temperature, power, clocks, memory, the hardware errors Vigil ranks as
// causes (XID, NVLink, ECC and row remapping, PCIe), the reasons clocks
// are held down, and each GPU's pod — which NVIDIA's dashboard 12239
// does not show.
func gpus() *dashboard.DashboardBuilder {
	return newDashboard("vigil-gpus", "Vigil / GPUs",
		"Are the GPUs healthy, and who uses them? dcgm-exporter's fields, with each GPU's pod, namespace and container (dcgm-exporter's pod attribution).").
		WithRow(row("Utilisation")).
		WithPanel(graph("GPU utilisation", "DCGM_FI_DEV_GPU_UTIL per GPU.", "percent",
			q(perGPU("DCGM_FI_DEV_GPU_UTIL", nil), gpuLegend))).
		WithPanel(graph("SM and tensor activity", "Mean ratio of cycles with an SM busy, and with the tensor pipe busy, by node (DCGM profiling fields).", "percentunit",
			q(gpuExpr(func(m []string, node string) string {
				return "avg by (" + node + ") (" + gsel("DCGM_FI_PROF_SM_ACTIVE", m) + ")"
			}), "SM {{Hostname}}{{hostname}}"),
			q(gpuExpr(func(m []string, node string) string {
				return "avg by (" + node + ") (" + gsel("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", m) + ")"
			}), "tensor {{Hostname}}{{hostname}}"))).
		WithPanel(graph("Framebuffer used", "Share of each GPU's framebuffer memory in use: used / (used + free).", "percentunit",
			q(gpuExpr(func(m []string, node string) string {
				used := gsel("DCGM_FI_DEV_FB_USED", m)
				return fmt.Sprintf("max by (%s, gpu) (%s / (%s + %s))", node, used, used, gsel("DCGM_FI_DEV_FB_FREE", m))
			}), gpuLegend))).
		WithPanel(graph("GPU utilisation by pod", "Mean utilisation of each pod's GPUs (dcgm-exporter's pod attribution).", "percent",
			q(gpuExpr(func(m []string, _ string) string {
				return "avg by (namespace, pod) (" + gsel("DCGM_FI_DEV_GPU_UTIL", m, `pod!=""`) + ")"
			}), "{{namespace}}/{{pod}}"))).
		WithPanel(list("GPUs and their pods", "Each GPU, its model and the pod, namespace and container it is attributed to (dcgm-exporter with the kubelet's pod-resources socket).",
			q(gpuExpr(func(m []string, node string) string {
				return "max by (" + node + ", gpu, UUID, modelName, namespace, pod, container) (" + gsel("DCGM_FI_DEV_GPU_UTIL", m, `pod!=""`) + ")"
			}), ""))).
		WithRow(row("Temperature, power and clocks")).
		WithPanel(graph("GPU temperature", "DCGM_FI_DEV_GPU_TEMP per GPU.", "celsius",
			q(perGPU("DCGM_FI_DEV_GPU_TEMP", nil), gpuLegend))).
		WithPanel(graph("Memory temperature", "DCGM_FI_DEV_MEMORY_TEMP per GPU, without DCGM's blank values (a GPU that does not report it).", "celsius",
			q(perGPU("DCGM_FI_DEV_MEMORY_TEMP", func(s string) string { return s + " < " + num(catalog.DCGMFP64Blank) }), gpuLegend))).
		WithPanel(graph("Power", "DCGM_FI_DEV_POWER_USAGE per GPU.", "watt",
			q(perGPU("DCGM_FI_DEV_POWER_USAGE", nil), gpuLegend))).
		WithPanel(graph("SM clock", "DCGM_FI_DEV_SM_CLOCK per GPU; the memory clock beside it.", "rotmhz",
			q(perGPU("DCGM_FI_DEV_SM_CLOCK", nil), "SM "+gpuLegend),
			q(perGPU("DCGM_FI_DEV_MEM_CLOCK", nil), "memory "+gpuLegend))).
		WithPanel(graph("GPUs held down, by clock-event reason", "GPUs whose clock-event reasons (DCGM_FI_DEV_CLOCKS_EVENT_REASONS, formerly CLOCK_THROTTLE_REASONS) have each bit that slows work: power cap, HW slowdown, thermal, power brake.", "none",
			clockReasons()...)).
		WithPanel(graph("Time throttled", "Share of time each GPU was throttled by its power limit or by temperature (violation counters, ns per s).", "percentunit",
			q(perGPU("DCGM_FI_DEV_POWER_VIOLATION", func(s string) string { return rate(s) + " / 1e9" }), "power "+gpuLegend),
			q(perGPU("DCGM_FI_DEV_THERMAL_VIOLATION", func(s string) string { return rate(s) + " / 1e9" }), "thermal "+gpuLegend))).
		WithRow(row("Errors")).
		WithPanel(graph("XID errors", "The last XID each GPU reported (DCGM_FI_DEV_XID_ERRORS is sticky: it keeps the last code), for GPUs that reported one. docs/signals.md lists what each code means.", "none",
			q(perGPU("DCGM_FI_DEV_XID_ERRORS", func(s string) string { return s + " > 0" }), "XID {{value}} "+gpuLegend))).
		WithPanel(list("XIDs in dcgm-exporter's window", "XIDs per GPU and code over dcgm-exporter's --xid-count-window-size (DCGM_EXP_XID_ERRORS_COUNT), where it exports them.",
			q(gpuExpr(func(m []string, node string) string {
				return "max by (" + node + ", gpu, xid, namespace, pod) (" + gsel("DCGM_EXP_XID_ERRORS_COUNT", m) + " > 0)"
			}), ""))).
		WithPanel(graph("ECC errors", "Volatile single-bit (corrected) and double-bit (uncorrectable) ECC errors per second.", "none",
			q(perGPURate("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"), "SBE "+gpuLegend),
			q(perGPURate("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"), "DBE "+gpuLegend))).
		WithPanel(graph("Row remapping", "Rows remapped for correctable and uncorrectable errors (counts since the last reset), and failed remappings.", "none",
			q(perGPU("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", nil), "correctable "+gpuLegend),
			q(perGPU("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", nil), "uncorrectable "+gpuLegend),
			q(perGPU("DCGM_FI_DEV_ROW_REMAP_FAILURE", nil), "failed "+gpuLegend))).
		WithPanel(graph("PCIe replays", "PCIe retries per second (DCGM_FI_DEV_PCIE_REPLAY_COUNTER); the link width beside it.", "none",
			q(perGPURate("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"), "replays "+gpuLegend),
			q(perGPU("DCGM_FI_DEV_PCIE_LINK_WIDTH", nil), "width "+gpuLegend))).
		WithPanel(graph("NVLink errors", "NVLink CRC (flit and data), replay and recovery errors per second, all links of each GPU.", "none",
			nvlinkErrors()...)).
		WithRow(row("NVLink")).
		WithPanel(graph("NVLink bandwidth", "NVLink bandwidth of each GPU, all lanes (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, MiB/s: a gauge, whatever its TYPE line says).", "mbytes",
			q(perGPU("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", nil), gpuLegend))).
		WithPanel(graph("NVLink bandwidth against the job's peers", "Each GPU's NVLink bandwidth over the median of its namespace's GPUs: a GPU far below 1 is the one Vigil's nvlink_degraded cause names.", "percentunit",
			q(gpuExpr(func(m []string, node string) string {
				bw := gsel("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", m, `namespace!=""`)
				return fmt.Sprintf("max by (%s, gpu, namespace) (%s) / on (namespace) group_left quantile by (namespace) (0.5, %s)", node, bw, bw)
			}), gpuLegend)))
}

// nvlinkErrors are the NVLink error counters' targets.
func nvlinkErrors() []target {
	var out []target
	for _, m := range []string{"CRC_FLIT", "CRC_DATA", "REPLAY", "RECOVERY"} {
		name := "DCGM_FI_DEV_NVLINK_" + m + "_ERROR_COUNT_TOTAL"
		out = append(out, q(perGPURate(name), strings.ToLower(strings.ReplaceAll(m, "_", " "))+" "+gpuLegend))
	}
	return out
}
