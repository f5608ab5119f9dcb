package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
}

func newSimulateCmd(e *env) *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate (--list | --scenario NAME [--seed N] [--duration D] [--start TIME] --out DIR)",
		Short: "Write a simulated GPU cluster's telemetry and its ground truth",
		Long: `Simulate a GPU cluster — an 8-node synchronous training job and a vLLM
deployment on 10 nodes of 8 GPUs by default — with dcgm-exporter,
kube-state-metrics, node-exporter and vLLM speaking their real vocabularies,
inject a scenario's faults, and write:

  DIR/metrics.om        OpenMetrics text (what vigil import and promtool read)
  DIR/traces.otlp.json  the request path's OTLP traces, one export request per
                        line (the OpenTelemetry Collector's file exporter)
  DIR/logs.otlp.json    its OTLP logs, the same way
  DIR/truth.json        the injected faults: kind, entity, onset, severity
  DIR/decoys.json       the benign events every run holds

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
	if f.nodes <= sim.DefaultTrainingNodes {
		// A small cluster: the job leaves one node to the inference
		// replicas and the notebook, as many replicas as fit.
		cfg.TrainingNodes = max(1, f.nodes-1)
		cfg.Replicas = max(1, min(sim.DefaultReplicas, (sim.DefaultGPUsPerNode-1)/sim.DefaultGPUsPerReplica))
	}
	s, err := sim.New(cfg, sc)
	if err != nil {
		return usagef("simulate: %v", err)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	name := func(n string) string { return filepath.Join(f.out, n) }
	files := []string{name("metrics.om"), name("traces.otlp.json"), name("logs.otlp.json"), name("truth.json"), name("decoys.json")}
	err = writeAtomic(files[:1], func(w []io.Writer) error { return s.WriteOpenMetrics(cmd.Context(), w[0]) })
	if err == nil {
		err = writeAtomic(files[1:3], func(w []io.Writer) error { return s.WriteRequestPath(w[0], w[1]) })
	}
	if err == nil {
		err = writeAtomic(files[3:4], func(w []io.Writer) error { return writeJSON(w[0], s.Truth()) })
	}
	if err == nil {
		err = writeAtomic(files[4:], func(w []io.Writer) error { return writeJSON(w[0], s.Decoys()) })
	}
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	c := s.Config()
	rep := simulateReport{Scenario: sc.Name, Seed: c.Seed, Start: c.Start, End: c.Start.Add(c.Duration),
		Files: files, Faults: s.Truth(), Decoys: s.Decoys()}
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	_, err = fmt.Fprintf(e.stdout, "simulated %s (seed %d) from %s to %s: %d fault(s); wrote %s\n",
		rep.Scenario, rep.Seed, rep.Start.Format(time.RFC3339), rep.End.Format(time.RFC3339), len(rep.Faults),
		strings.Join(files, ", "))
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

// writeAtomic writes files through temporary files in their directories,
// renamed into place once all are written, so that a reader never sees half
// of one.
func writeAtomic(paths []string, write func([]io.Writer) error) (err error) {
	var tmps []*os.File
	defer func() {
		for _, t := range tmps {
			t.Close()
			if err != nil {
				os.Remove(t.Name())
			}
		}
	}()
	ws := make([]io.Writer, len(paths))
	for i, p := range paths {
		t, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
		if err != nil {
			return err
		}
		tmps = append(tmps, t)
		ws[i] = t
	}
	if err := write(ws); err != nil {
		return fmt.Errorf("write %s: %w", strings.Join(paths, ", "), err)
	}
	for i, t := range tmps {
		if err := t.Close(); err != nil {
			return fmt.Errorf("write %s: %w", paths[i], err)
		}
		if err := os.Chmod(t.Name(), 0o644); err != nil {
			return err
		}
	}
	for i, t := range tmps {
		if err := os.Rename(t.Name(), paths[i]); err != nil {
			return fmt.Errorf("write %s: %w", paths[i], err)
		}
	}
	return nil
}
