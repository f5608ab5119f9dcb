package robust

import (
	"math"
	"strconv"
)

// vllmFamilies are the vLLM server's families this generator writes.
type vllmFamilies struct {
	running, waiting, kv, preempt, prompt, gen, success *family
	ttft, e2e, itl, queue                               *family
	itlName                                             string
}

func newVLLMFamilies(r *registry, newNames bool) *vllmFamilies {
	g := func(name, help string) *family { return r.family(name, typeGauge, help) }
	c := func(name, help string) *family { return r.family(name, typeCounter, help) }
	h := func(name, help string) *family { return r.family(name, typeHistogram, help) }
	itl, itlHelp := "vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds."
	if newNames {
		itl, itlHelp = "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds."
	}
	return &vllmFamilies{
		running: g("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting: g("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kv:      g("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		preempt: c("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		prompt:  c("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		gen:     c("vllm:generation_tokens_total", "Number of generation tokens processed."),
		success: c("vllm:request_success_total", "Count of successfully processed requests."),
		ttft:    h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds."),
		e2e:     h("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds."),
		itl:     h(itl, itlHelp),
		queue:   h("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request."),
		itlName: itl,
	}
}

// gatherVLLM writes one scrape of a replica's /metrics; false while its
// API server is not up (loading, crashed, gone).
func (w *world) gatherVLLM(r *replica) func(e *emitter) bool {
	return func(e *emitter) bool {
		if !r.serving(w.now) {
			return false
		}
		f := w.vllm
		kv := []string{"model_name", r.d.model}
		if r.d.newBuckets {
			kv = append(kv, "engine", "0")
		}
		e.add(f.running, f.running.name, r.running, kv...)
		e.add(f.waiting, f.waiting.name, math.Round(r.waiting), kv...)
		e.add(f.kv, f.kv.name, round(r.kv, 6), kv...)
		e.add(f.preempt, f.preempt.name, r.preempt, kv...)
		e.add(f.prompt, f.prompt.name, r.promptTok, kv...)
		e.add(f.gen, f.gen.name, r.genTok, kv...)
		for i, reason := range []string{"stop", "length", "abort"} {
			e.add(f.success, f.success.name, r.success[i], append(kv, "finished_reason", reason)...)
		}
		for _, h := range []struct {
			f *family
			h *hist
		}{{f.ttft, r.ttft}, {f.e2e, r.e2e}, {f.itl, r.itl}, {f.queue, r.queue}} {
			writeHist(e, h.f, h.h, kv)
		}
		return true
	}
}

func writeHist(e *emitter, f *family, h *hist, kv []string) {
	cum := 0.0
	for i, b := range h.bounds {
		cum += h.counts[i]
		e.add(f, f.name+"_bucket", cum, append(kv, "le", strconv.FormatFloat(b, 'f', -1, 64))...)
	}
	e.add(f, f.name+"_bucket", h.count, append(kv, "le", "+Inf")...)
	e.add(f, f.name+"_sum", round(h.sum, 6), kv...)
	e.add(f, f.name+"_count", h.count, kv...)
}
