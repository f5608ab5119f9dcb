package remotewritetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// dcgmMetrics are the metric names of one GPU, as dcgm-exporter's default
// counters file exports them.
var dcgmMetrics = [...]string{
	"DCGM_FI_DEV_SM_CLOCK",
	"DCGM_FI_DEV_MEM_CLOCK",
	"DCGM_FI_DEV_GPU_TEMP",
	"DCGM_FI_DEV_MEMORY_TEMP",
	"DCGM_FI_DEV_POWER_USAGE",
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
	"DCGM_FI_DEV_GPU_UTIL",
	"DCGM_FI_DEV_MEM_COPY_UTIL",
	"DCGM_FI_DEV_ENC_UTIL",
	"DCGM_FI_DEV_DEC_UTIL",
	"DCGM_FI_DEV_XID_ERRORS",
	"DCGM_FI_DEV_FB_FREE",
	"DCGM_FI_DEV_FB_USED",
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
	"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
	"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
	"DCGM_FI_DEV_ROW_REMAP_FAILURE",
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
}

// gpusPerNode is the GPUs of one node.
const gpusPerNode = 8

var namespaces = [...]string{"ml-train", "inference", "research", "batch", "eval", "platform"}

// LabelsPerSeries is the number of labels of every generated series, the
// metric name included.
const LabelsPerSeries = 10

// GPUSeries returns n label sets as a Prometheus that scrapes dcgm-exporter
// on every GPU node would remote-write them: the metric name, the exporter's
// gpu, UUID, device, modelName and Hostname labels, the pod the GPU is
// assigned to with its namespace, and the scrape's job and instance. Series
// i belongs to GPU i/20 (20 metrics per GPU, 8 GPUs per node). Labels are
// sorted by name, as senders send them.
func GPUSeries(n int) [][]prompb.Label {
	out := make([][]prompb.Label, n)
	var node, gpu []string // values shared by the series of one node and GPU
	for i := range out {
		g := i / len(dcgmMetrics)
		nd := g / gpusPerNode
		if i%len(dcgmMetrics) == 0 {
			if g%gpusPerNode == 0 {
				ns := namespaces[nd%len(namespaces)]
				node = []string{
					fmt.Sprintf("gpu-node-%05d", nd),                                // Hostname
					fmt.Sprintf("10.%d.%d.%d:9400", 16+nd>>16, nd>>8&0xff, nd&0xff), // instance
					ns, // namespace
					fmt.Sprintf("%s-job-%04d-worker-%d", ns, nd/4, nd%4), // pod
				}
			}
			gpu = []string{gpuUUID(g), fmt.Sprintf("nvidia%d", g%gpusPerNode), fmt.Sprint(g % gpusPerNode)}
		}
		ls := []prompb.Label{
			{Name: "Hostname", Value: node[0]},
			{Name: "UUID", Value: gpu[0]},
			{Name: "__name__", Value: dcgmMetrics[i%len(dcgmMetrics)]},
			{Name: "device", Value: gpu[1]},
			{Name: "gpu", Value: gpu[2]},
			{Name: "instance", Value: node[1]},
			{Name: "job", Value: "dcgm-exporter"},
			{Name: "modelName", Value: "NVIDIA H100 80GB HBM3"},
			{Name: "namespace", Value: node[2]},
			{Name: "pod", Value: node[3]},
		}
		sort.Slice(ls, func(a, b int) bool { return ls[a].Name < ls[b].Name })
		out[i] = ls
	}
	return out
}

// gpuUUID is a stable GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx for GPU g.
func gpuUUID(g int) string {
	h := fnv.New128a()
	fmt.Fprint(h, g)
	s := h.Sum(nil)
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// value is what series i reports in round r: counters grow, gauges wander
// within realistic ranges.
func value(i, r int) float64 {
	h := uint64(i)*0x9e3779b97f4a7c15 ^ uint64(r)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	switch dcgmMetrics[i%len(dcgmMetrics)] {
	case "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
		return float64(1_000_000_000 + r*4_500_000 + int(h%100_000))
	case "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":
		return float64(r) * 3.75e9
	case "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
		"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS":
		return 0
	case "DCGM_FI_DEV_POWER_USAGE":
		return float64(250_000+h%450_000) / 1000
	case "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
		return float64(h%1_000_000) / 1_000_000
	default:
		return float64(h % 100)
	}
}

// Load is a remote-write workload encoded ahead of time: Rounds rounds,
// each one sample for every series, in Batches requests of at most
// BatchSize series. Samples of round r are Interval apart from those of
// round r-1; the last round's are at or just before End.
type Load struct {
	Series, BatchSize, Batches, Rounds int
	Interval                           time.Duration
	End                                time.Time
	// bodies[r*Batches+b] is the snappy-compressed Remote-Write 1.0
	// request of batch b in round r.
	bodies [][]byte
}

// NewLoad encodes the workload of series GPUSeries over rounds rounds
// that end at end, using every CPU.
func NewLoad(series, batchSize, rounds int, interval time.Duration, end time.Time) (*Load, error) {
	if series <= 0 || batchSize <= 0 || rounds <= 0 || interval <= 0 {
		return nil, fmt.Errorf("load: series, batch size, rounds and interval must be positive")
	}
	l := &Load{
		Series: series, BatchSize: batchSize, Batches: (series + batchSize - 1) / batchSize,
		Rounds: rounds, Interval: interval, End: end,
	}
	l.bodies = make([][]byte, l.Rounds*l.Batches)
	lsets := GPUSeries(series)
	jobs := make(chan int)
	errs := make(chan error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var first error
			for k := range jobs {
				if first == nil {
					l.bodies[k], first = l.encode(lsets, k/l.Batches, k%l.Batches)
				}
			}
			errs <- first
		})
	}
	for k := range l.bodies {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	close(errs)
	var err error
	for e := range errs {
		err = errors.Join(err, e)
	}
	return l, err
}

// timestamp is the time of round r for the series of node nd: each node's
// scrape has its own sub-interval offset, as real targets do.
func (l *Load) timestamp(r, nd int) int64 {
	off := time.Duration(nd*997%int(l.Interval.Milliseconds())) * time.Millisecond
	return l.End.Add(-time.Duration(l.Rounds-1-r)*l.Interval - off).UnixMilli()
}

func (l *Load) encode(lsets [][]prompb.Label, r, b int) ([]byte, error) {
	from, to := b*l.BatchSize, min((b+1)*l.BatchSize, l.Series)
	req := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, to-from)}
	samples := make([]prompb.Sample, to-from)
	for i := from; i < to; i++ {
		samples[i-from] = prompb.Sample{Value: value(i, r), Timestamp: l.timestamp(r, i/len(dcgmMetrics)/gpusPerNode)}
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: lsets[i], Samples: samples[i-from : i-from+1]})
	}
	raw, err := proto.Marshal(&req)
	if err != nil {
		return nil, fmt.Errorf("encode round %d batch %d: %w", r, b, err)
	}
	return snappy.Encode(nil, raw), nil
}

// Body returns the encoded request of batch b in round r.
func (l *Load) Body(r, b int) []byte { return l.bodies[r*l.Batches+b] }

// Bytes returns the size of all encoded requests.
func (l *Load) Bytes() int {
	n := 0
	for _, b := range l.bodies {
		n += len(b)
	}
	return n
}

// Samples returns the samples of rounds [from, to).
func (l *Load) Samples(from, to int) int { return (to - from) * l.Series }

// NewClient returns an HTTP client that keeps one connection per sender.
func NewClient(senders int) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Minute,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: senders,
			MaxConnsPerHost:     senders,
			DisableCompression:  true,
		},
	}
}

// Send posts rounds [from, to) to url (a remote-write endpoint) with
// senders concurrent senders. Sender s sends batches s, s+senders, … of
// every round in turn, so each series has one sender and its samples
// arrive in order. Any answer but 2xx stops it with an error.
func (l *Load) Send(ctx context.Context, client *http.Client, url string, senders, from, to int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for r := from; r < to; r++ {
				for b := s; b < l.Batches; b += senders {
					if err := post(ctx, client, url, l.Body(r, b)); err != nil {
						cancel(fmt.Errorf("round %d batch %d: %w", r, b, err))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

func post(ctx context.Context, client *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
