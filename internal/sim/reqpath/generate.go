package reqpath

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Batch is the telemetry of one Config.Interval: the requests whose root
// span ended in [Start, End). The last batch also holds the requests that
// arrived before the run's end and finished after it.
type Batch struct {
	// Start and End bound the interval.
	Start, End time.Time
	// Traces is one ExportTraceServiceRequest; it may be empty.
	Traces ptrace.Traces
	// Logs is one ExportLogsServiceRequest; it may be empty.
	Logs plog.Logs
}

// Generator simulates the request path of one [Config]. It holds no state
// between calls of [Generator.Batches]: every call yields the same batches.
type Generator struct {
	cfg     Config
	faults  faultSet
	gateway *service
	app     *service
	vdb     *service
	models  []*modelService
	secrets secrets
	// tenantCDF and modelCDF pick a request's tenant and model server.
	tenantCDF []float64
	modelCDF  []float64
}

// New checks cfg, completed with its defaults, and prepares a Generator.
func New(cfg Config) (*Generator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, faults: faultSet{faults: cfg.Faults}}
	setup := rand.New(rand.NewPCG(cfg.Seed, streamSetup))
	g.gateway = g.newService(setup, cfg.Gateway, "cpp", 0)
	g.app = g.newService(setup, cfg.App, "python", 1)
	g.vdb = g.newService(setup, cfg.VectorDB, "rust", 2)
	for i, m := range cfg.ModelServers {
		g.models = append(g.models, &modelService{service: g.newService(setup, m.Deployment, "python", 3+i), model: m})
	}
	g.secrets = newSecrets(setup, cfg.Tenants)
	g.tenantCDF = cdf(len(cfg.Tenants), func(i int) float64 { return 1 / float64(i+2) })
	g.modelCDF = cdf(len(cfg.ModelServers), func(i int) float64 { return cfg.ModelServers[i].Weight })
	return g, nil
}

// Config is the Generator's configuration with its defaults in place; its
// faults are the ground truth.
func (g *Generator) Config() Config { return g.cfg }

// Random streams: each request draws from its own, seeded by its index;
// arrivals and set-up have theirs.
const (
	streamSetup    = 0x5e7a_0000_0000_0001
	streamArrivals = 0x5e7a_0000_0000_0002
	// extraIndex marks the requests that inference_capacity_saturated adds,
	// so the healthy requests keep their indices and their randomness.
	extraIndex = 1 << 63
)

// cdf is the cumulative distribution of n weights.
func cdf(n int, weight func(int) float64) []float64 {
	out := make([]float64, n)
	sum := 0.0
	for i := range n {
		sum += weight(i)
		out[i] = sum
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// pick draws an index from a cumulative distribution.
func pick(r *rand.Rand, cdf []float64) int {
	u := r.Float64()
	for i, c := range cdf {
		if u < c {
			return i
		}
	}
	return len(cdf) - 1
}

// arrivals is a Poisson stream of request arrivals whose rate changes at
// most once a simulated second.
type arrivals struct {
	r *rand.Rand
	// rate is the arrival rate per second at t.
	rate func(t time.Time) float64
	next time.Time
	// end is where the stream stops.
	end time.Time
	// server is the model server the stream's requests go to, or -1.
	server int
	// index is the next request's index.
	index uint64
}

// advance moves next to the following arrival: an exponential amount of
// the integrated rate later.
func (a *arrivals) advance() {
	need := a.r.ExpFloat64()
	t := a.next
	for t.Before(a.end) {
		step := time.Second - time.Duration(t.UnixNano()%int64(time.Second))
		if rate := a.rate(t); rate > 0 {
			if d := time.Duration(need / rate * float64(time.Second)); d < step {
				a.next = t.Add(max(d, 1))
				return
			}
			need -= rate * step.Seconds()
		}
		t = t.Add(step)
	}
	a.next = a.end
}

// traffic is the shape of the arrival rate at t.
func (g *Generator) traffic(t time.Time) float64 {
	if g.cfg.Traffic == nil {
		return 1
	}
	v := g.cfg.Traffic(t)
	if !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// streams are the healthy arrivals and those each saturation fault adds.
func (g *Generator) streams() []*arrivals {
	perSecond := g.cfg.RequestsPerMinute / 60
	end := g.cfg.Start.Add(g.cfg.Duration)
	base := &arrivals{
		r:    rand.New(rand.NewPCG(g.cfg.Seed, streamArrivals)),
		rate: func(t time.Time) float64 { return perSecond * g.traffic(t) },
		next: g.cfg.Start, end: end, server: -1,
	}
	base.advance()
	out := []*arrivals{base}
	for i, f := range g.cfg.Faults {
		if f.Kind != KindInferenceCapacitySaturated || f.Severity <= 1 {
			continue
		}
		srv := slices.IndexFunc(g.cfg.ModelServers, func(m ModelServer) bool { return m.Name == f.Entity["service"] })
		share := g.modelCDF[srv]
		if srv > 0 {
			share -= g.modelCDF[srv-1]
		}
		extra := perSecond * share * (f.Severity - 1)
		onset := f.Onset
		a := &arrivals{
			r: rand.New(rand.NewPCG(g.cfg.Seed, streamArrivals+uint64(i)+1)),
			rate: func(t time.Time) float64 {
				return extra * g.traffic(t) * min(1, float64(t.Sub(onset))/float64(time.Minute))
			},
			next: onset, end: end, server: srv, index: extraIndex | uint64(i)<<40,
		}
		a.advance()
		out = append(out, a)
	}
	return out
}

// sampled is the head sampler's decision for request idx: a hash of the
// seed and the index, so that it draws nothing from the request's stream.
func (g *Generator) sampled(idx uint64) bool {
	if g.cfg.SampleRatio >= 1 {
		return true
	}
	z := g.cfg.Seed ^ (idx * 0x9e3779b97f4a7c15)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11)/(1<<53) < g.cfg.SampleRatio
}

// Batches yields one Batch per Config.Interval, in time order.
func (g *Generator) Batches() iter.Seq[Batch] {
	return func(yield func(Batch) bool) {
		streams := g.streams()
		ru := &run{preemptions: map[string]int{}}
		end := g.cfg.Start.Add(g.cfg.Duration)
		var pending []*request
		for ws := g.cfg.Start; ws.Before(end); ws = ws.Add(g.cfg.Interval) {
			we := ws.Add(g.cfg.Interval)
			if we.After(end) {
				we = end
			}
			for _, a := range streams {
				for a.next.Before(we) {
					t, idx := a.next, a.index
					a.advance()
					a.index++
					if g.sampled(idx) {
						pending = append(pending, g.simulate(ru, idx, t, a.server))
					}
				}
			}
			slices.SortFunc(pending, func(a, b *request) int {
				if c := a.end.Compare(b.end); c != 0 {
					return c
				}
				return cmp.Compare(a.idx, b.idx)
			})
			n := len(pending)
			if we.Before(end) {
				n, _ = slices.BinarySearchFunc(pending, we, func(r *request, t time.Time) int { return r.end.Compare(t) })
			}
			for _, r := range pending[:n] {
				restyle(r, g.cfg.Spans)
			}
			td, ld := render(pending[:n])
			pending = slices.Delete(pending, 0, n)
			if !yield(Batch{Start: ws, End: we, Traces: td, Logs: ld}) {
				return
			}
		}
	}
}

// WriteFiles simulates cfg and writes its traces and logs as the
// OpenTelemetry Collector's file exporter does: one OTLP JSON export request
// per line, one line per non-empty batch.
func WriteFiles(cfg Config, traces, logs io.Writer) error {
	g, err := New(cfg)
	if err != nil {
		return err
	}
	tw, lw := bufio.NewWriterSize(traces, 1<<20), bufio.NewWriterSize(logs, 1<<20)
	var tm ptrace.JSONMarshaler
	var lm plog.JSONMarshaler
	for b := range g.Batches() {
		if b.Traces.SpanCount() > 0 {
			buf, err := tm.MarshalTraces(b.Traces)
			if err != nil {
				return fmt.Errorf("marshal traces of %s: %w", b.Start.Format(time.RFC3339), err)
			}
			if _, err := tw.Write(append(buf, '\n')); err != nil {
				return fmt.Errorf("write traces: %w", err)
			}
		}
		if b.Logs.LogRecordCount() > 0 {
			buf, err := lm.MarshalLogs(b.Logs)
			if err != nil {
				return fmt.Errorf("marshal logs of %s: %w", b.Start.Format(time.RFC3339), err)
			}
			if _, err := lw.Write(append(buf, '\n')); err != nil {
				return fmt.Errorf("write logs: %w", err)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	if err := lw.Flush(); err != nil {
		return fmt.Errorf("write logs: %w", err)
	}
	return nil
}
