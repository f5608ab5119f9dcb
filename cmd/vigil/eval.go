package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
)

// evalFlags are the flags of `vigil eval`.
type evalFlags struct {
	suite     string
	scenarios []string
	seeds     int
	parallel  int
	duration  time.Duration
	asJSON    bool
	check     bool
	data      string
}

func newEvalCmd(e *env) *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval [--suite NAME | --scenario NAME...] [--seeds N] [--parallel N] [--json] [--check]",
		Short: "Score the diagnosis engine on simulated faults",
		Long: `Run simulated scenarios through the diagnosis engine and score its answers
against the simulator's ground truth. Each run is simulated into a fresh
embedded store, diagnosed at its end, and, for time to detect, every 30 s
from each fault's onset up to 10 minutes after it.

A cause or finding names a fault when its kind is the fault's and its entity
agrees with the fault's: every canonical key both have (node, gpu, pod,
namespace, workload, model, service, ...) has the same value, and they share
a node, pod, workload, model or service. A node-level call of a GPU fault
names it; a call of another GPU of the node does not.

Scores, per fault kind and overall (a run of two faults counts two):

  AC@1, AC@3   the fraction of faults named at rank 1 / at a rank ≤ 3, among
               the causes or among the findings (a run's other faults ranked
               before a fault do not push it down)
  P, R, F1     precision, recall and F1 of the faulty-entity call: the engine
               calls the entity of its rank-1 cause and of its rank-1
               finding when their confidence is ≥ 0.5; a call that names a
               fault's entity (kind ignored) is right, any other call is a
               false positive (healthy runs included), a fault no call names
               is a false negative
  TTD          median and worst time from the onset to the first diagnosis
               that ranks the fault first; a fault never ranked first within
               10 minutes counts as later than any, and is counted apart
  false alarms healthy runs whose diagnosis is not healthy; also how many had
               a cause or finding at 0.5 or above
  calibration  every cause and finding of every end-of-run diagnosis, binned
               by confidence: count, mean confidence and the fraction that
               name a fault of their run; ECE = Σ n_b/N·|accuracy_b −
               confidence_b|

Suites:

  small    every fault scenario that is not subtle (named variants and pairs
           included), one seed, and healthy with three; 30 minutes each; and
           the robust suite's first 20 healthy runs and its faults on one
           seed, as a robust table (CI)
  main     the same scenarios with --seeds seeds, healthy with 3×seeds; an hour
  subtle   the subtle variants, effects within 3× the healthy spread
  unseen   main's scenarios on seeds from 1000000, never used in development,
           with fault sizes and noise scaled by factors drawn in [0.5, 1.5]
  later    dependency_slow, tenant_failure and model_drift: reported, not
           barred
  robust   runs of an independent generator (not the simulator the engine
           was tuned on) with dcgm-exporter's default fields only, seeds
           from 2000000: 70×--seeds healthy runs with their own healthy
           variation, and every fault kind at half and at double size,
           --seeds each; 30 to 60 minutes, drawn per run. Its bars: no false
           alarm, AC@1 ≥ 0.95, AC@3 ≥ 0.97, no time-to-detect bar
  all      main, subtle, unseen, later, generic, graph and robust, each its
           own table
  nezha    with --data DIR: the real incidents of the Nezha data set's days
           (Online Boutique, Train Ticket), each fault diagnosed as
           vigil diagnose --input would (--entity-label service), five
           minutes after its injection, with a window from five minutes past
           the previous one; AC@1 and AC@3 per day and fault type, next to a
           naive baseline; with the logs too where the day has them
  petshop  with --data DIR: Amazon's PetShop RCA data set's issues (12 h of
           the normal period, the issue window, the call graph as service
           graph series), top-1 and top-3 per scenario and split, next to
           a naive baseline and the published traversal baseline

--scenario NAME (repeatable) runs the named scenarios instead, --seeds seeds
each. The bars (--check exits 1 when one is missed): AC@1 ≥ 0.90, AC@3 ≥
0.97, no false alarm, GPU hardware faults ranked first at median ≤ 90 s and
worst ≤ 120 s after the onset, the unseen suite within 0.05 of the main one;
robust has its own (above); subtle and later are not barred. Progress goes to stderr.`,
		Example: `  vigil eval
  vigil eval --suite main --parallel 2 --json
  vigil eval --scenario nvlink_degraded --scenario pcie_degraded --seeds 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEval(cmd, e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.suite, "suite", eval.SuiteSmall, "the suite: "+strings.Join(eval.Suites(), ", ")+"; or nezha or petshop with --data")
	fl.StringArrayVar(&f.scenarios, "scenario", nil, "run this scenario instead of a suite (repeatable; vigil simulate --list names them)")
	fl.IntVar(&f.seeds, "seeds", eval.DefaultSeeds, "seeds per scenario (the small suite has one)")
	fl.IntVar(&f.parallel, "parallel", 1, "how many runs at once")
	fl.DurationVar(&f.duration, "duration", 0, "how long each run lasts (default: the suite's)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	fl.BoolVar(&f.check, "check", false, "exit 1 when a bar is missed")
	fl.StringVar(&f.data, "data", "", "with --suite nezha: a Nezha day directory, or a directory of them; with --suite petshop: the PetShop data set's dataset directory")
	return cmd
}

func runEval(cmd *cobra.Command, e *env, f evalFlags) error {
	switch {
	case f.seeds < 1:
		return usagef("eval: --seeds must be at least 1, got %d", f.seeds)
	case f.parallel < 1:
		return usagef("eval: --parallel must be at least 1, got %d", f.parallel)
	case f.duration < 0:
		return usagef("eval: --duration must not be negative, got %s", f.duration)
	case len(f.scenarios) > 0 && cmd.Flags().Changed("suite"):
		return usagef("eval: --suite and --scenario exclude each other")
	case f.suite == suiteNezha && f.data == "":
		return usagef("eval: --suite nezha needs --data DIR (a Nezha day directory, or a directory of them)")
	case f.suite == suitePetShop && f.data == "":
		return usagef("eval: --suite petshop needs --data DIR (the PetShop data set's dataset directory, or one scenario's)")
	case !realSuite(f.suite) && f.data != "":
		return usagef("eval: --data goes with --suite nezha or petshop")
	case realSuite(f.suite) && f.check:
		return usagef("eval: the %s suite has no bars to --check", f.suite)
	}
	if realSuite(f.suite) {
		return runEvalReal(cmd.Context(), e, f)
	}
	cases, err := evalCases(f)
	if err != nil {
		return err
	}
	diag, generic := e.evalEngine, e.evalEngine
	if diag == nil {
		eng, err := diagnose.New(diagnose.Options{})
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		geng, err := diagnose.New(diagnose.Options{EntityLabel: microsvc.EntityLabel})
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		diag, generic = eng.Diagnose, geng.Diagnose
	}
	res, err := eval.Run(cmd.Context(), cases, eval.Options{Diagnose: diag, Generic: generic, Parallel: f.parallel, Progress: e.stderr})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if f.asJSON {
		err = json.NewEncoder(e.stdout).Encode(res)
	} else {
		err = res.WriteText(e.stdout)
	}
	if err != nil {
		return err
	}
	if f.check {
		if missed := res.Check(eval.DefaultBars()); len(missed) > 0 {
			return fmt.Errorf("eval: %d bar(s) missed: %s", len(missed), strings.Join(missed, "; "))
		}
	}
	return nil
}

// evalCases are the cases the flags ask for.
func evalCases(f evalFlags) ([]eval.Case, error) {
	var (
		cases []eval.Case
		err   error
	)
	if len(f.scenarios) > 0 {
		cases, err = eval.Scenarios(f.scenarios, f.seeds, sim.Config{Duration: sim.DefaultDuration})
		if err != nil {
			return nil, usagef("eval: %v (vigil simulate --list names the scenarios)", err)
		}
	} else {
		cases, err = eval.Suite(f.suite, f.seeds)
		if err != nil {
			return nil, usagef("eval: %v", err)
		}
	}
	if f.duration > 0 {
		if err := (sim.Config{Duration: f.duration}).Resolve().Validate(); err != nil {
			return nil, usagef("eval: --duration: %v", err)
		}
		for i := range cases {
			cases[i].Config.Duration = f.duration
		}
	}
	return cases, nil
}
