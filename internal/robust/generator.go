package robust

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/openmetrics"
)

// Generator makes one run's telemetry: a cluster drawn from the seed, its
// healthy variation, and the scenario's fault.
type Generator struct {
	cfg   Config
	sc    Scenario
	truth []Fault
}

// New prepares a run of a scenario. Zero fields of cfg are drawn from its
// seed.
func New(cfg Config, sc Scenario) (*Generator, error) {
	cfg = cfg.resolve()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("robust config: %w", err)
	}
	if sc.Kind == "" {
		sc = Scenario{Scale: 1}
	}
	w, err := newWorld(cfg, sc, false)
	if err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, sc: sc}
	for _, f := range w.faults {
		g.truth = append(g.truth, f.truth)
	}
	return g, nil
}

// Config returns the resolved config: what was drawn filled in.
func (g *Generator) Config() Config { return g.cfg }

// Scenario returns the run's scenario.
func (g *Generator) Scenario() Scenario { return g.sc }

// Truth returns the injected faults; none for a healthy run.
func (g *Generator) Truth() []Fault {
	out := make([]Fault, len(g.truth))
	copy(out, g.truth)
	return out
}

// RunOptions are the hooks of Run.
type RunOptions struct {
	// BeforeRound, if set, gets each round's time (its latest sample)
	// before the round is appended: move a clock there.
	BeforeRound func(at time.Time)
	// AfterRound, if set, is called after each round is committed; an
	// error stops the run.
	AfterRound func(ctx context.Context, at time.Time) error
}

// Run generates the whole run into app as fast as it takes it: every
// scrape of one 5-second tick in one commit, in time order, staleness
// markers included where Prometheus writes them.
func (g *Generator) Run(ctx context.Context, app storage.AppendableV2, opts RunOptions) error {
	w, err := newWorld(g.cfg, g.sc, false)
	if err != nil {
		return err
	}
	for w.step() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(w.round) == 0 {
			continue
		}
		at := roundTime(w.round)
		if opts.BeforeRound != nil {
			opts.BeforeRound(at)
		}
		if err := appendRound(ctx, app, w.round); err != nil {
			return fmt.Errorf("append the scrapes of %s: %w", at.Format(time.RFC3339), err)
		}
		if opts.AfterRound != nil {
			if err := opts.AfterRound(ctx, at); err != nil {
				return err
			}
		}
	}
	return nil
}

func roundTime(pts []point) time.Time {
	var t int64
	for _, p := range pts {
		t = max(t, p.t)
	}
	return time.UnixMilli(t).UTC()
}

func appendRound(ctx context.Context, app storage.AppendableV2, pts []point) error {
	a := app.AppenderV2(ctx)
	for _, p := range pts {
		ref, err := a.Append(p.s.ref, p.s.lset, 0, p.t, p.v, nil, nil, storage.AOptions{MetricFamilyName: p.s.fam.name})
		if err != nil {
			return errors.Join(fmt.Errorf("%s: %w", p.s.text, err), a.Rollback())
		}
		p.s.ref = ref
	}
	return a.Commit()
}

// WriteText generates the whole run and writes it as Prometheus text
// exposition with millisecond timestamps (what `vigil diagnose --input`
// and `vigil import` read), one block per family with the exporters' own
// # HELP and # TYPE lines. Staleness markers have no spelling there and
// are left out. The same Generator writes the same bytes.
func (g *Generator) WriteText(ctx context.Context, out io.Writer) error {
	w, err := newWorld(g.cfg, g.sc, true)
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
		for _, p := range w.round {
			if math.Float64bits(p.v) == value.StaleNaN {
				continue
			}
			p.s.samples = append(p.s.samples, sample{t: p.t, v: p.v})
		}
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	var buf []byte
	for _, f := range w.reg.sortedFamilies() {
		buf = append(buf[:0], "# HELP "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, f.help...)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, f.typ...)
		buf = append(buf, '\n')
		for _, s := range f.series {
			for _, p := range s.samples {
				buf = append(buf, s.text...)
				buf = append(buf, ' ')
				buf = openmetrics.AppendValue(buf, p.v)
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, p.t, 10)
				buf = append(buf, '\n')
			}
			if len(buf) > 1<<16 {
				if _, err := bw.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		buf = buf[:0]
	}
	return bw.Flush()
}
