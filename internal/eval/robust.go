package eval

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/robust"
	"github.com/vigil-obs/vigil/internal/sim"
)

// RobustSeed is the first seed of the robust suite; no other suite uses
// seeds from it on.
const RobustSeed = 2_000_000

// robustHealthyPerSeed is how many healthy runs the robust suite has per
// seed: at the default seeds, more than 200.
const robustHealthyPerSeed = 70

// robustSmallHealthy is how many healthy robust runs the small suite has.
const robustSmallHealthy = 20

// robustCases are the robust suite's cases: healthy runs, then every fault
// kind at half and double size, seeds each. The generator draws each run's
// length (30 to 60 minutes) and cluster from its seed.
func robustCases(healthy, seeds int) []Case {
	out := cases(SuiteRobust, []string{robust.HealthyScenario}, seedsFrom(RobustSeed, healthy), sim.Config{})
	var faults []string
	for _, n := range robust.Scenarios() {
		if n != robust.HealthyScenario {
			faults = append(faults, n)
		}
	}
	return append(out, cases(SuiteRobust, faults, seedsFrom(RobustSeed, seeds), sim.Config{})...)
}

// robustGenerator runs internal/robust's generator like the cluster
// simulator.
type robustGenerator struct{ g *robust.Generator }

// newRobustGenerator prepares a robust case's run; cfg's Duration and
// Nodes, if set, override the drawn ones. It returns the config the judge
// reports.
func newRobustGenerator(c Case, cfg sim.Config) (robustGenerator, sim.Config, error) {
	sc, err := robust.ParseScenario(c.Scenario)
	if err != nil {
		return robustGenerator{}, cfg, err
	}
	g, err := robust.New(robust.Config{Seed: c.Seed, Duration: cfg.Duration, Nodes: cfg.Nodes}, sc)
	if err != nil {
		return robustGenerator{}, cfg, err
	}
	rc := g.Config()
	cfg.Start, cfg.Duration, cfg.Nodes = rc.Start, rc.Duration, rc.Nodes
	cfg.FaultScale, cfg.NoiseScale = sc.Scale, 1
	return robustGenerator{g}, cfg, nil
}

func (r robustGenerator) Run(ctx context.Context, app storage.AppendableV2, opts sim.RunOptions) error {
	var ro robust.RunOptions
	if opts.Clock != nil {
		ro.BeforeRound = opts.Clock.Set
	}
	if opts.OnScrape != nil {
		return fmt.Errorf("the robust generator has no scrape hook")
	}
	return r.g.Run(ctx, app, ro)
}

// Truth returns the generator's faults as the judge reads them.
func (r robustGenerator) Truth() []sim.Fault {
	var out []sim.Fault
	for _, f := range r.g.Truth() {
		// Severity is in (0, 1]: double size is 1.
		out = append(out, sim.Fault{Kind: f.Kind, Variant: f.Size, Entity: f.Entity, Onset: f.Onset, Severity: min(1, f.Scale/2),
			Summary: f.Summary})
	}
	return out
}
