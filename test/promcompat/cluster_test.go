package promcompat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// The generated dump covers four hours from clusterStart. Every scrape
// target has a fixed offset whose millisecond part is one of 500, 625, 750
// or 875 (exact in binary, so the seconds written in the file convert back
// to the same milliseconds in any parser). Evaluation times in the battery
// end in .250 and subquery steps are whole seconds, so no range or lookback
// boundary ever falls on a sample: that is where Prometheus 3's left-open
// selectors differ from 2.x's closed ones, and the differences table
// evaluates there on purpose.
const (
	// clusterStart is 2026-11-12T00:00:00Z in milliseconds.
	clusterStart    int64 = 1794441600_000
	clusterDuration       = 4 * time.Hour
	clusterNodes          = 4
	gpusPerNode           = 8
	clusterSeed           = 20261112
)

// The incidents in the dump, as offsets from clusterStart.
const (
	// fixturesAt is when the scrapes made of the exposition fixtures begin.
	fixturesAt = 50 * time.Minute
	// vllmRestartAt is when pod vllm-1 restarts: 45 s without samples, then
	// all its counters and histogram buckets start again from zero.
	vllmRestartAt   = 100 * time.Minute
	vllmRestartGap  = 45 * time.Second
	vllmQueueBuilds = 20 * time.Minute
	vllmWarmUp      = 30 * time.Second
	// nodeRebootAt is when gpu-node-02 reboots: its dcgm-exporter and
	// node-exporter send nothing for 7 minutes (longer than the lookback
	// delta), then its counters start again from near zero.
	nodeRebootAt  = 130 * time.Minute
	nodeRebootGap = 7 * time.Minute
	bootTime      = 150 * time.Second
	// nvlinkDegradedAt is when NVLink on gpu-node-03 drops to 1 % of its
	// bandwidth and the training job on gpu-node-01..03 stalls.
	nvlinkDegradedAt = 180 * time.Minute
	// gpuLostAt is when GPU 7 of gpu-node-04 falls off the bus: its series
	// end there.
	gpuLostAt = 200 * time.Minute
)

// scrapeTarget is when one target is scraped: every interval from
// clusterStart+offset until the end of the dump.
type scrapeTarget struct {
	interval, offset time.Duration
}

// subSecond are the millisecond parts of scrape offsets.
var subSecond = [...]time.Duration{500 * time.Millisecond, 625 * time.Millisecond, 750 * time.Millisecond, 875 * time.Millisecond}

// at returns the time of scrape k in milliseconds.
func (s scrapeTarget) at(k int) int64 {
	return clusterStart + s.offset.Milliseconds() + int64(k)*s.interval.Milliseconds()
}

// count returns how many scrapes fall inside the dump.
func (s scrapeTarget) count() int {
	return int((clusterDuration - s.offset + s.interval - 1) / s.interval)
}

// rel returns t (milliseconds) as an offset from clusterStart.
func rel(t int64) time.Duration { return time.Duration(t-clusterStart) * time.Millisecond }

// The scrape targets of the dump.
func dcgmTarget(node int) scrapeTarget {
	return scrapeTarget{interval: 30 * time.Second, offset: time.Duration(3+5*node)*time.Second + subSecond[node%4]}
}

func nodeExporterTarget(node int) scrapeTarget {
	return scrapeTarget{interval: 15 * time.Second, offset: time.Duration(1+3*node)*time.Second + subSecond[(node+1)%4]}
}

func vllmTarget(pod int) scrapeTarget {
	return scrapeTarget{interval: 15 * time.Second, offset: time.Duration(2+7*pod)*time.Second + subSecond[(pod+1)%4]}
}

var (
	gatewayTarget = scrapeTarget{interval: 15 * time.Second, offset: 5*time.Second + subSecond[0]}
	ksmTarget     = scrapeTarget{interval: 30 * time.Second, offset: 11*time.Second + subSecond[3]}
)

func hostname(node int) string { return fmt.Sprintf("gpu-node-%02d", node+1) }

// gpuPod is the pod a GPU is allocated to; the zero value is an idle GPU.
type gpuPod struct{ namespace, pod, container string }

func podOfGPU(node, gpu int) gpuPod {
	switch {
	case node < clusterNodes-1:
		return gpuPod{"ml-train", fmt.Sprintf("llm-pretrain-worker-%d", node), "pytorch"}
	case gpu < 2:
		return gpuPod{"inference", "vllm-0", "vllm"}
	case gpu < 4:
		return gpuPod{"inference", "vllm-1", "vllm"}
	}
	return gpuPod{}
}

// warmUpScrapes is how many scrape intervals the request counters ran
// before the dump begins, so that they do not start at zero with it.
const warmUpScrapes = 480

// vllmBuckets are the le bounds of vLLM's vllm:time_to_first_token_seconds,
// as its Python client writes them.
var vllmBuckets = []string{"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75",
	"1.0", "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0", "+Inf"}

// gatewayBuckets are client_golang's default buckets, formatted as the Go
// client writes them (le="1", not "1.0"): Prometheus 3 normalises them.
var gatewayBuckets = []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}

// generateCluster adds the GPU-cluster dump to f: dcgm-exporter on four
// nodes of eight GPUs, node-exporter, two vLLM pods, a Go gateway and
// kube-state-metrics, with the incidents above. It is deterministic.
func generateCluster(f *omFile) {
	for n := range clusterNodes {
		generateDCGM(f, n, newRand(1, n))
		generateNodeExporter(f, n, newRand(2, n))
	}
	for p := range 2 {
		generateVLLM(f, p, newRand(3, p))
	}
	generateGateway(f, newRand(4, 0))
	generateKSM(f)
}

func newRand(kind, index int) *rand.Rand {
	return rand.New(rand.NewPCG(clusterSeed, uint64(kind*1000+index)))
}

func round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func inWindow(d, from, length time.Duration) bool { return d >= from && d < from+length }

func generateDCGM(f *omFile, node int, r *rand.Rand) {
	util := f.family("DCGM_FI_DEV_GPU_UTIL", "gauge")
	tensor := f.family("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge")
	power := f.family("DCGM_FI_DEV_POWER_USAGE", "gauge")
	temp := f.family("DCGM_FI_DEV_GPU_TEMP", "gauge")
	nvlink := f.family("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gauge")
	energy := f.family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter")

	host := hostname(node)
	model := "NVIDIA H100 80GB HBM3"
	if node == clusterNodes-1 {
		model = "NVIDIA A100-SXM4-80GB"
	}
	type gpuState struct {
		labels []string
		energy float64
		phase  float64
	}
	gpus := make([]gpuState, gpusPerNode)
	for g := range gpus {
		uuid := fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff)
		ls := []string{"gpu", strconv.Itoa(g), "UUID", uuid, "device", fmt.Sprintf("nvidia%d", g), "modelName", model, "Hostname", host}
		if p := podOfGPU(node, g); p.pod != "" {
			ls = append(ls, "container", p.container, "namespace", p.namespace, "pod", p.pod)
		}
		ls = append(ls, "instance", fmt.Sprintf("10.42.%d.2:9400", node), "job", "dcgm-exporter")
		gpus[g] = gpuState{labels: ls, energy: math.Round(4e11 + r.Float64()*1e11), phase: r.Float64() * 2 * math.Pi}
	}
	tg := dcgmTarget(node)
	rebooted := false
	for k := range tg.count() {
		t := tg.at(k)
		d := rel(t)
		if node == 1 && inWindow(d, nodeRebootAt, nodeRebootGap) {
			rebooted = true
			continue
		}
		for g := range gpus {
			st := &gpus[g]
			if node == clusterNodes-1 && g == gpusPerNode-1 && d >= gpuLostAt {
				continue
			}
			pod := podOfGPU(node, g)
			training := pod.namespace == "ml-train"
			var u, bw float64
			switch {
			case training:
				u = 93 + 4*math.Sin(2*math.Pi*d.Minutes()/15+st.phase) + r.NormFloat64()*1.5
				bw = 21000 + r.NormFloat64()*400
				if d >= nvlinkDegradedAt || inWindow(d, nodeRebootAt, nodeRebootGap+3*time.Minute) {
					u, bw = 38+r.NormFloat64()*3, 9000+r.NormFloat64()*300
				}
				if node == 2 && d >= nvlinkDegradedAt {
					bw = 210 + r.NormFloat64()*20
				}
			case pod.pod != "":
				u = 45 + 20*math.Sin(2*math.Pi*d.Minutes()/50+float64(g)) + r.NormFloat64()*4
				if pod.pod == "vllm-1" && inWindow(d, vllmRestartAt, 2*time.Minute) {
					u = 0
				}
				bw = 900 + u*20 + r.NormFloat64()*50
			}
			u = math.Round(clamp(u, 0, 100))
			bw = math.Max(0, math.Round(bw))
			var w float64
			switch {
			case pod.pod == "":
				w = 61.2 + r.NormFloat64()*0.3
			case training:
				w = 90 + u*5.8 + r.NormFloat64()*6
			default:
				w = 55 + u*3.4 + r.NormFloat64()*4
			}
			w = round(w, 3)
			ta := 0.0
			if pod.pod != "" {
				ta = round(clamp(u/100*0.85+r.NormFloat64()*0.02, 0, 1), 6)
			}
			c := math.Round(32 + u*0.42 + r.NormFloat64()*0.7)
			if node == 1 && rebooted {
				// The first scrape after the reboot: the counter restarted
				// at boot, about two and a half minutes ago.
				st.energy = math.Round(w * bootTime.Seconds() * 1000)
			} else {
				st.energy += math.Round(w * tg.interval.Seconds() * 1000)
			}

			series := func(name string) string { return seriesText(name, st.labels) }
			util.add(series("DCGM_FI_DEV_GPU_UTIL"), t, u)
			tensor.add(series("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), t, ta)
			power.add(series("DCGM_FI_DEV_POWER_USAGE"), t, w)
			temp.add(series("DCGM_FI_DEV_GPU_TEMP"), t, c)
			nvlink.add(series("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), t, bw)
			energy.add(series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), t, st.energy)
		}
		rebooted = false
	}
}

func generateNodeExporter(f *omFile, node int, r *rand.Rand) {
	rx := f.family("node_network_receive_bytes", "counter")
	host := hostname(node)
	devices := []string{"eth0", "ib0"}
	series := make([]string, len(devices))
	counters := make([]float64, len(devices))
	for i, dev := range devices {
		series[i] = seriesText("node_network_receive_bytes_total", []string{"device", dev, "instance", host + ":9100", "job", "node-exporter"})
		counters[i] = math.Round(1e12 + r.Float64()*1e12)
	}
	tg := nodeExporterTarget(node)
	rebooted := false
	for k := range tg.count() {
		t := tg.at(k)
		d := rel(t)
		if node == 1 && inWindow(d, nodeRebootAt, nodeRebootGap) {
			rebooted = true
			continue
		}
		for i, dev := range devices {
			var bps float64
			switch {
			case dev == "eth0":
				bps = 4e7 + 1e7*math.Sin(2*math.Pi*d.Minutes()/40) + r.NormFloat64()*2e6
			case node < clusterNodes-1 && d >= nvlinkDegradedAt:
				bps = 3e9 + r.NormFloat64()*1e8
			case node < clusterNodes-1:
				bps = 1.1e10 + r.NormFloat64()*3e8
			default:
				bps = 2e8 + r.NormFloat64()*1e7
			}
			bytes := math.Round(math.Max(bps, 0) * tg.interval.Seconds())
			switch {
			case rebooted && dev == "eth0":
				// Since boot: the image pull and one interval of traffic.
				counters[i] = 5e9 + bytes
			case rebooted:
				// The InfiniBand link came up shortly before the first
				// scrape after the reboot: 80 % of an interval of traffic.
				// This is where Prometheus 2.42 and 3 extrapolate rate()
				// differently (see the differences table).
				counters[i] = math.Round(bytes * 0.8)
			default:
				counters[i] += bytes
			}
			rx.add(series[i], t, counters[i])
		}
		rebooted = false
	}
}

func generateVLLM(f *omFile, pod int, r *rand.Rand) {
	success := f.family("vllm:request_success", "counter")
	ttft := f.family("vllm:time_to_first_token_seconds", "histogram")
	running := f.family("vllm:num_requests_running", "gauge")
	waiting := f.family("vllm:num_requests_waiting", "gauge")
	kv := f.family("vllm:kv_cache_usage_perc", "gauge")

	base := []string{"engine", "0", "model_name", "meta-llama/Llama-3.1-8B-Instruct",
		"instance", fmt.Sprintf("10.42.3.%d:8000", 11+pod), "job", "vllm", "namespace", "inference", "pod", fmt.Sprintf("vllm-%d", pod)}
	with := func(name string, extra ...string) string {
		return seriesText(name, append(append([]string{}, extra...), base...))
	}
	reasons := []string{"stop", "length", "abort"}
	bucketSeries := make([]string, len(vllmBuckets))
	for i, le := range vllmBuckets {
		bucketSeries[i] = with("vllm:time_to_first_token_seconds_bucket", "le", le)
	}
	var (
		done    = make([]float64, len(reasons))
		buckets = make([]float64, len(vllmBuckets))
		sum     float64
		count   float64
	)
	bounds := make([]float64, len(vllmBuckets))
	for i, le := range vllmBuckets {
		bounds[i], _ = strconv.ParseFloat(le, 64)
	}
	tg := vllmTarget(pod)
	serve := func(d time.Duration) (lambda float64) {
		queueing := pod == 1 && inWindow(d, vllmRestartAt-vllmQueueBuilds, vllmQueueBuilds)
		lambda = (3 + 1.5*math.Sin(2*math.Pi*d.Minutes()/90+float64(pod))) * tg.interval.Seconds()
		n := int(math.Max(0, math.Round(lambda+r.NormFloat64()*math.Sqrt(lambda))))
		if pod == 1 && inWindow(d, vllmRestartAt+vllmRestartGap, vllmWarmUp) {
			// Restarted and loading the model: metrics are served, requests
			// are not yet.
			n = 0
		}
		for range n {
			x := math.Exp(math.Log(0.12) + 0.7*r.NormFloat64())
			if queueing {
				x *= 8
			}
			for i, b := range bounds {
				if x <= b {
					buckets[i]++
				}
			}
			sum += x
			count++
			switch u := r.Float64(); {
			case u < 0.85:
				done[0]++
			case u < 0.98:
				done[1]++
			default:
				done[2]++
			}
		}
		return lambda
	}
	// The pods had been serving for a while when the dump begins.
	for k := range warmUpScrapes {
		serve(time.Duration(k-warmUpScrapes) * tg.interval)
	}
	restarted := false
	for k := range tg.count() {
		t := tg.at(k)
		d := rel(t)
		if pod == 1 && inWindow(d, vllmRestartAt, vllmRestartGap) {
			restarted = true
			continue
		}
		if restarted {
			clear(done)
			clear(buckets)
			sum, count = 0, 0
			restarted = false
		}
		queueing := pod == 1 && inWindow(d, vllmRestartAt-vllmQueueBuilds, vllmQueueBuilds)
		lambda := serve(d)
		for i, reason := range reasons {
			success.add(with("vllm:request_success_total", "finished_reason", reason), t, done[i])
		}
		for i := range buckets {
			ttft.add(bucketSeries[i], t, buckets[i])
		}
		ttft.add(with("vllm:time_to_first_token_seconds_sum"), t, sum)
		ttft.add(with("vllm:time_to_first_token_seconds_count"), t, count)

		run := math.Max(0, math.Round(lambda/tg.interval.Seconds()*2+r.NormFloat64()))
		wait := math.Max(0, math.Round(r.NormFloat64()*1.2))
		cache := round(clamp(0.3+0.1*math.Sin(2*math.Pi*d.Minutes()/30)+r.NormFloat64()*0.03, 0, 1), 4)
		if queueing {
			wait = math.Round((d - (vllmRestartAt - vllmQueueBuilds)).Minutes() * 3)
			cache = round(clamp(0.97+r.NormFloat64()*0.01, 0, 1), 4)
		}
		running.add(with("vllm:num_requests_running"), t, run)
		waiting.add(with("vllm:num_requests_waiting"), t, wait)
		kv.add(with("vllm:kv_cache_usage_perc"), t, cache)
	}
}

func generateGateway(f *omFile, r *rand.Rand) {
	h := f.family("gateway_request_duration_seconds", "histogram")
	base := []string{"code", "200", "handler", "/v1/chat/completions", "instance", "10.42.0.7:8080", "job", "inference-gateway"}
	with := func(name string, extra ...string) string {
		return seriesText(name, append(append([]string{}, base...), extra...))
	}
	bounds := make([]float64, len(gatewayBuckets))
	bucketSeries := make([]string, len(gatewayBuckets))
	for i, le := range gatewayBuckets {
		bounds[i], _ = strconv.ParseFloat(le, 64)
		bucketSeries[i] = with("gateway_request_duration_seconds_bucket", "le", le)
	}
	buckets := make([]float64, len(bounds))
	var sum, count float64
	tg := gatewayTarget
	serve := func() {
		lambda := 6 * tg.interval.Seconds()
		n := int(math.Max(0, math.Round(lambda+r.NormFloat64()*math.Sqrt(lambda))))
		for range n {
			x := math.Exp(math.Log(0.9) + 0.6*r.NormFloat64())
			for i, b := range bounds {
				if x <= b {
					buckets[i]++
				}
			}
			sum += x
			count++
		}
	}
	for range warmUpScrapes {
		serve()
	}
	for k := range tg.count() {
		t := tg.at(k)
		serve()
		for i := range buckets {
			h.add(bucketSeries[i], t, buckets[i])
		}
		h.add(with("gateway_request_duration_seconds_sum"), t, sum)
		h.add(with("gateway_request_duration_seconds_count"), t, count)
	}
}

// ksmPod is a pod as kube-state-metrics describes it.
type ksmPod struct {
	namespace, pod, node, kind, owner, container string
}

func clusterPods() []ksmPod {
	var pods []ksmPod
	for n := range clusterNodes - 1 {
		pods = append(pods, ksmPod{"ml-train", fmt.Sprintf("llm-pretrain-worker-%d", n), hostname(n), "Job", "llm-pretrain", "pytorch"})
	}
	pods = append(pods,
		ksmPod{"inference", "vllm-0", hostname(clusterNodes - 1), "ReplicaSet", "vllm-6d4f9c7b8", "vllm"},
		ksmPod{"inference", "vllm-1", hostname(clusterNodes - 1), "ReplicaSet", "vllm-6d4f9c7b8", "vllm"},
		ksmPod{"inference", "inference-gateway-7f9c5d", hostname(0), "ReplicaSet", "inference-gateway-7f9c5d", "gateway"},
	)
	for n := range clusterNodes {
		pods = append(pods, ksmPod{"kube-system", fmt.Sprintf("nvidia-dcgm-exporter-%c%c%c%c%c", 'a'+n, 'k', 'q'+n, 'x', 'b'+n), hostname(n), "DaemonSet", "nvidia-dcgm-exporter", "nvidia-dcgm-exporter"})
	}
	return pods
}

// annotationDescription is a label value with a newline: Prometheus 3's
// regular expressions match it with ".", Prometheus 2's do not.
const annotationDescription = "Llama 3.1 8B serving\nowner: ml-platform"

func generateKSM(f *omFile) {
	info := f.family("kube_pod_info", "gauge")
	restarts := f.family("kube_pod_container_status_restarts", "counter")
	annotations := f.family("kube_pod_annotations", "gauge")
	target := []string{"instance", "10.42.0.5:8080", "job", "kube-state-metrics"}
	pods := clusterPods()
	tg := ksmTarget
	for k := range tg.count() {
		t := tg.at(k)
		d := rel(t)
		for i, p := range pods {
			uid := fmt.Sprintf("5f0c%04x-3b1e-4c7a-9d2e-%012x", i, 0xa11ce+i)
			info.add(seriesText("kube_pod_info", append([]string{"namespace", p.namespace, "pod", p.pod, "uid", uid,
				"host_ip", fmt.Sprintf("10.0.0.%d", 11+int(p.node[len(p.node)-1]-'0')), "pod_ip", fmt.Sprintf("10.42.%d.%d", i, 20+i),
				"node", p.node, "created_by_kind", p.kind, "created_by_name", p.owner, "priority_class", "", "host_network", "false"}, target...)), t, 1)
			if p.namespace == "kube-system" {
				continue
			}
			n := 0.0
			if p.pod == "vllm-1" && d >= vllmRestartAt {
				n++
			}
			if p.pod == "llm-pretrain-worker-1" && d >= nodeRebootAt+nodeRebootGap {
				n++
			}
			restarts.add(seriesText("kube_pod_container_status_restarts_total", append([]string{"namespace", p.namespace, "pod", p.pod, "uid", uid, "container", p.container}, target...)), t, n)
		}
		annotations.add(seriesText("kube_pod_annotations", append([]string{"namespace", "inference", "pod", "vllm-0", "annotation_description", annotationDescription}, target...)), t, 1)
	}
}
