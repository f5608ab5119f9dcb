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

// vllmIgnored are vLLM metrics outside PrometheusStatLogger's list, or of
// the v0 engine, that diagnosis does not use.
func vllmIgnored() []Ignored {
	ig := func(metric, reason string) Ignored {
		return Ignored{Vocabulary: VLLM, Metric: "vllm:" + metric, Reason: reason}
	}
	return []Ignored{
		ig("spec_decode_num_drafts_total", "speculative-decoding bookkeeping; acceptance is read from draft and accepted tokens"),
		ig("spec_decode_num_accepted_tokens_per_pos_total", "per-position acceptance detail; the total acceptance suffices for diagnosis"),
		ig("spec_decode_draft_acceptance_rate", "vLLM v0 speculative-decoding gauge, removed in v1"),
		ig("spec_decode_efficiency", "vLLM v0 speculative-decoding gauge, removed in v1"),
		ig("spec_decode_num_emitted_tokens_total", "vLLM v0 speculative-decoding counter, removed in v1"),
		ig("model_forward_time_milliseconds", "vLLM v0 only with collect_detailed_traces; request latencies cover it"),
		ig("model_execute_time_milliseconds", "vLLM v0 only with collect_detailed_traces; request latencies cover it"),
		ig("tokens_total", "vLLM v0 sum of prompt and generation tokens; both are signals of their own"),
	}
}

// otherIgnored are metrics of other vocabularies that duplicate a better
// source.
func otherIgnored() []Ignored {
	dup := "host CPU and memory seen by Triton duplicate node-exporter; read node.* signals"
	return []Ignored{
		{Vocabulary: Triton, Metric: "nv_cpu_utilization", Reason: dup},
		{Vocabulary: Triton, Metric: "nv_cpu_memory_total_bytes", Reason: dup},
		{Vocabulary: Triton, Metric: "nv_cpu_memory_used_bytes", Reason: dup},
	}
}
