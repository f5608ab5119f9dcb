package rulebench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// shape is the size of a generated data set.
type shape struct {
	nodes    int           // of gpusPerNode GPUs each
	models   int           // vLLM deployments, one replica each
	features int           // per model, in vigil_feature_drift
	span     time.Duration // history of the serving, drift and Job series
	gpuSpan  time.Duration // history of the GPU gauges
	step     time.Duration // scrape interval of every target
}

// benchShape is the benchmark's data set: 1,000 GPUs (125 nodes of 8),
// 50 models, scraped every 30 s. The serving, drift and Job series have
// four hours of history: the 5m to 2h burn windows are full, the 6h, 1d
// and 3d windows (and feature-drift's 7d) see four hours. The GPU gauges
// have 75 minutes: no preset reads more than an hour of them (the
// gpu-sm-utilisation average), and they would otherwise be 70% of the file
// and of the load time without changing what the rules read.
var benchShape = shape{nodes: 125, models: 50, features: 5, span: 4 * time.Hour, gpuSpan: 75 * time.Minute, step: 30 * time.Second}

// quickShape is the same cluster in miniature for the plain `go test`
// check: every kind of series, a few of each.
var quickShape = shape{nodes: 3, models: 4, features: 2, span: 2 * time.Hour, gpuSpan: 75 * time.Minute, step: 30 * time.Second}

const gpusPerNode = 8

// trainNamespaces are the namespaces of the training jobs, in job order.
// Their SM activity differs: research's is low and vision's high, so that
// the gpu-sm-utilisation tickets fire on both sides.
var trainNamespaces = []string{"ml-train", "research", "foundation", "vision", "speech"}

var smBase = map[string]float64{"ml-train": 0.78, "research": 0.52, "foundation": 0.80, "vision": 0.90, "speech": 0.74}

// nodesPerJob is the size of one training job.
const nodesPerJob = 10

// dataset is one generated cluster: the scrape times are fixed by end and
// the shape; every value is a function of the entity and the time, so the
// file is the same for the same end.
type dataset struct {
	shape
	end    time.Time // the newest scrape is at or before end
	start  time.Time // end - span
	gpus   []gpuInfo
	models []modelInfo
	jobs   []kubeJob
}

// gpu roles.
const (
	roleIdle = iota
	roleTrain
	roleInfer
)

// gpuInfo is one GPU and what runs on it.
type gpuInfo struct {
	node, idx                 int
	role                      int
	job                       int // training job, with roleTrain
	model                     int // vLLM model, with roleInfer
	namespace, pod, container string
}

func hostname(node int) string { return fmt.Sprintf("gpu-node-%03d", node+1) }

func newDataset(s shape, end time.Time) *dataset {
	d := &dataset{shape: s, end: end.Truncate(time.Second)}
	d.start = d.end.Add(-s.span)
	d.models = makeModels(s.models)
	trainNodes := s.nodes * 4 / 5
	for n := range s.nodes {
		for i := range gpusPerNode {
			g := gpuInfo{node: n, idx: i}
			switch {
			case n < trainNodes:
				g.role, g.job = roleTrain, n/nodesPerJob
				g.namespace = trainNamespaces[g.job%len(trainNamespaces)]
				g.pod = fmt.Sprintf("llm-pretrain-%d-worker-%d", g.job, n%nodesPerJob)
				g.container = "pytorch"
			case ((n-trainNodes)*gpusPerNode+i)/2 < len(d.models):
				m := &d.models[((n-trainNodes)*gpusPerNode+i)/2]
				g.role, g.model = roleInfer, m.index
				g.namespace, g.pod, g.container = m.namespace, m.pod, "vllm"
			}
			d.gpus = append(d.gpus, g)
		}
	}
	d.jobs = makeJobs(d)
	return d
}

// target is one scrape target's schedule: every step from start+offset,
// or from end-gpuSpan+offset for a GPU target.
type target struct {
	offset time.Duration
	gpu    bool
}

// times returns the scrape times of t in milliseconds.
func (d *dataset) times(t target) []int64 {
	var out []int64
	from := d.start
	if t.gpu {
		from = d.end.Add(-d.gpuSpan)
	}
	for at := from.Add(t.offset); !at.After(d.end); at = at.Add(d.step) {
		out = append(out, at.UnixMilli())
	}
	return out
}

// ago returns how long before end the scrape at ms is.
func (d *dataset) ago(ms int64) time.Duration { return d.end.Sub(time.UnixMilli(ms)) }

// write writes the data set as OpenMetrics text.
func (d *dataset) write(w io.Writer) (stats, error) {
	o := newOMWriter(w)
	d.writeDCGM(o)
	d.writeVLLM(o)
	d.writeEvaluator(o)
	d.writeDrift(o)
	d.writeKube(o)
	return o.close()
}

// stats counts what a file holds.
type stats struct {
	families, series, samples int
	bytes                     int64
	metrics                   map[string]bool // every sample name written
}

// omWriter streams OpenMetrics: each family's header, then each series
// with all its samples in time order.
type omWriter struct {
	w   *bufio.Writer
	cw  *countWriter
	st  stats
	buf []byte
}

func newOMWriter(w io.Writer) *omWriter {
	cw := &countWriter{w: w}
	return &omWriter{w: bufio.NewWriterSize(cw, 1<<20), cw: cw, st: stats{metrics: map[string]bool{}}}
}

// family starts a metric family (typ: gauge, counter, histogram).
func (o *omWriter) family(name, typ string) {
	o.st.families++
	fmt.Fprintf(o.w, "# TYPE %s %s\n", name, typ)
}

// series writes one series at times ts with the values value(k).
func (o *omWriter) series(name string, labels []string, ts []int64, value func(k int) float64) {
	if len(ts) == 0 {
		return
	}
	prefix := seriesText(name, labels)
	o.st.series++
	o.st.metrics[name] = true
	for k, t := range ts {
		b := append(o.buf[:0], prefix...)
		b = append(b, ' ')
		b = strconv.AppendFloat(b, value(k), 'g', -1, 64)
		b = append(b, ' ')
		b = strconv.AppendInt(b, t/1000, 10)
		if ms := t % 1000; ms != 0 {
			b = append(b, '.')
			b = append(b, fmt.Sprintf("%03d", ms)...)
		}
		b = append(b, '\n')
		o.buf = b
		o.w.Write(b)
	}
	o.st.samples += len(ts)
}

func (o *omWriter) close() (stats, error) {
	o.w.WriteString("# EOF\n")
	err := o.w.Flush()
	o.st.bytes = o.cw.n
	return o.st, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// seriesText formats name{k="v",...}; labels are name, value pairs.
func seriesText(name string, labels []string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(labels[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// with returns labels with more appended, in a new slice.
func with(labels []string, more ...string) []string {
	return append(append(make([]string, 0, len(labels)+len(more)), labels...), more...)
}

// unit is a deterministic pseudo-random number in [0, 1) for a tuple
// (splitmix64 over the mixed inputs).
func unit(a, b, c uint64) float64 {
	x := a*0x9E3779B97F4A7C15 ^ (b+0x632BE59BD9B4E019)*0xC2B2AE3D27D4EB4F ^ (c+0x85EBCA77C2B2AE63)*0x165667B19E3779F9
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// jitter is unit mapped to [-1, 1).
func jitter(a, b, c uint64) float64 { return 2*unit(a, b, c) - 1 }

func round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// Kinds of noise, the first input of unit.
const (
	noiseSM = iota + 1
	noiseUtil
	noiseNVLink
	noiseRequests
	noiseWaiting
	noiseRunning
	noiseAccuracy
	noiseDrift
	noiseJob
	noiseID
	noiseLoad
)
