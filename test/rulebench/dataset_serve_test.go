package rulebench

import (
	"fmt"
	"math"
	"time"
)

// vLLM v1's histogram boundaries (vllm/v1/metrics/loggers.py, as in
// internal/sim), written as its Python client writes them ("1.0").
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// finishReasons are vLLM's request_success reasons and their shares.
var finishReasons = []struct {
	name  string
	share float64
}{{"stop", 0.85}, {"length", 0.14}, {"abort", 0.01}}

// The faults of the serving layer, relative to the end of the data; which
// model each hits is modelFault's.
const (
	ttftBurnFor     = 2 * time.Hour    // TTFT median 2 s: the TTFT SLO pages
	itlSlowFor      = 90 * time.Minute // ITL median 150 ms: the ITL SLO pages
	queueGrowsFor   = 40 * time.Minute // the queue grows to 45 and TTFT with it
	accuracyDropFor = time.Hour        // model_accuracy 0.91: model-accuracy pages
	driftFor        = 2 * time.Hour    // PSI 0.4 on two features: a drift ticket
)

// Faults by model index (modulo the model count, so a small data set has
// them too).
const (
	faultTTFT     = 5
	faultITL      = 7
	faultQueue    = 11
	faultAccuracy = 3
	faultDrift    = 9
)

// modelInfo is one vLLM deployment (one replica).
type modelInfo struct {
	index                int
	name, namespace, pod string
	instance             string
	rate                 float64 // requests per second
}

var modelBases = []string{"llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "mistral-7b-instruct", "mixtral-8x7b-instruct",
	"qwen2.5-7b-instruct", "qwen2.5-72b-instruct", "gemma-2-9b-it", "phi-3-mini-4k", "deepseek-coder-6.7b", "codellama-13b"}

var modelVariants = []string{"", "-ft-support", "-ft-search", "-ft-legal", "-ft-code"}

func makeModels(n int) []modelInfo {
	out := make([]modelInfo, n)
	for i := range out {
		name := modelBases[i%len(modelBases)] + modelVariants[(i/len(modelBases))%len(modelVariants)]
		if i >= len(modelBases)*len(modelVariants) {
			name += fmt.Sprintf("-%d", i)
		}
		ns := []string{"inference", "chat"}[i%2]
		out[i] = modelInfo{
			index: i, name: name, namespace: ns, pod: "vllm-" + name + "-0",
			instance: fmt.Sprintf("10.1.%d.%d:8000", i/250, i%250+1),
			rate:     0.5 + 4.5*unit(noiseRequests, uint64(i), 0),
		}
	}
	return out
}

// hasFault reports whether model m has fault f (modelFault's index
// modulo the count, and every 25th after it).
func (d *dataset) hasFault(m, f int) bool { return m%25 == f%min(25, d.shape.models) }

func vllmTarget(m int) target { return target{offset: time.Duration((m*11+3)%30) * time.Second} }

// vllmLabels are what vLLM's /metrics carries, as a PodMonitor stores it.
func vllmLabels(m modelInfo) []string {
	return []string{"model_name", m.name, "engine", "0", "container", "vllm", "namespace", m.namespace,
		"pod", m.pod, "instance", m.instance, "job", "vllm"}
}

// histTimeline is one histogram over the scrapes: cumulative counts per
// bound (then +Inf) and the sum.
type histTimeline struct {
	bounds []float64
	cum    [][]float64
	sum    []float64
}

// modelTimeline is everything a model's vLLM exports, per scrape.
type modelTimeline struct {
	requests       []float64 // cumulative finished requests
	ttft, itl, e2e histTimeline
	waiting        []float64
}

func newHist(bounds []float64, n int) histTimeline {
	h := histTimeline{bounds: bounds, cum: make([][]float64, len(bounds)), sum: make([]float64, n)}
	for i := range h.cum {
		h.cum[i] = make([]float64, n)
	}
	return h
}

// observe adds count log-normal observations (median, sigma) at scrape k
// to the totals of scrape k-1.
func (h *histTimeline) observe(k int, count, median, sigma float64) {
	for i, b := range h.bounds {
		prev := 0.0
		if k > 0 {
			prev = h.cum[i][k-1]
		}
		h.cum[i][k] = prev + count*0.5*math.Erfc(-(math.Log(b)-math.Log(median))/(sigma*math.Sqrt2))
	}
	prev := 0.0
	if k > 0 {
		prev = h.sum[k-1]
	}
	h.sum[k] = prev + count*median*math.Exp(sigma*sigma/2)
}

// timeline computes model m's series at scrapes ts. The counters start
// as if the server had run for a day.
func (d *dataset) timeline(m modelInfo, ts []int64) modelTimeline {
	n := len(ts)
	tl := modelTimeline{requests: make([]float64, n), ttft: newHist(ttftBuckets, n), itl: newHist(itlBuckets, n),
		e2e: newHist(e2eBuckets, n), waiting: make([]float64, n)}
	for k, ms := range ts {
		ago := d.ago(ms)
		count := m.rate * d.step.Seconds() * (0.6 + 0.8*d.inferLoad(m.index, ms))
		if k == 0 {
			count = m.rate * 86400
		}
		waiting := math.Max(0, math.Round(2+2*jitter(noiseWaiting, uint64(m.index), uint64(ms))))
		ttft, itl := 0.2, 0.03
		if d.hasFault(m.index, faultQueue) && ago < queueGrowsFor {
			waiting = math.Round(45 * (1 - ago.Seconds()/queueGrowsFor.Seconds()))
		}
		ttft *= 1 + waiting/10
		if d.hasFault(m.index, faultTTFT) && ago < ttftBurnFor {
			ttft = 2
		}
		if d.hasFault(m.index, faultITL) && ago < itlSlowFor {
			itl = 0.15
		}
		tl.waiting[k] = waiting
		tl.requests[k] = count
		if k > 0 {
			tl.requests[k] += tl.requests[k-1]
		}
		tl.ttft.observe(k, count, ttft, 0.7)
		tl.itl.observe(k, count, itl, 0.5)
		tl.e2e.observe(k, count, ttft+200*itl, 0.6)
	}
	return tl
}

func (d *dataset) writeVLLM(o *omWriter) {
	times := make([][]int64, len(d.models))
	tls := make([]modelTimeline, len(d.models))
	for i, m := range d.models {
		times[i] = d.times(vllmTarget(i))
		tls[i] = d.timeline(m, times[i])
	}
	o.family("vllm:num_requests_waiting", "gauge")
	for i, m := range d.models {
		o.series("vllm:num_requests_waiting", vllmLabels(m), times[i], func(k int) float64 { return tls[i].waiting[k] })
	}
	o.family("vllm:num_requests_running", "gauge")
	for i, m := range d.models {
		o.series("vllm:num_requests_running", vllmLabels(m), times[i], func(k int) float64 {
			return math.Round(8 + 24*d.inferLoad(i, times[i][k]))
		})
	}
	o.family("vllm:request_success", "counter")
	for i, m := range d.models {
		for _, r := range finishReasons {
			o.series("vllm:request_success_total", with(vllmLabels(m), "finished_reason", r.name), times[i], func(k int) float64 {
				return math.Round(tls[i].requests[k] * r.share)
			})
		}
	}
	hists := []struct {
		name string
		of   func(*modelTimeline) *histTimeline
	}{
		{"vllm:time_to_first_token_seconds", func(t *modelTimeline) *histTimeline { return &t.ttft }},
		{"vllm:inter_token_latency_seconds", func(t *modelTimeline) *histTimeline { return &t.itl }},
		{"vllm:e2e_request_latency_seconds", func(t *modelTimeline) *histTimeline { return &t.e2e }},
	}
	for _, h := range hists {
		o.family(h.name, "histogram")
		for i, m := range d.models {
			writeHist(o, h.name, vllmLabels(m), times[i], h.of(&tls[i]), tls[i].requests)
		}
	}
}

// writeHist writes one histogram's buckets, +Inf, sum and count.
func writeHist(o *omWriter, name string, labels []string, ts []int64, h *histTimeline, count []float64) {
	for i, b := range h.bounds {
		le := fmt.Sprintf("%g", b)
		if b == math.Trunc(b) {
			le = fmt.Sprintf("%.1f", b)
		}
		o.series(name+"_bucket", with(labels, "le", le), ts, func(k int) float64 { return math.Round(h.cum[i][k]) })
	}
	total := func(k int) float64 { return math.Round(count[k]) }
	o.series(name+"_bucket", with(labels, "le", "+Inf"), ts, total)
	o.series(name+"_sum", labels, ts, func(k int) float64 { return round(h.sum[k], 3) })
	o.series(name+"_count", labels, ts, total)
}

var evaluatorTarget = target{offset: 17 * time.Second}

// writeEvaluator writes model_accuracy{model, namespace} of an online
// evaluator.
func (d *dataset) writeEvaluator(o *omWriter) {
	ts := d.times(evaluatorTarget)
	o.family("model_accuracy", "gauge")
	for _, m := range d.models {
		labels := []string{"model", m.name, "namespace", m.namespace, "instance", "model-evaluator.monitoring:8080", "job", "model-evaluator"}
		o.series("model_accuracy", labels, ts, func(k int) float64 {
			if d.hasFault(m.index, faultAccuracy) && d.ago(ts[k]) < accuracyDropFor {
				return 0.91
			}
			return round(0.968+0.008*jitter(noiseAccuracy, uint64(m.index), uint64(ts[k])), 4)
		})
	}
}

var featureNames = []string{"prompt_length", "output_length", "language", "topic", "temperature",
	"user_tier", "region", "tool_calls", "top_p", "system_prompt_length"}

var driftTarget = target{offset: 5 * time.Second}

// writeDrift writes vigil_feature_drift{model, feature, method}: PSI and
// KS per feature, as Vigil's drift monitor exports them.
func (d *dataset) writeDrift(o *omWriter) {
	ts := d.times(driftTarget)
	o.family("vigil_feature_drift", "gauge")
	for _, m := range d.models {
		for f := range d.features {
			feature := featureNames[f%len(featureNames)]
			if f >= len(featureNames) {
				feature += fmt.Sprint(f)
			}
			for _, method := range []string{"psi", "ks"} {
				labels := []string{"model", m.name, "feature", feature, "method", method, "instance", "vigil.monitoring:9700", "job", "vigil"}
				o.series("vigil_feature_drift", labels, ts, func(k int) float64 {
					v := 0.06 + 0.04*jitter(noiseDrift, uint64(m.index*100+f), uint64(ts[k]))
					if method == "ks" {
						v /= 3
					}
					if method == "psi" && f < 2 && d.hasFault(m.index, faultDrift) && d.ago(ts[k]) < driftFor {
						v = 0.4
					}
					return round(v, 4)
				})
			}
		}
	}
}
