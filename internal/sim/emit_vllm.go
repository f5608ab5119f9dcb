package sim

import "math"

// vllmServer is one vLLM replica's /metrics endpoint (vLLM v1 engine,
// 0.11+ names).
type vllmServer struct {
	r                     *replica
	running, waiting, kv  *series
	preempt, prompt, gen  *series
	queries, hits         *series
	success               [len(finishReasons)]*series
	ttft, itl, e2e, queue histSeries
	promptTokens          histSeries
	genTokens             histSeries
	instance              string
}

// histSeries are the series of one histogram.
type histSeries struct {
	buckets    []*series // one per bound, then +Inf
	sum, count *series
}

func newHistSeries(reg *registry, name, help string, bounds []float64, kv []string) histSeries {
	f := reg.family(name, typeHistogram, help)
	var h histSeries
	for _, b := range bounds {
		h.buckets = append(h.buckets, f.newSeries(name+"_bucket", with(kv, "le", leLabel(b))...))
	}
	h.buckets = append(h.buckets, f.newSeries(name+"_bucket", with(kv, "le", "+Inf")...))
	h.sum = f.newSeries(name+"_sum", kv...)
	h.count = f.newSeries(name+"_count", kv...)
	return h
}

func (h histSeries) emit(o *scrapeOut, v *hist) {
	for i := range v.bounds {
		o.add(h.buckets[i], v.bucket(i))
	}
	o.add(h.buckets[len(v.bounds)], math.Round(v.count))
	o.add(h.sum, round(v.sum, 6))
	o.add(h.count, math.Round(v.count))
}

// newVLLMServer makes a replica's series; old speaks vLLM 0.9's names
// (gpu_cache_usage_perc, time_per_output_token_seconds) without the engine
// label.
func newVLLMServer(reg *registry, r *replica, model string, old bool) *vllmServer {
	p := r.pod
	s := &vllmServer{r: r, instance: p.ip + ":8000"}
	engine, kvName, itlName := "0", "vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds"
	itlHelp := "Histogram of inter-token latency in seconds."
	if old {
		engine, kvName, itlName = "", "vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds"
		itlHelp = "Histogram of time per output token in seconds."
	}
	kv := []string{"model_name", model, "engine", engine, "instance", s.instance, "job", jobVLLM, "namespace", p.namespace, "pod", p.name}
	g := func(name, help string) *series { return reg.family(name, typeGauge, help).newSeries(name, kv...) }
	c := func(name, help string, more ...string) *series {
		return reg.family(name, typeCounter, help).newSeries(name+"_total", with(kv, more...)...)
	}
	s.running = g("vllm:num_requests_running", "Number of requests in model execution batches.")
	s.waiting = g("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	s.kv = g(kvName, "KV-cache usage. 1 means 100 percent usage.")
	s.preempt = c("vllm:num_preemptions", "Cumulative number of preemption from the engine.")
	s.prompt = c("vllm:prompt_tokens", "Number of prefill tokens processed.")
	s.gen = c("vllm:generation_tokens", "Number of generation tokens processed.")
	s.queries = c("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.")
	s.hits = c("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.")
	for i, f := range finishReasons {
		s.success[i] = c("vllm:request_success", "Count of successfully processed requests.", "finished_reason", f.name)
	}
	s.ttft = newHistSeries(reg, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", vllmTTFTBuckets, kv)
	s.itl = newHistSeries(reg, itlName, itlHelp, vllmITLBuckets, kv)
	s.e2e = newHistSeries(reg, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", vllmRequestLatencyBuckets, kv)
	s.queue = newHistSeries(reg, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", vllmRequestLatencyBuckets, kv)
	s.promptTokens = newHistSeries(reg, "vllm:request_prompt_tokens", "Number of prefill tokens processed.", vllmTokenBuckets, kv)
	s.genTokens = newHistSeries(reg, "vllm:request_generation_tokens", "Number of generation tokens processed.", vllmTokenBuckets, kv)
	return s
}

// scrape emits the replica's metrics.
func (s *vllmServer) scrape(o *scrapeOut) {
	r := s.r
	o.add(s.running, r.running)
	o.add(s.waiting, math.Round(r.waiting))
	o.add(s.kv, round(r.kv, 6))
	o.add(s.preempt, r.preemptions)
	o.add(s.prompt, r.promptTokens)
	o.add(s.gen, r.genTokens)
	o.add(s.queries, r.prefixQueries)
	o.add(s.hits, r.prefixHits)
	for i := range finishReasons {
		o.add(s.success[i], r.success[i])
	}
	s.ttft.emit(o, &r.ttft)
	s.itl.emit(o, &r.itl)
	s.e2e.emit(o, &r.e2e)
	s.queue.emit(o, &r.queue)
	s.promptTokens.emit(o, &r.promptHist)
	s.genTokens.emit(o, &r.genHist)
}
