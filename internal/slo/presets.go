package slo

import (
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// Names of the preset SLOs and composite.
const (
	PresetInterTokenLatency   = "llm-inter-token-latency"
	PresetTTFT                = "llm-time-to-first-token"
	PresetQueueDepth          = "inference-queue-depth"
	PresetRequestLatency      = "model-server-request-latency"
	PresetTritonLatency       = "triton-request-latency"
	PresetModelAccuracy       = "model-accuracy"
	PresetFeatureDrift        = "feature-drift"
	PresetGPUSMUtilisation    = "gpu-sm-utilisation"
	PresetTrainingJobSuccess  = "training-job-success"
	PresetNVLinkBandwidth     = "nvlink-bandwidth"
	PresetInferenceQueueGrows = "inference-queue-growing"
)

// QueueDepthRecord is the recording rule of the inference queue depth by
// namespace and model, for an autoscaler (KEDA's prometheus scaler, an HPA
// through prometheus-adapter) to consume.
const QueueDepthRecord = "vigil:inference_queue_depth:sum"

func ptr[T any](v T) *T { return &v }

// Presets returns the built-in AI SLOs, read from whichever vocabulary a
// cluster exports (the signal catalog's sources, their labels renamed to
// the canonical namespace, model, node and gpu):
//
//   - llm-inter-token-latency: 95% of output tokens within 100 ms (vLLM's
//     inter_token_latency_seconds, time_per_output_token_seconds before
//     0.11, NIM, SGLang, OpenTelemetry GenAI, TGI);
//   - llm-time-to-first-token: 95% of requests get their first token within
//     1 s;
//   - model-server-request-latency: 95% of requests within 100 ms on classic
//     model servers with request histograms (KServe, Ray Serve);
//   - triton-request-latency: Triton's mean request latency under 100 ms
//     (Triton has cumulative durations, no request-latency histogram);
//   - inference-queue-depth: the queue under 20 requests, recorded as
//     vigil:inference_queue_depth:sum for autoscalers;
//   - inference-queue-growing: queue depth and inference latency (or TTFT)
//     increasing together, a page;
//   - model-accuracy: model_accuracy at or above 0.95;
//   - feature-drift: PSI of each feature at most 0.25, weekly scores;
//   - gpu-sm-utilisation: DCGM_FI_PROF_SM_ACTIVE (GR_ENGINE_ACTIVE where
//     SM_ACTIVE is missing) between 70% and 85% per namespace over an hour,
//     a ticket, never a page;
//   - training-job-success: 99% of Kubernetes Jobs that finish succeed;
//   - nvlink-bandwidth: each GPU's NVLink bandwidth within 10% of the
//     median of its namespace's GPUs at the same moment, while that median
//     is at least 100 MiB/s (not idle, not checkpointing).
func Presets() *Spec {
	c := catalog.Default()
	byModel := []string{catalog.KeyNamespace, catalog.KeyModel}
	s := &Spec{SLOs: []SLO{
		{Name: PresetInterTokenLatency, Objective: ptr(95.0), By: byModel,
			Description: "LLM decode speed: 95% of output tokens arrive within 100 ms of the previous one",
			SLI:         SLI{Latency: &LatencySLI{Threshold: 0.1, Sources: histogramSources(c, "infer.itl", byModel)}}},
		{Name: PresetTTFT, Objective: ptr(95.0), By: byModel,
			Description: "LLM responsiveness: 95% of requests get their first token within 1 s",
			SLI:         SLI{Latency: &LatencySLI{Threshold: 1, Sources: histogramSources(c, "infer.ttft", byModel)}}},
		{Name: PresetRequestLatency, Objective: ptr(95.0), By: byModel,
			Description: "Classic model servers: 95% of requests served within 100 ms",
			SLI: SLI{Latency: &LatencySLI{Threshold: 0.1, Sources: append(histogramSources(c, "infer.kserve_predict_time", byModel),
				rayLatency(c, byModel)...)}}},
		tritonLatency(),
		{Name: PresetQueueDepth, By: byModel, Severity: SeverityTicket, Symptom: "queue_growing", For: minutes(15),
			Description: "Requests waiting for an LLM or model server stay under 20",
			SLI: SLI{Gauge: &GaugeSLI{Sources: catalogSources(c, "infer.queue_depth", byModel, nil), Aggregate: "sum",
				Below: ptr(20.0), Record: QueueDepthRecord}}},
		{Name: PresetModelAccuracy, By: byModel, For: minutes(30),
			Description: "Model quality: the online evaluator's accuracy stays at or above 95%",
			SLI:         SLI{Gauge: &GaugeSLI{Metric: "model_accuracy", Aggregate: "min", Above: ptr(0.95)}}},
		{Name: PresetFeatureDrift, By: []string{catalog.KeyModel, "feature"}, Severity: SeverityTicket, For: minutes(15),
			Description: "Input drift: each feature's weekly PSI against its baseline stays at most 0.25",
			SLI: SLI{Gauge: &GaugeSLI{Sources: []Source{{Metric: "vigil_feature_drift", Matchers: `method="psi"`}},
				Function: "last", Over: model7d(), Below: ptr(0.25)}}},
		smUtilisation(c),
		trainingJobs(),
		nvlink(c),
	}}
	s.Composites = []Composite{{
		Name: PresetInferenceQueueGrows, Symptom: "queue_growing",
		Description: "User impact: requests queue up while latency rises",
		When: []Condition{
			{Increasing: []string{PresetQueueDepth}},
			{Increasing: []string{PresetInterTokenLatency, PresetTTFT, PresetRequestLatency}},
		},
	}}
	return s
}

func minutes(n int) model.Duration { return model.Duration(time.Duration(n) * time.Minute) }

func model7d() model.Duration { return 7 * day }

// catalogSources returns a source for each of a signal's metrics that keep
// accepts (nil: all), its labels renamed to the canonical keys.
func catalogSources(c *catalog.Catalog, signal string, keys []string, keep func(*catalog.Signal, catalog.Source) bool) []Source {
	// A signal the catalog lacks gives no sources, which Validate reports.
	sig, ok := c.Signal(signal)
	if !ok {
		return nil
	}
	var out []Source
	for _, cs := range sig.Sources {
		if keep != nil && !keep(sig, cs) {
			continue
		}
		src := Source{Metric: cs.Metric, Scale: cs.Scale}
		for _, k := range keys {
			ls := c.GroupLabels(cs.Vocabulary, k)
			if len(ls) == 0 || slices.Equal(ls, []string{k}) {
				continue
			}
			if src.Rename == nil {
				src.Rename = map[string][]string{}
			}
			src.Rename[k] = ls
		}
		out = append(out, src)
	}
	return out
}

// histogramSources are a signal's sources that are histograms.
func histogramSources(c *catalog.Catalog, signal string, keys []string) []Source {
	return catalogSources(c, signal, keys, func(sig *catalog.Signal, s catalog.Source) bool {
		return s.TrueType(*sig) == catalog.Histogram
	})
}

// rayLatency is Ray Serve's HTTP request latency (milliseconds).
func rayLatency(c *catalog.Catalog, keys []string) []Source {
	return catalogSources(c, "infer.e2e_latency", keys, func(_ *catalog.Signal, s catalog.Source) bool {
		return s.Vocabulary == catalog.RayServe
	})
}

func tritonLatency() SLO {
	return SLO{Name: PresetTritonLatency, By: []string{catalog.KeyNamespace, catalog.KeyModel},
		Symptom:     "inference_latency_high",
		Description: "Triton's mean request latency stays under 100 ms (Triton has no request-latency histogram)",
		SLI: SLI{Gauge: &GaugeSLI{Below: ptr(0.1), Expr: `sum by (namespace, model) (rate(nv_inference_request_duration_us[5m]))
/
sum by (namespace, model) (rate(nv_inference_request_success[5m]))
/ 1e6`}}}
}

func smUtilisation(c *catalog.Catalog) SLO {
	by := []string{catalog.KeyNamespace}
	srcs := append(catalogSources(c, "gpu.sm_active", by, nil), catalogSources(c, "gpu.gr_engine_active", by, nil)...)
	return SLO{Name: PresetGPUSMUtilisation, By: by, Severity: SeverityTicket, For: minutes(60),
		Description: "GPU efficiency: the SMs of a namespace's GPUs are busy 70-85% of cycles over an hour (DCGM_FI_PROF_SM_ACTIVE, not DCGM_FI_DEV_GPU_UTIL's kernel-active time)",
		SLI: SLI{Gauge: &GaugeSLI{Sources: srcs, Aggregate: "avg", Function: "avg", Over: minutes(60),
			Above: ptr(0.70), Below: ptr(0.85), Filter: `namespace!=""`}}}
}

// trainingJobs counts Kubernetes Jobs that finished in the window: failed
// when their Failed condition turned true (kube_job_failed), succeeded
// when they first had a succeeded pod (kube_job_status_succeeded), a job
// that did both counting as failed.
func trainingJobs() SLO {
	// kube-state-metrics scraped without honor_labels: its namespace label
	// is exported_namespace.
	ns := `"namespace", "$1", "exported_namespace", "(.+)"`
	finished := `max by (namespace, job_name) (
  label_replace(
    (
      max_over_time(kube_job_failed{condition="true"}[{{.window}}]) == 1
      unless kube_job_failed{condition="true"} offset {{.window}} == 1
    ) * 0 + 1
    or
    (
      max_over_time(kube_job_status_succeeded[{{.window}}]) > 0
      unless kube_job_status_succeeded offset {{.window}} > 0
    ) * 0,
    ` + ns + `
  )
)`
	return SLO{Name: PresetTrainingJobSuccess, Objective: ptr(99.0), By: []string{catalog.KeyNamespace}, Symptom: "job_failed",
		Description: "Training jobs: 99% of the Kubernetes Jobs that finish succeed",
		SLI: SLI{Ratio: &RatioSLI{
			Errors: "sum by (namespace) (\n  " + indent(finished) + "\n)",
			Total:  "count by (namespace) (\n  " + indent(finished) + "\n)",
		}}}
}

func nvlink(c *catalog.Catalog) SLO {
	by := []string{catalog.KeyNamespace, catalog.KeyNode, catalog.KeyGPU}
	return SLO{Name: PresetNVLinkBandwidth, By: by, Symptom: "training_slowdown", For: minutes(5),
		Description: "NVLink: each GPU of a job moves within 10% of its peers' median bandwidth at the same moment (a checkpoint drops them all together: no alert)",
		SLI: SLI{Peer: &PeerSLI{Sources: catalogSources(c, "gpu.nvlink_bandwidth", by, nil),
			Peers: []string{catalog.KeyNamespace}, Tolerance: 0.1, Min: 100}}}
}
