package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Simulator runs one scenario on one simulated cluster. Every run of a
// Simulator gives the same samples: it holds no state between runs.
type Simulator struct {
	cfg    Config
	sc     Scenario
	truth  []Fault
	decoys []Decoy
}

// New checks the config (resolved: see Config.Resolve) and the scenario
// and returns their simulator. Errors wrap ErrInvalidConfig or
// ErrUnknownScenario.
func New(cfg Config, sc Scenario) (*Simulator, error) {
	cfg = cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w, err := newWorld(cfg, sc)
	if err != nil {
		return nil, err
	}
	s := &Simulator{cfg: cfg, sc: sc}
	for _, f := range w.faults {
		s.truth = append(s.truth, f.truth)
	}
	for _, d := range w.decoys {
		s.decoys = append(s.decoys, d.Decoy)
	}
	return s, nil
}

// Config returns the resolved config.
func (s *Simulator) Config() Config { return s.cfg }

// Scenario returns the scenario.
func (s *Simulator) Scenario() Scenario { return s.sc }

// Truth returns the injected faults, in the scenario's order; empty for a
// healthy run.
func (s *Simulator) Truth() []Fault {
	out := make([]Fault, len(s.truth))
	for i, f := range s.truth {
		out[i] = f
		out[i].Entity = cloneMap(f.Entity)
	}
	return out
}

// Decoys returns the run's benign events.
func (s *Simulator) Decoys() []Decoy {
	out := make([]Decoy, len(s.decoys))
	for i, d := range s.decoys {
		out[i] = d
		out[i].Entity = cloneMap(d.Entity)
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Scrape is one simulated scrape round: every target due at At was scraped.
type Scrape struct {
	// At is the simulated time of the round.
	At time.Time
	// Index counts rounds from 0; Rounds is how many the run has.
	Index, Rounds int
	// Targets and Samples count what the round scraped.
	Targets, Samples int
}

// RunOptions set how Run drives the simulation.
type RunOptions struct {
	// Clock, if set, is moved to each round's time before its samples are
	// appended: give its Now to the store and the engine so that they see
	// simulated time.
	Clock *Clock
	// OnScrape, if set, is called after each round is committed; an error
	// stops the run. It may block to pace the run.
	OnScrape func(ctx context.Context, sc Scrape) error
	// OnLogs, if set, gets the logs of each round's interval (see Logs)
	// after the round is committed and before OnScrape; it is not called
	// for an interval that logged nothing. An error stops the run. The
	// batch is the callee's.
	OnLogs func(ctx context.Context, ld plog.Logs) error
}

// Clock is simulated time, safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock set to t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Run simulates the whole run as fast as the appender takes it: each
// scrape round is appended to app in one commit, in time order, then
// OnScrape is called. The samples are those WriteOpenMetrics writes.
func (s *Simulator) Run(ctx context.Context, app storage.AppendableV2, opts RunOptions) error {
	w, err := newWorld(s.cfg, s.sc)
	if err != nil {
		return err
	}
	var lw *logWriter
	if opts.OnLogs != nil {
		lw = newLogWriter(w)
	}
	for w.step() {
		if err := ctx.Err(); err != nil {
			return err
		}
		at := time.UnixMilli(w.out.t).UTC()
		if opts.Clock != nil {
			opts.Clock.Set(at)
		}
		if err := appendRound(ctx, app, &w.out); err != nil {
			return fmt.Errorf("append scrape at %s: %w", at.Format(time.RFC3339), err)
		}
		if lw != nil {
			if ld := lw.round(at); ld.LogRecordCount() > 0 {
				if err := opts.OnLogs(ctx, ld); err != nil {
					return fmt.Errorf("logs at %s: %w", at.Format(time.RFC3339), err)
				}
			}
		}
		if opts.OnScrape != nil {
			sc := Scrape{At: at, Index: w.k - 1, Rounds: w.ticks + 1, Targets: w.out.targets, Samples: len(w.out.samples)}
			if err := opts.OnScrape(ctx, sc); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendRound(ctx context.Context, app storage.AppendableV2, o *scrapeOut) error {
	a := app.AppenderV2(ctx)
	for _, p := range o.samples {
		ref, err := a.Append(p.s.ref, p.s.lset, 0, o.t, p.v, nil, nil, storage.AOptions{MetricFamilyName: p.s.fam.name})
		if err != nil {
			return errors.Join(fmt.Errorf("%s: %w", p.s.text, err), a.Rollback())
		}
		p.s.ref = ref
	}
	return a.Commit()
}

// WriteOpenMetrics simulates the whole run and writes its samples to out as
// OpenMetrics text (what promtool tsdb create-blocks-from openmetrics and
// `vigil import` read). The same Simulator writes the same bytes.
func (s *Simulator) WriteOpenMetrics(ctx context.Context, out io.Writer) error {
	w, err := newWorld(s.cfg, s.sc)
	if err != nil {
		return err
	}
	n := 0
	for w.step() {
		if n++; n%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for _, p := range w.out.samples {
			p.s.samples = append(p.s.samples, sample{t: w.out.t, v: p.v})
		}
	}
	return writeOpenMetrics(out, w.reg)
}
