package eval

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// RequestPathInterval is the span of one batch of the simulated request
// path that RequestPath feeds: the engine's step, so that every step has
// fresh span metrics.
const RequestPathInterval = 30 * time.Second

// RequestPath feeds a simulated run's request path (its OTLP traces) into
// a pipeline in simulated time, as the OTLP receiver of `vigil serve`
// hands its traces on (internal/server's Traces): call Advance after each
// scrape round. It is not safe for concurrent use.
type RequestPath struct {
	next    func() (reqpath.Batch, bool)
	stop    func()
	traces  TracesConsumer
	pending *reqpath.Batch
	done    bool
}

// TracesConsumer takes a batch of spans.
type TracesConsumer interface {
	ConsumeTraces(ctx context.Context, td ptrace.Traces) error
}

// NewRequestPath prepares the request path of s (sim.Simulator.RequestPath,
// in batches of RequestPathInterval) for traces. Close it when done.
func NewRequestPath(s *sim.Simulator, traces TracesConsumer) (*RequestPath, error) {
	cfg := s.RequestPath()
	cfg.Interval = RequestPathInterval
	g, err := reqpath.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("request path: %w", err)
	}
	next, stop := iter.Pull(g.Batches())
	return &RequestPath{next: next, stop: stop, traces: traces}, nil
}

// Advance consumes every batch of the request path that ended at or before
// at: the pipeline's clock should read at, so that the span metrics are
// written at the scrape round's time.
func (r *RequestPath) Advance(ctx context.Context, at time.Time) error {
	for !r.done {
		if r.pending == nil {
			b, ok := r.next()
			if !ok {
				r.done = true
				break
			}
			r.pending = &b
		}
		if r.pending.End.After(at) {
			break
		}
		if err := r.traces.ConsumeTraces(ctx, r.pending.Traces); err != nil {
			return fmt.Errorf("the spans of %s: %w", r.pending.End.Format(time.RFC3339), err)
		}
		r.pending = nil
	}
	return nil
}

// Close releases the batches' iterator.
func (r *RequestPath) Close() { r.stop() }

// requestPathOnly are the fault kinds only the request path shows: a run
// with one of them needs its traces to be diagnosed at all.
var requestPathOnly = []string{reqpath.KindDependencySlow, reqpath.KindTenantFailure}

// NeedsRequestPath tells whether a run's faults include one that only the
// request path shows (dependency_slow, tenant_failure): without its
// traces there is nothing to diagnose.
func NeedsRequestPath(truth []sim.Fault) bool {
	for _, f := range truth {
		if slices.Contains(requestPathOnly, f.Kind) {
			return true
		}
	}
	return false
}

// needsRequestPath tells whether a case's run is fed its request path: it
// asks for it, or one of its faults shows only there.
func needsRequestPath(c Case, truth []sim.Fault) bool {
	return c.RequestPath || NeedsRequestPath(truth)
}

// requestPathRun runs the cluster simulator with its request path fed in
// after each scrape round.
type requestPathRun struct {
	s      *sim.Simulator
	traces TracesConsumer
}

func (g requestPathRun) Run(ctx context.Context, app storage.AppendableV2, opts sim.RunOptions) error {
	rp, err := NewRequestPath(g.s, g.traces)
	if err != nil {
		return err
	}
	defer rp.Close()
	then := opts.OnScrape
	opts.OnScrape = func(ctx context.Context, sc sim.Scrape) error {
		if err := rp.Advance(ctx, sc.At); err != nil {
			return err
		}
		if then != nil {
			return then(ctx, sc)
		}
		return nil
	}
	return g.s.Run(ctx, app, opts)
}

func (g requestPathRun) Truth() []sim.Fault { return g.s.Truth() }
