package catalog

// Source constructors, one per vocabulary, keep the signal tables short.

func vllm(metric string) Source { return Source{Vocabulary: VLLM, Metric: "vllm:" + metric} }

// nim is NVIDIA NIM for LLMs: vLLM's names without the "vllm:" prefix.
func nim(metric string) Source { return Source{Vocabulary: NIM, Metric: metric} }

func sglang(metric string) Source { return Source{Vocabulary: SGLang, Metric: "sglang:" + metric} }

func tgi(metric string) Source { return Source{Vocabulary: TGI, Metric: "tgi_" + metric} }

func triton(metric string) Source { return Source{Vocabulary: Triton, Metric: "nv_" + metric} }

func trtllm(metric string) Source { return Source{Vocabulary: TRTLLM, Metric: "nv_trt_llm_" + metric} }

func kserve(metric string) Source { return Source{Vocabulary: KServe, Metric: metric} }

func rayServe(metric string) Source {
	return Source{Vocabulary: RayServe, Metric: "ray_serve_" + metric}
}

// otel is an OpenTelemetry GenAI metric under Prometheus name translation:
// dots become underscores, the unit adds a suffix (s → _seconds; {token}
// adds nothing), counters get _total.
func otel(metric string) Source { return Source{Vocabulary: OTelGenAI, Metric: metric} }

func ksm(metric string) Source { return Source{Vocabulary: KubeStateMetrics, Metric: "kube_" + metric} }

func nodeExp(metric string) Source { return Source{Vocabulary: NodeExporter, Metric: "node_" + metric} }

func cadvisor(metric string) Source { return Source{Vocabulary: CAdvisor, Metric: metric} }
