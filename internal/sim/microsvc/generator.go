package microsvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/prometheus/prometheus/storage"
)

// Generator simulates one application with at most one fault. Every run
// of a Generator gives the same samples: it holds no state between runs.
type Generator struct {
	cfg    Config
	g      *graph
	fault  *fault
	dec    decoyPlan
	pods   []pod
	truth  []Fault
	decoys []Decoy
}

// New checks the config (resolved: see Config.Resolve) and the fault and
// returns their generator. Errors wrap ErrInvalidConfig or
// ErrInvalidFault.
func New(cfg Config, f FaultSpec) (*Generator, error) {
	cfg = cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g, err := newGraph(lookupApp(cfg.App))
	if err != nil {
		return nil, err
	}
	gen := &Generator{cfg: cfg, g: g, dec: newDecoys(cfg, g), pods: newPods(cfg, g)}
	if gen.fault, err = newFault(cfg, g, gen.dec, f); err != nil {
		return nil, err
	}
	if gen.fault != nil {
		gen.truth = []Fault{gen.fault.truth}
	}
	gen.decoys = gen.dec.list(cfg, g)
	return gen, nil
}

// Config returns the resolved config.
func (g *Generator) Config() Config { return g.cfg }

// Truth returns the injected fault; empty for a healthy run.
func (g *Generator) Truth() []Fault {
	out := make([]Fault, len(g.truth))
	for i, f := range g.truth {
		out[i] = f
		out[i].Entity = maps.Clone(f.Entity)
	}
	return out
}

// Decoys returns the run's benign events.
func (g *Generator) Decoys() []Decoy {
	out := make([]Decoy, len(g.decoys))
	for i, d := range g.decoys {
		out[i] = d
		out[i].Entity = maps.Clone(d.Entity)
	}
	return out
}

// Services returns the application's services, the entry first.
func (g *Generator) Services() []string {
	out := make([]string, len(g.g.app.services))
	for i, s := range g.g.app.services {
		out[i] = s.name
	}
	return out
}

// Edges returns the application's call graph as caller → callees, the
// calls of a queue's consumer included.
func (g *Generator) Edges() map[string][]string {
	out := map[string][]string{}
	for _, e := range g.g.app.edges {
		out[e.from] = append(out[e.from], e.to)
	}
	return out
}

// RunOptions set how Run drives the simulation.
type RunOptions struct {
	// OnScrape, if set, is called after each round is committed with the
	// round's time; an error stops the run. It may block to pace the run.
	OnScrape func(ctx context.Context, at time.Time) error
}

// rounds runs the model and calls round after each scrape round with its
// time and the sink holding its samples.
func (g *Generator) rounds(ctx context.Context, round func(at time.Time, s *sink) error) error {
	w := newWorld(g.cfg, g.g, g.fault, g.dec)
	s := &sink{}
	var e emitter
	if g.cfg.Style == StyleRCAEval {
		e = newRCAEmitter(g.cfg, g.g, s)
	} else {
		e = newPromEmitter(g.cfg, g.g, g.pods, s)
	}
	var ge *graphEmitter
	if g.cfg.Graph {
		ge = newGraphEmitter(g.g, s)
	}
	for w.step() {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.begin()
		e.emit(w, s)
		if ge != nil {
			ge.emit(w, s)
		}
		if err := round(w.at(w.k-1), s); err != nil {
			return err
		}
	}
	return nil
}

// Run simulates the whole run as fast as the appender takes it: each
// scrape round is appended to app in one commit, in time order, then
// OnScrape is called. The samples are those WriteOpenMetrics writes.
func (g *Generator) Run(ctx context.Context, app storage.AppendableV2, opts RunOptions) error {
	return g.rounds(ctx, func(at time.Time, s *sink) error {
		if err := appendRound(ctx, app, at.UnixMilli(), s); err != nil {
			return fmt.Errorf("append scrape at %s: %w", at.Format(time.RFC3339), err)
		}
		if opts.OnScrape != nil {
			return opts.OnScrape(ctx, at)
		}
		return nil
	})
}

func appendRound(ctx context.Context, app storage.AppendableV2, t int64, s *sink) error {
	a := app.AppenderV2(ctx)
	for i, ser := range s.series {
		ref, err := a.Append(ser.ref, ser.lset, 0, t, s.vals[i], nil, nil, storage.AOptions{MetricFamilyName: ser.fam.name})
		if err != nil {
			return errors.Join(fmt.Errorf("%s: %w", ser.text, err), a.Rollback())
		}
		ser.ref = ref
	}
	return a.Commit()
}

// WriteOpenMetrics simulates the whole run and writes its samples to w as
// OpenMetrics text (what promtool tsdb create-blocks-from openmetrics and
// `vigil import` read). The same Generator writes the same bytes.
func (g *Generator) WriteOpenMetrics(ctx context.Context, w io.Writer) error {
	rounds := int(g.cfg.Duration/g.cfg.Step) + 1
	var s *sink
	err := g.rounds(ctx, func(_ time.Time, rs *sink) error {
		s = rs
		for i, ser := range rs.series {
			if ser.vals == nil {
				ser.vals = make([]float64, 0, rounds)
			}
			ser.vals = append(ser.vals, rs.vals[i])
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeOpenMetrics(w, s.fams, g.cfg.Start.UnixMilli(), g.cfg.Step.Milliseconds())
}
