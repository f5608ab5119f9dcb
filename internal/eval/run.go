package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/robust"
	"github.com/vigil-obs/vigil/internal/server"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
)

// DiagnoseFunc diagnoses src at at, reading no sample after at: the real
// engine's (*diagnose.Engine).Diagnose, or a fake in tests.
type DiagnoseFunc func(ctx context.Context, src diagnose.Source, at time.Time) (*diagnose.Report, error)

// Options configure Run.
type Options struct {
	// Diagnose is the engine under evaluation (required).
	Diagnose DiagnoseFunc
	// Generic diagnoses the microservice (metric_anomaly) cases: the engine
	// with --entity-label service (required for those cases).
	Generic DiagnoseFunc
	// Parallel is how many cases run at once (default 1).
	Parallel int
	// Progress gets one line per finished case (nil: none).
	Progress io.Writer
	// TempDir holds the cases' stores while they run (default os.TempDir).
	TempDir string
	// Step is the time-to-detect grid after each onset (default 30s, the
	// DCGM interval); Horizon is how long after the onset to look (default
	// 10m).
	Step, Horizon time.Duration
}

// Defaults of Options.
const (
	DefaultStep    = 30 * time.Second
	DefaultHorizon = 10 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	if o.Step <= 0 {
		o.Step = DefaultStep
	}
	if o.Horizon <= 0 {
		o.Horizon = DefaultHorizon
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// Run simulates, diagnoses and scores every case, up to opts.Parallel at a
// time, and aggregates the scores per suite. It stops at the first error
// (a scenario that does not simulate, a store that does not open, an
// engine error) and returns it.
func Run(ctx context.Context, cases []Case, opts Options) (*Result, error) {
	if opts.Diagnose == nil {
		return nil, errors.New("eval: no diagnose function")
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	results := make([]CaseResult, len(cases))
	next := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	for range min(opts.Parallel, len(cases)) {
		wg.Go(func() {
			for i := range next {
				began := time.Now()
				r, err := runCase(ctx, cases[i], opts)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("%s %s seed %d: %w", cases[i].Suite, cases[i].Scenario, cases[i].Seed, err)
					}
					cancel()
				} else {
					results[i] = *r
					done++
					fmt.Fprintf(opts.Progress, "eval: %d/%d %s %s seed %d: %s (%.1fs)\n", done, len(cases),
						cases[i].Suite, cases[i].Scenario, cases[i].Seed, r.outcome(), time.Since(began).Seconds())
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range cases {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newResult(results, opts.Horizon), nil
}

// runCase simulates one case into a fresh store, diagnoses it and judges
// the reports.
func runCase(ctx context.Context, c Case, opts Options) (_ *CaseResult, err error) {
	cfg := c.Config
	cfg.Seed = c.Seed
	var gen generator
	switch {
	case robust.IsScenario(c.Scenario):
		g, rcfg, err := newRobustGenerator(c, cfg)
		if err != nil {
			return nil, err
		}
		gen, cfg = g, rcfg
	case microsvc.IsScenario(c.Scenario):
		if opts.Generic == nil {
			return nil, errors.New("no generic diagnose function for a microservice scenario")
		}
		spec, err := microsvc.ParseScenario(c.Scenario)
		if err != nil {
			return nil, err
		}
		g, err := microsvc.New(microsvc.Config{Seed: c.Seed, Duration: cfg.Duration, FaultScale: cfg.FaultScale, NoiseScale: cfg.NoiseScale,
			Graph: c.RequestPath, Uninstrumented: c.Uninstrumented}, spec)
		if err != nil {
			return nil, err
		}
		gen, cfg.Start = microGenerator{g}, g.Config().Start
		cfg.Duration = g.Config().Duration
		opts.Diagnose = opts.Generic
	default:
		sc, err := sim.ParseScenario(c.Scenario)
		if err != nil {
			return nil, err
		}
		s, err := sim.New(cfg, sc)
		if err != nil {
			return nil, err
		}
		gen, cfg = s, s.Config()
		if needsRequestPath(c, s.Truth()) {
			gen = requestPathRun{s: s}
		}
	}
	dir, err := os.MkdirTemp(opts.TempDir, "vigil-eval-*")
	if err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove store directory: %w", rerr))
		}
	}()
	// The case runs through serve's pipeline, headless, on the
	// simulated clock: the metrics into its store, the logs and traces as
	// the OTLP receiver hands them on.
	clock := sim.NewClock(cfg.Start)
	pcfg := server.SimulatedConfig(dir)
	pcfg.Storage.OutOfOrderWindow = 0
	pcfg.Storage.MaxExemplars = 0
	pcfg.Evaluation.Enabled = false // the harness diagnoses itself
	srv := server.New(server.Options{Config: pcfg, Now: clock.Now, Headless: true})
	if err := srv.Start(ctx, server.Host); err != nil {
		return nil, fmt.Errorf("start the pipeline: %w", err)
	}
	defer func() {
		if cerr := srv.Shutdown(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, fmt.Errorf("stop the pipeline: %w", cerr))
		}
	}()
	st := srv.Store()
	if rp, ok := gen.(requestPathRun); ok {
		rp.traces = srv.Traces()
		gen = rp
	}
	ropts := runOptions(gen, srv.Logs(), clock)
	if err := gen.Run(ctx, st, ropts); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	end := clock.Now()
	truth := gen.Truth()
	rep, err := opts.Diagnose(ctx, st, end)
	if err != nil {
		return nil, fmt.Errorf("diagnose at %s: %w", end.Format(time.RFC3339), err)
	}
	r := judge(c, cfg, truth, rep)
	for i := range r.Faults {
		ttd, err := timeToDetect(ctx, st, truth, i, end, opts)
		if err != nil {
			return nil, err
		}
		r.Faults[i].TTD = ttd
	}
	return r, nil
}

// generator is a simulator the harness runs: the GPU cluster's or the
// microservice application's.
type generator interface {
	Run(ctx context.Context, app storage.AppendableV2, opts sim.RunOptions) error
	Truth() []sim.Fault
}

// microGenerator runs the microservice generator like the cluster's.
type microGenerator struct{ g *microsvc.Generator }

func (m microGenerator) Run(ctx context.Context, app storage.AppendableV2, opts sim.RunOptions) error {
	return m.g.Run(ctx, app, microsvc.RunOptions{OnScrape: func(_ context.Context, at time.Time) error {
		if opts.Clock != nil {
			opts.Clock.Set(at)
		}
		return nil
	}})
}

func (m microGenerator) Truth() []sim.Fault { return m.g.Truth() }

// timeToDetect diagnoses src every opts.Step from truth[i]'s onset up to
// opts.Horizon after it (and not after end) and returns the time from the
// onset to the first report that ranks truth[i] first; nil when none does.
func timeToDetect(ctx context.Context, src diagnose.Source, truth []sim.Fault, i int, end time.Time, opts Options) (*Seconds, error) {
	onset := truth[i].Onset
	for d := time.Duration(0); d <= opts.Horizon; d += opts.Step {
		at := onset.Add(d)
		if at.After(end) {
			break
		}
		rep, err := opts.Diagnose(ctx, src, at)
		if err != nil {
			return nil, fmt.Errorf("diagnose at %s: %w", at.Format(time.RFC3339), err)
		}
		if bestRank(truth, i, rep) == 1 {
			s := Seconds(d.Seconds())
			return &s, nil
		}
	}
	return nil, nil
}

// outcome is the progress line's summary of a case.
func (r *CaseResult) outcome() string {
	if len(r.Faults) == 0 {
		if r.Healthy {
			return "healthy"
		}
		return "FALSE ALARM"
	}
	parts := make([]string, 0, len(r.Faults))
	for _, f := range r.Faults {
		s := f.Kind + " "
		if f.Rank > 0 {
			s += fmt.Sprintf("rank %d", f.Rank)
		} else {
			s += "not named"
		}
		if f.TTD != nil {
			s += fmt.Sprintf(", first after %s", f.TTD.Duration())
		} else {
			s += ", not first within the horizon"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
