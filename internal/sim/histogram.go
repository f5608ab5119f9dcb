package sim

import "math"

// vLLM v1's histogram boundaries (vllm/v1/metrics/loggers.py,
// PrometheusStatLogger): time to first token, inter-token latency (and the
// deprecated time per output token), and the request latencies (end to end,
// queue, prefill, decode, inference).
var (
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmITLBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vllmRequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// vllmTokenBuckets are vLLM's token-count boundaries,
// build_1_2_5_buckets(max_model_len) for a 128k-token model.
var vllmTokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}

// hist is a cumulative Prometheus histogram fed with whole batches of
// log-normal observations: the expected share of each batch lands in each
// bucket, so a tick costs one CDF per bucket whatever the request count.
type hist struct {
	bounds     []float64
	cum        []float64 // observations at or below each bound
	count, sum float64
}

func newHist(bounds []float64) hist {
	return hist{bounds: bounds, cum: make([]float64, len(bounds))}
}

// observe adds n observations drawn from a log-normal distribution with the
// given median and shape.
func (h *hist) observe(n, median, sigma float64) {
	if n <= 0 || median <= 0 {
		return
	}
	for i, b := range h.bounds {
		h.cum[i] += n * lognormalCDF(b, median, sigma)
	}
	h.count += n
	h.sum += n * median * math.Exp(sigma*sigma/2)
}

// reset zeroes the histogram, as a restarted process does.
func (h *hist) reset() {
	clear(h.cum)
	h.count, h.sum = 0, 0
}

// bucket returns the cumulative count at bound i as an exporter prints it:
// a whole number, never above the count.
func (h *hist) bucket(i int) float64 {
	return math.Min(math.Round(h.cum[i]), math.Round(h.count))
}

func lognormalCDF(x, median, sigma float64) float64 {
	return 0.5 * math.Erfc(-math.Log(x/median)/(sigma*math.Sqrt2))
}
