package eval

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/robust"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
)

// Case is one simulated run to diagnose: a scenario, a seed and the
// simulator config (zero fields take the simulator's defaults; its Seed is
// replaced by the case's).
type Case struct {
	// Suite names the table the case is scored in (main, subtle, ...).
	Suite string
	// Scenario is a name sim.ParseScenario reads.
	Scenario string
	// Seed is the simulator's seed.
	Seed uint64
	// Config overrides the simulator's defaults (the unseen suite sets its
	// FaultScale and NoiseScale).
	Config sim.Config
	// RequestPath feeds the run's request path (traces, as span metrics and
	// the service graph) into its store too; runs of a fault only the
	// request path shows get it anyway. A microservice run then emits its
	// service graph.
	RequestPath bool
	// Uninstrumented leaves out a microservice run's request metrics of its
	// databases and broker (microsvc.Config.Uninstrumented).
	Uninstrumented bool
}

// microsvcAvailability is the microservice availability scenario: the
// graph suite's (a failure shows as much in the callers as in the faulty
// service; without the service graph nothing tells them apart).
const microsvcAvailability = microsvc.KindMetricAnomaly + "/" + microsvc.FaultAvailability

// ErrUnknownSuite is wrapped by Suite's error for a name Suites does not
// list.
var ErrUnknownSuite = errors.New("unknown suite")

// Suite names (see Suites).
const (
	SuiteSmall  = "small"
	SuiteMain   = "main"
	SuiteSubtle = "subtle"
	SuiteUnseen = "unseen"
	SuiteLater  = "later"
	// SuiteGeneric runs the microservice scenarios (metric_anomaly)
	// through the generic layer (--entity-label service).
	SuiteGeneric = "generic"
	// SuiteGraph runs microservice scenarios whose faults show most in
	// the callers of the faulty service (availability faults, and every
	// fault of a database or broker that exports no request metrics of
	// its own) through the generic layer twice: with the service graph,
	// which the layer walks (table "graph"), and without it (table
	// SuiteGraphNoWalk).
	SuiteGraph       = "graph"
	SuiteGraphNoWalk = "graph-nowalk"
	// SuiteRobust runs internal/robust's generator, written apart from
	// the simulator the engine was tuned on: its healthy variation and
	// its faults at half and at double size, with dcgm-exporter's default
	// fields only.
	SuiteRobust = "robust"
	SuiteAll    = "all"
)

// DefaultSeeds is the number of seeds per scenario when none is given.
const DefaultSeeds = 3

// UnseenSeed is the first seed of the unseen suite: seeds from it on are
// never used in development.
const UnseenSeed = 1_000_000

// laterKinds are the kinds a later issue diagnoses (the request path):
// suite later reports them, no other suite runs them.
var laterKinds = []string{"dependency_slow", "tenant_failure"}

// requestPathPlatform are the faults the request path shows besides the
// metrics: the later suite runs them with their request path, so that a
// slow model server or failing requests are put down to the platform's
// cause, not to a dependency or a tenant.
var requestPathPlatform = []string{"bad_rollout", "inference_capacity_saturated", "kv_cache_exhausted"}

// Suites lists the suite names, in the order `vigil eval --help` gives
// (Suite also knows SuiteGraph, which the help does not list yet).
func Suites() []string {
	return []string{SuiteSmall, SuiteMain, SuiteSubtle, SuiteUnseen, SuiteLater, SuiteGeneric, SuiteGraph, SuiteRobust, SuiteAll}
}

// Suite returns the cases of a named suite with seeds seeds per scenario
// (0: DefaultSeeds; the small suite always has one):
//
//   - small: every in-scope scenario that is not subtle, one seed, and
//     healthy with three, 30 minutes each, and the robust suite's first
//     robustSmallHealthy healthy runs and its faults on one seed, in a
//     table of their own (what CI runs);
//   - main: the same scenarios with seeds seeds, healthy with 3×seeds, an
//     hour each;
//   - subtle: the subtle variants of the in-scope kinds;
//   - unseen: main's scenarios on seeds from UnseenSeed, with fault and
//     noise sizes drawn from the seed in [0.5, 1.5];
//   - later: dependency_slow and tenant_failure, and with the request
//     path fed in too, healthy with 3×seeds and the request path's faults
//     that the metrics show (requestPathPlatform); reported but not
//     barred;
//   - generic: the microservice scenarios but availability, 4×seeds, 30
//     minutes each, through the generic layer;
//   - graph: the microservice scenarios with their databases and broker
//     uninstrumented, through the generic layer with the service graph
//     (table graph) and without it (table graph-nowalk);
//   - robust: internal/robust's runs on seeds from RobustSeed: 70×seeds
//     healthy ones, and every fault kind at half and at double size with
//     seeds seeds each, 30 to 60 minutes each (drawn per run);
//   - all: main, subtle, unseen, later, generic, graph and robust, each
//     its own table.
//
// In scope are the kinds of `vigil simulate --list` except the later ones
// and metric_anomaly.
func Suite(name string, seeds int) ([]Case, error) {
	if seeds < 0 {
		return nil, fmt.Errorf("seeds must not be negative, got %d", seeds)
	}
	if seeds == 0 {
		seeds = DefaultSeeds
	}
	plain, subtle := inScope()
	hour := sim.Config{Duration: time.Hour}
	switch name {
	case SuiteSmall:
		cfg := sim.Config{Duration: 30 * time.Minute}
		out := append(cases(SuiteSmall, []string{sim.Healthy}, seeds1(3), cfg), cases(SuiteSmall, plain, seeds1(1), cfg)...)
		return append(out, robustCases(robustSmallHealthy, 1)...), nil
	case SuiteMain:
		return append(cases(SuiteMain, []string{sim.Healthy}, seeds1(3*seeds), hour), cases(SuiteMain, plain, seeds1(seeds), hour)...), nil
	case SuiteSubtle:
		return append(cases(SuiteSubtle, subtle, seeds1(seeds), hour),
			cases(SuiteSubtle, []string{microsvc.KindMetricAnomaly + "/" + sim.Subtle}, seeds1(seeds), sim.Config{Duration: 30 * time.Minute})...), nil
	case SuiteUnseen:
		out := append(cases(SuiteUnseen, []string{sim.Healthy}, seedsFrom(UnseenSeed, 3*seeds), hour),
			cases(SuiteUnseen, plain, seedsFrom(UnseenSeed, seeds), hour)...)
		for i := range out {
			out[i].Config.FaultScale, out[i].Config.NoiseScale = drawScales(out[i].Scenario, out[i].Seed)
		}
		return out, nil
	case SuiteLater:
		out := cases(SuiteLater, laterKinds, seeds1(seeds), hour)
		// The request path of healthy runs and of the faults the metrics
		// show too: the request-path hypotheses must neither raise a false
		// alarm nor push the platform's cause down.
		withPath := append(cases(SuiteLater, []string{sim.Healthy}, seeds1(3*seeds), hour),
			cases(SuiteLater, requestPathPlatform, seeds1(seeds), hour)...)
		for i := range withPath {
			withPath[i].RequestPath = true
		}
		return append(out, withPath...), nil
	case SuiteGeneric:
		var plain []string
		for _, n := range microsvc.Scenarios() {
			if !strings.HasSuffix(n, "/"+sim.Subtle) && n != microsvcAvailability {
				plain = append(plain, n)
			}
		}
		return cases(SuiteGeneric, plain, seeds1(4*seeds), sim.Config{Duration: 30 * time.Minute}), nil
	case SuiteGraph:
		var plain []string
		for _, n := range microsvc.Scenarios() {
			if !strings.HasSuffix(n, "/"+sim.Subtle) {
				plain = append(plain, n)
			}
		}
		cfg := sim.Config{Duration: 30 * time.Minute}
		walk, nowalk := cases(SuiteGraph, plain, seeds1(4*seeds), cfg), cases(SuiteGraphNoWalk, plain, seeds1(4*seeds), cfg)
		for i := range walk {
			walk[i].RequestPath, walk[i].Uninstrumented = true, true
			nowalk[i].Uninstrumented = true
		}
		return append(walk, nowalk...), nil
	case SuiteRobust:
		return robustCases(robustHealthyPerSeed*seeds, seeds), nil
	case SuiteAll:
		var out []Case
		for _, s := range []string{SuiteMain, SuiteSubtle, SuiteUnseen, SuiteLater, SuiteGeneric, SuiteGraph, SuiteRobust} {
			c, err := Suite(s, seeds)
			if err != nil {
				return nil, err
			}
			out = append(out, c...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w %q (the suites are %s)", ErrUnknownSuite, name, strings.Join(Suites(), ", "))
}

// Scenarios returns the cases of the named scenarios, seeds seeds each
// (0: DefaultSeeds), in suite "custom" with cfg: an ad-hoc suite.
func Scenarios(names []string, seeds int, cfg sim.Config) ([]Case, error) {
	if seeds <= 0 {
		seeds = DefaultSeeds
	}
	for _, n := range names {
		if robust.IsScenario(n) {
			if _, err := robust.ParseScenario(n); err != nil {
				return nil, err
			}
			continue
		}
		if microsvc.IsScenario(n) {
			if _, err := microsvc.ParseScenario(n); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := sim.ParseScenario(n); err != nil {
			return nil, err
		}
	}
	return cases("custom", names, seeds1(seeds), cfg), nil
}

// inScope splits the scenarios this issue diagnoses into the plain ones
// (default and named variants, pairs) and the subtle ones.
func inScope() (plain, subtle []string) {
	for _, name := range sim.ScenarioNames() {
		sc, err := sim.ParseScenario(name)
		if err != nil || len(sc.Faults) == 0 || strings.Contains(name, "metric_anomaly") {
			continue
		}
		later, isSubtle := false, false
		for _, f := range sc.Faults {
			later = later || slices.Contains(laterKinds, f.Kind)
			isSubtle = isSubtle || f.Variant == sim.Subtle
		}
		switch {
		case later:
		case isSubtle:
			subtle = append(subtle, name)
		default:
			plain = append(plain, name)
		}
	}
	return plain, subtle
}

func cases(suite string, scenarios []string, seeds []uint64, cfg sim.Config) []Case {
	var out []Case
	for _, sc := range scenarios {
		for _, s := range seeds {
			out = append(out, Case{Suite: suite, Scenario: sc, Seed: s, Config: cfg})
		}
	}
	return out
}

func seeds1(n int) []uint64 { return seedsFrom(1, n) }

func seedsFrom(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// drawScales draws the unseen suite's fault and noise scales from the seed
// and the scenario (so that every case gets its own), each uniform in
// [0.5, 1.5).
func drawScales(scenario string, seed uint64) (fault, noise float64) {
	h := fnv.New64a()
	h.Write([]byte(scenario))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	return 0.5 + r.Float64(), 0.5 + r.Float64()
}
