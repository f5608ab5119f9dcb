package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/sim"
)

// simulateFlags are the flags of `vigil simulate`.
type simulateFlags struct {
	list          bool
	scenario, out string
	seed          uint64
	duration      time.Duration
	start         string
	gpuModel      string
	nodes         int
	asJSON        bool
}

// simulateReport is what `vigil simulate --json` prints.
type simulateReport struct {
	Scenario string      `json:"scenario"`
	Seed     uint64      `json:"seed"`
	Start    time.Time   `json:"start"`
	End      time.Time   `json:"end"`
	Files    []string    `json:"files"`
	Faults   []sim.Fault `json:"faults"`
	Decoys   []sim.Decoy `json:"decoys"`
	Notes    []string    `json:"notes"`
}

// notSimulated says what the simulator does not write yet.
const notSimulated = "request-path traces and logs (traces.otlp.json, logs.otlp.json) are not simulated yet: only metrics"

func newSimulateCmd(e *env) *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate (--list | --scenario NAME [--seed N] [--duration D] [--start TIME] --out DIR)",
		Short: "Write a simulated GPU cluster's telemetry and its ground truth",
		Long: `Simulate a GPU cluster — an 8-node synchronous training job and a vLLM
deployment on 10 nodes of 8 GPUs by default — with dcgm-exporter,
kube-state-metrics, node-exporter and vLLM speaking their real vocabularies,
inject a scenario's faults, and write:

  DIR/metrics.om    OpenMetrics text (what vigil import and promtool read)
  DIR/truth.json    the injected faults: kind, entity, onset, severity
  DIR/decoys.json   the benign events every run holds

Scenarios are healthy, a cause kind (nvlink_degraded), a variant
(nvlink_degraded/subtle) or two faults at once (KIND+KIND); --list prints the
named ones. The same scenario, seed, duration and start give the same bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(cmd, e, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.list, "list", false, "print the scenario names, one per line")
	fl.StringVar(&f.scenario, "scenario", "", "the scenario to simulate")
	fl.Uint64Var(&f.seed, "seed", 1, "the random seed")
	fl.DurationVar(&f.duration, "duration", sim.DefaultDuration, "how long to simulate")
	fl.StringVar(&f.start, "start", sim.DefaultStart.Format(time.RFC3339), "the first simulated instant (RFC 3339 or Unix seconds)")
	fl.StringVar(&f.out, "out", "", "the directory to write into (created if missing)")
	fl.StringVar(&f.gpuModel, "gpu-model", sim.DefaultGPUModel, "the GPU model: A100, H100 or H200")
	fl.IntVar(&f.nodes, "nodes", sim.DefaultNodes, "the number of GPU nodes")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	return cmd
}

func runSimulate(cmd *cobra.Command, e *env, f simulateFlags) error {
	if f.list {
		if f.scenario != "" {
			return usagef("simulate: --list and --scenario exclude each other")
		}
		for _, n := range sim.ScenarioNames() {
			if _, err := fmt.Fprintln(e.stdout, n); err != nil {
				return err
			}
		}
		return nil
	}
	switch {
	case f.scenario == "":
		return usagef("simulate: --scenario NAME is required (vigil simulate --list names them)")
	case f.out == "":
		return usagef("simulate: --out DIR is required")
	}
	sc, err := sim.ParseScenario(f.scenario)
	if err != nil {
		return usagef("simulate: %v (vigil simulate --list names the scenarios)", err)
	}
	start, err := parseTime(f.start)
	if err != nil {
		return usagef("simulate: --start: %v", err)
	}
	cfg := sim.Config{Seed: f.seed, Start: start, Duration: f.duration, GPUModel: f.gpuModel, Nodes: f.nodes}
	if f.nodes < sim.DefaultTrainingNodes {
		cfg.TrainingNodes = max(1, f.nodes-1)
	}
	s, err := sim.New(cfg, sc)
	if err != nil {
		return usagef("simulate: %v", err)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	files := []string{filepath.Join(f.out, "metrics.om"), filepath.Join(f.out, "truth.json"), filepath.Join(f.out, "decoys.json")}
	err = writeAtomic(files[0], func(w io.Writer) error { return s.WriteOpenMetrics(cmd.Context(), w) })
	if err == nil {
		err = writeAtomic(files[1], func(w io.Writer) error { return writeJSON(w, s.Truth()) })
	}
	if err == nil {
		err = writeAtomic(files[2], func(w io.Writer) error { return writeJSON(w, s.Decoys()) })
	}
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	fmt.Fprintf(e.stderr, "vigil: note: %s\n", notSimulated)
	c := s.Config()
	rep := simulateReport{Scenario: sc.Name, Seed: c.Seed, Start: c.Start, End: c.Start.Add(c.Duration),
		Files: files, Faults: s.Truth(), Decoys: s.Decoys(), Notes: []string{notSimulated}}
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	_, err = fmt.Fprintf(e.stdout, "simulated %s (seed %d) from %s to %s: %d fault(s); wrote %s, %s and %s\n",
		rep.Scenario, rep.Seed, rep.Start.Format(time.RFC3339), rep.End.Format(time.RFC3339), len(rep.Faults),
		files[0], files[1], files[2])
	return err
}

// writeJSON writes v indented, a list never null.
func writeJSON[T any](w io.Writer, v []T) error {
	if v == nil {
		v = []T{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeAtomic writes a file through a temporary file in the same directory,
// so that a reader never sees half of it.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if err := write(tmp); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), tmp.Close(), os.Remove(tmp.Name()))
	}
	if err := tmp.Close(); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp.Name()))
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return errors.Join(err, os.Remove(tmp.Name()))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp.Name()))
	}
	return nil
}
