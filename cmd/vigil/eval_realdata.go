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
)

// suiteNezha is the real-data suite of `vigil eval --suite nezha --data DIR`.
const suiteNezha = "nezha"

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
	diag := func(ctx context.Context, input []byte, c nezha.Case) ([]string, error) {
		f, err := fileimport.Read("case", bytes.NewReader(input), fileimport.DefaultOptions(e.now()))
		if err != nil {
			return nil, err
		}
		files := []*fileimport.File{f}
		src, err := fileimport.OpenTemp(ctx, files, e.now, logger)
		if err != nil {
			return nil, err
		}
		step := max(diagnose.DefaultStep, src.Interval())
		eng, err := diagnose.New(diagnose.Options{Window: c.Window, Step: step, EntityLabel: nezha.EntityLabel, Logger: logger})
		if err != nil {
			return nil, errors.Join(err, src.Close())
		}
		rep, err := eng.Diagnose(ctx, src, c.At)
		if err = errors.Join(err, src.Close()); err != nil {
			return nil, err
		}
		var out []string
		for _, cause := range rep.Causes {
			if s := cause.Entity[nezha.EntityLabel]; s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	start := time.Now()
	res, notes, err := nezha.Run(ctx, dir, diag, e.stderr)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(nezhaReport{Results: res, Notes: notes})
	}
	fmt.Fprintf(e.stdout, "suite nezha: %d faults in %s (metrics, and metrics with log-template counts where the day has logs)\n", len(res), time.Since(start).Round(time.Second))
	for _, n := range notes {
		fmt.Fprintf(e.stdout, "note: %s\n", n)
	}
	return nezha.WriteTable(e.stdout, res)
}
