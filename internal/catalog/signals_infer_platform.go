package catalog

// inferPlatformSignals are the serving platforms' own metrics: Triton's
// cumulative durations, TensorRT-LLM's labelled gauges, KServe's model
// server histograms and Ray Serve's request metrics.
func inferPlatformSignals() []Signal {
	us := func(name, metric, meaning string) Signal {
		return Signal{Name: name, Level: LevelModel, Type: Counter, Unit: UnitSeconds, Agg: Sum, Meaning: meaning,
			Sources: []Source{triton(metric).scaled(1e-6).with("cumulative microseconds per model and version")}}
	}
	trt := func(name, metric, label, meaning string) Signal {
		return Signal{Name: name, Level: LevelModel, Type: Gauge, Unit: UnitCount, Agg: Sum, Meaning: meaning,
			Sources: []Source{trtllm(metric).labelled(label)}}
	}
	kserveHist := func(name, metric, meaning string) Signal {
		return Signal{Name: name, Level: LevelModel, Type: Histogram, Unit: UnitSeconds, Agg: Sum, Meaning: meaning,
			Sources: []Source{kserve(metric).with("KServe Python model server, per model_name")}}
	}
	return []Signal{
		us("infer.request_duration_total", "inference_request_duration_us",
			"Cumulative request time (Triton, cached requests included); rate(duration)/rate(infer.request_success) is the mean latency."),
		us("infer.queue_duration_total", "inference_queue_duration_us",
			"Cumulative time requests waited in the scheduler queue (Triton); its share of request time growing is saturation."),
		us("infer.compute_input_duration_total", "inference_compute_input_duration_us",
			"Cumulative time preparing inputs (Triton)."),
		us("infer.compute_infer_duration_total", "inference_compute_infer_duration_us",
			"Cumulative time executing the model (Triton)."),
		us("infer.compute_output_duration_total", "inference_compute_output_duration_us",
			"Cumulative time processing outputs (Triton)."),
		{Name: "infer.executions", Level: LevelModel, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "Model executions (Triton); inferences/executions is the mean batch size.",
			Sources: []Source{triton("inference_exec_count")}},
		trt("infer.trtllm_requests", "request_metrics", "request_type",
			"TensorRT-LLM request counts by request_type (active, max, scheduled, context, waiting)."),
		trt("infer.trtllm_kv_cache_blocks", "kv_cache_block_metrics", "kv_cache_block_type",
			"TensorRT-LLM KV-cache blocks by kv_cache_block_type (max, free, used, tokens_per, fraction)."),
		trt("infer.trtllm_runtime_memory", "runtime_memory_metrics", "memory_type",
			"TensorRT-LLM runtime memory in bytes by memory_type (pinned, gpu, cpu)."),
		trt("infer.trtllm_inflight_batcher", "inflight_batcher_metrics", "inflight_batcher_specific_metric",
			"TensorRT-LLM in-flight batcher state (context tokens, generation requests, paused requests, ...)."),
		trt("infer.trtllm_general", "general_metrics", "general_type",
			"TensorRT-LLM iteration counter and timestamp: a flat iteration counter is a stuck engine."),
		kserveHist("infer.kserve_preprocess_time", "request_preprocess_seconds", "Time in the model's preprocess step (KServe)."),
		kserveHist("infer.kserve_predict_time", "request_predict_seconds", "Time in the model's predict step (KServe): the inference itself."),
		kserveHist("infer.kserve_postprocess_time", "request_postprocess_seconds", "Time in the model's postprocess step (KServe)."),
		kserveHist("infer.kserve_explain_time", "request_explain_seconds", "Time in the model's explain step (KServe)."),
		{Name: "infer.http_requests", Level: LevelService, Type: Counter, Unit: UnitRequests, Agg: Sum,
			Meaning: "HTTP requests to the serving proxy, per route and status code (Ray Serve).",
			Sources: []Source{rayServe("num_http_requests_total").labelled("route", "status_code", "method")}},
		{Name: "infer.http_errors", Level: LevelService, Type: Counter, Unit: UnitRequests, Agg: Sum,
			Meaning: "HTTP requests answered with an error (Ray Serve).",
			Sources: []Source{rayServe("num_http_error_requests_total").labelled("route", "error_code")}},
		{Name: "infer.http_ongoing", Level: LevelService, Type: Gauge, Unit: UnitRequests, Agg: Sum,
			Meaning: "HTTP requests in progress at the proxy (Ray Serve).",
			Sources: []Source{rayServe("num_ongoing_http_requests")}},
		{Name: "infer.deployment_requests", Level: LevelService, Type: Counter, Unit: UnitRequests, Agg: Sum,
			Meaning: "Requests processed by a Serve deployment's replicas.",
			Sources: []Source{rayServe("deployment_request_counter_total")}},
		{Name: "infer.deployment_errors", Level: LevelService, Type: Counter, Unit: UnitRequests, Agg: Sum,
			Meaning: "Exceptions raised by a Serve deployment's replicas.",
			Sources: []Source{rayServe("deployment_error_counter_total")}},
		{Name: "infer.deployment_latency", Level: LevelService, Type: Histogram, Unit: UnitSeconds, Agg: Sum,
			Meaning: "Time a Serve replica spent processing a request.",
			Sources: []Source{rayServe("deployment_processing_latency_ms").scaled(1e-3).with("milliseconds")}},
		{Name: "infer.replica_healthy", Level: LevelService, Type: Gauge, Unit: UnitCode, Agg: Min,
			Meaning: "1 while a Serve replica passes its health check.",
			Healthy: &Range{Min: 1, Max: 1, Note: "0 is an unhealthy replica"},
			Sources: []Source{rayServe("deployment_replica_healthy")}},
	}
}
