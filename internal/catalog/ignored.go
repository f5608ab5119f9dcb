package catalog

// dcgmIgnored are fields of dcgm-exporter's CSVs that are no signal.
func dcgmIgnored() []Ignored {
	const label = "a static label (dcp-metrics-included.csv type \"label\"), not a series: dcgm-exporter copies it onto every metric"
	var out []Ignored
	for _, m := range []string{
		"DCGM_FI_DRIVER_VERSION", "DCGM_FI_NVML_VERSION", "DCGM_FI_DEV_BRAND", "DCGM_FI_DEV_SERIAL",
		"DCGM_FI_DEV_OEM_INFOROM_VER", "DCGM_FI_DEV_ECC_INFOROM_VER", "DCGM_FI_DEV_POWER_INFOROM_VER",
		"DCGM_FI_DEV_INFOROM_IMAGE_VER", "DCGM_FI_DEV_VBIOS_VERSION",
	} {
		out = append(out, Ignored{Vocabulary: DCGMExporter, Metric: m, Reason: label})
	}
	return out
}
