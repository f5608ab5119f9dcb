package slo

import (
	"fmt"
	"slices"
	"strings"
)

// vLLM's histogram buckets (vllm/v1/metrics/loggers.py, PrometheusStatLogger;
// the same from 0.10 to 0.12, supersets of older versions').
var (
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	vllmITLBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80}
	vllmRequestBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30,
		40, 50, 60, 120, 240, 480, 960, 1920, 7680}
)

// KnownBuckets returns the le bounds (+Inf left out) of well-known latency
// histograms, by histogram name: vLLM's time to first token, inter-token
// latency (and its old name time_per_output_token_seconds), and request
// latencies (end-to-end, queue, inference, prefill, decode). With them a
// threshold that is no bucket boundary is caught offline; ValidateBuckets
// with the bounds a store holds catches the rest.
func KnownBuckets() map[string][]float64 {
	return map[string][]float64{
		"vllm:time_to_first_token_seconds":    slices.Clone(vllmTTFTBuckets),
		"vllm:inter_token_latency_seconds":    slices.Clone(vllmITLBuckets),
		"vllm:time_per_output_token_seconds":  slices.Clone(vllmITLBuckets),
		"vllm:e2e_request_latency_seconds":    slices.Clone(vllmRequestBuckets),
		"vllm:request_queue_time_seconds":     slices.Clone(vllmRequestBuckets),
		"vllm:request_inference_time_seconds": slices.Clone(vllmRequestBuckets),
		"vllm:request_prefill_time_seconds":   slices.Clone(vllmRequestBuckets),
		"vllm:request_decode_time_seconds":    slices.Clone(vllmRequestBuckets),
	}
}

// ValidateBuckets checks that the threshold of every latency SLO is an le
// bound of each of its histograms that les knows (by histogram name,
// without _bucket; +Inf and unknown histograms are ignored): a latency SLI
// counts the events in the bucket at the threshold, and a threshold between
// two bounds has no bucket. Each error is a *FieldError on the threshold
// naming the nearest bounds, located in the spec's YAML when it has one.
func ValidateBuckets(spec *Spec, les map[string][]float64) []error {
	var errs []error
	for i := range spec.SLOs {
		s := &spec.SLOs[i]
		if s.SLI.Latency == nil {
			continue
		}
		for _, src := range s.sources() {
			bounds, ok := les[src.Metric]
			if !ok || len(bounds) == 0 {
				continue
			}
			if msg := offBucket(s.SLI.Latency.Threshold, src, bounds); msg != "" {
				errs = append(errs, &FieldError{Field: fmt.Sprintf("slos[%d].sli.latency.threshold", i), Msg: msg})
			}
		}
	}
	if len(errs) > 0 && spec.lines != nil {
		_ = spec.locate(errs)
	}
	return errs
}

// offBucket says why a threshold (seconds) is not a bound of a source's
// histogram, or "" when it is.
func offBucket(threshold float64, src Source, bounds []float64) string {
	want := round(threshold / src.scale())
	sorted := slices.Clone(bounds)
	slices.Sort(sorted)
	var below, above []string
	for _, b := range sorted {
		switch rb := round(b); {
		case rb == want:
			return ""
		case rb < want:
			below = []string{num(b)}
		case len(above) == 0:
			above = []string{num(b)}
		}
	}
	unit := ""
	if src.scale() != 1 {
		unit = fmt.Sprintf(" (%s in the histogram's unit)", num(want))
	}
	near := strings.Join(append(below, above...), " and ")
	return fmt.Sprintf("%s s%s is not a bucket boundary of %s: its nearest le bounds are %s",
		num(threshold), unit, src.Metric, near)
}
