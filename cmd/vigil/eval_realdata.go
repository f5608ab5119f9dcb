package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/realdata/nezha"
	"github.com/vigil-obs/vigil/internal/realdata/petshop"
)

// The real-data suites of `vigil eval --suite NAME --data DIR`.
const (
	suiteNezha   = "nezha"
	suitePetShop = "petshop"
)

// realSuite tells whether a suite reads real data (--data).
func realSuite(name string) bool { return name == suiteNezha || name == suitePetShop }

// runEvalReal runs a real-data suite.
func runEvalReal(ctx context.Context, e *env, f evalFlags) error {
	if f.suite == suitePetShop {
		return runEvalPetShop(ctx, e, f.data, f.asJSON)
	}
	return runEvalNezha(ctx, e, f.data, f.asJSON)
}

// diagnoseText diagnoses OpenMetrics text as `vigil diagnose --input`
// does: at its own interval when that is coarser than the default step.
func diagnoseText(ctx context.Context, e *env, logger *slog.Logger, inputs []nezha.Input, at time.Time, window, step time.Duration, entityLabel string) (*diagnose.Report, error) {
	opts := fileimport.DefaultOptions(e.now())
	opts.DeriveFromOTLP = true // OTLP traces and logs, as diagnose --input reads them
	opts.Spans = fileimport.NewSpanIndex()
	files := make([]*fileimport.File, 0, len(inputs))
	for _, in := range inputs {
		f, err := fileimport.Read(in.Name, bytes.NewReader(in.Data), opts)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	src, err := fileimport.OpenTemp(ctx, files, e.now, logger)
	if err != nil {
		return nil, err
	}
	if step <= 0 {
		step = stepFor(src.Interval(), diagnose.DefaultStep, window)
	}
	eng, err := diagnose.New(diagnose.Options{Window: window, Step: step, EntityLabel: entityLabel, Logger: logger})
	if err != nil {
		return nil, errors.Join(err, src.Close())
	}
	rep, err := eng.Diagnose(ctx, src, at)
	return rep, errors.Join(err, src.Close())
}

// rankedBy returns the causes' values of label, best first, each once.
func rankedBy(rep *diagnose.Report, label string) []string {
	var out []string
	for _, c := range rep.Causes {
		if s := c.Entity[label]; s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// runEvalPetShop diagnoses every issue of the PetShop scenarios in dir and
// prints the recall next to the naive and the published baselines.
func runEvalPetShop(ctx context.Context, e *env, dir string, asJSON bool) error {
	logger := e.loggerAtLeast(slog.LevelWarn).With("component", "eval")
	diag := func(ctx context.Context, input []byte, at time.Time, window time.Duration) (petshop.Ranking, error) {
		rep, err := diagnoseText(ctx, e, logger, []nezha.Input{{Name: "case.om", Data: input}}, at, window, 0, petshop.EntityLabel)
		if err != nil {
			return petshop.Ranking{}, err
		}
		rk := petshop.Ranking{Services: rankedBy(rep, petshop.EntityLabel)}
		for _, c := range rep.Causes {
			if c.Rank == 1 {
				for _, ev := range c.Evidence {
					rk.Walked = rk.Walked || ev.Signal == petshop.GraphSignal
				}
			}
		}
		return rk, nil
	}
	res, err := petshop.Run(ctx, dir, diag, e.stderr)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(struct {
			Results []petshop.Result `json:"results"`
		}{res})
	}
	fmt.Fprintf(e.stdout, "suite petshop: %d issues\n", len(res))
	return petshop.WriteResults(e.stdout, res)
}

// nezhaReport is the JSON of the nezha suite.
type nezhaReport struct {
	Results []nezha.Result `json:"results"`
	Notes   []string       `json:"notes"`
}

// runEvalNezha diagnoses every fault of the Nezha days in dir the way
// `vigil diagnose --input CASE --entity-label service` would, and prints
// the scores next to the naive baseline's.
func runEvalNezha(ctx context.Context, e *env, dir string, asJSON bool) error {
	logger := e.loggerAtLeast(slog.LevelWarn).With("component", "eval")
	diag := func(ctx context.Context, inputs []nezha.Input, c nezha.Case) ([]string, error) {
		rep, err := diagnoseText(ctx, e, logger, inputs, c.At, c.Window, c.Step, nezha.EntityLabel)
		if err != nil {
			return nil, err
		}
		return rankedBy(rep, nezha.EntityLabel), nil
	}
	start := time.Now()
	res, notes, err := nezha.Run(ctx, dir, diag, e.stderr)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(nezhaReport{Results: res, Notes: notes})
	}
	fmt.Fprintf(e.stdout, "suite nezha: %d faults in %s (each modality alone and together: the pods' metrics, the logs' template counts, the traces' span metrics and service graph, and the calls' latencies where the day has them)\n", len(res), time.Since(start).Round(time.Second))
	for _, n := range notes {
		fmt.Fprintf(e.stdout, "note: %s\n", n)
	}
	return nezha.WriteTable(e.stdout, res)
}
