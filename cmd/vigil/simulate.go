package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
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
	// onset is every fault's offset from the start (0: drawn); node and
	// gpu pin the first fault.
	onset                  time.Duration
	node, gpu              string
	faultScale, noiseScale float64
	// spans is how the request path records its calls.
	spans string
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
		Use:   "simulate (--list | --scenario NAME [--seed N] [--duration D] [--start TIME] [--onset D] [--node NAME] [--gpu N] --out DIR)",
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
  DIR/cluster-logs.otlp.json  the cluster's OTLP logs: kernel logs (XIDs, OOM
                        kills), the training ranks' output (NCCL timeouts),
                        Kubernetes events

Scenarios are healthy, a cause kind (nvlink_degraded), a variant
(nvlink_degraded/subtle) or two faults at once (KIND+KIND); --list prints the
named ones. vigil diagnose --input reads all of them but truth and decoys.
Each fault's onset is drawn between 40% and 65% of the run unless
--onset sets it; its node and GPU are drawn unless --node and --gpu pin the
first fault's. The same flags give the same bytes.`,
		Example: `  vigil simulate --list
  vigil simulate --scenario nvlink_degraded --seed 3 --out sim/
  vigil simulate --scenario gpu_xid_error --onset 20m --node gpu-node-02 --out sim/`,
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
	fl.DurationVar(&f.onset, "onset", 0, "every fault's onset, as an offset from the start (default: drawn)")
	fl.StringVar(&f.node, "node", "", "the first fault's node, e.g. gpu-node-06 (default: drawn)")
	fl.StringVar(&f.gpu, "gpu", "", "the first fault's GPU index on its node (default: drawn)")
	fl.Float64Var(&f.faultScale, "fault-scale", 1, "multiply every fault's effect size (0.5 to 1.5 in evaluations)")
	fl.Float64Var(&f.noiseScale, "noise-scale", 1, "multiply every noise amplitude")
	fl.StringVar(&f.spans, "spans", reqpath.SpansPaired, "how the request path's traces record a call: paired (a CLIENT and a SERVER span), server-only (the callee's SERVER span alone) or no-kind (no span kinds at all)")
	return cmd
}

func runSimulate(cmd *cobra.Command, e *env, f simulateFlags) error {
	if f.list {
		if f.scenario != "" {
			return usagef("simulate: --list and --scenario exclude each other")
		}
		for _, n := range append(sim.ScenarioNames(), microsvc.Scenarios()...) {
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
	start, err := parseTime(f.start)
	if err != nil {
		return usagef("simulate: --start: %v", err)
	}
	if microsvc.IsScenario(f.scenario) {
		return simulateMicroservices(cmd, e, f, start)
	}
	sc, err := sim.ParseScenario(f.scenario)
	if err != nil {
		return usagef("simulate: %v (vigil simulate --list names the scenarios)", err)
	}
	if err := pinFaults(cmd, &sc, f); err != nil {
		return err
	}
	cfg := sim.Config{Seed: f.seed, Start: start, Duration: f.duration, GPUModel: f.gpuModel, Nodes: f.nodes,
		FaultScale: f.faultScale, NoiseScale: f.noiseScale}
	if !(f.faultScale > 0) || !(f.noiseScale > 0) {
		return usagef("simulate: --fault-scale and --noise-scale must be above 0")
	}
	if f.spans != reqpath.SpansPaired && f.spans != reqpath.SpansServerOnly && f.spans != reqpath.SpansNoKind {
		return usagef("simulate: --spans %q: want %s, %s or %s", f.spans, reqpath.SpansPaired, reqpath.SpansServerOnly, reqpath.SpansNoKind)
	}
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
	if t := s.Truth(); len(t) > 0 {
		e := t[0].Entity
		switch {
		case f.node != "" && e["node"] == "" && e["pod"] == "":
			return usagef("simulate: --node: %s does not strike a node", t[0].Kind)
		case f.gpu != "" && e["gpu"] == "" && e["node"] == "":
			return usagef("simulate: --gpu: %s does not strike a GPU", t[0].Kind)
		}
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	name := func(n string) string { return filepath.Join(f.out, n) }
	files := []string{name("metrics.om"), name("traces.otlp.json"), name("logs.otlp.json"), name("truth.json"), name("decoys.json"),
		name("cluster-logs.otlp.json")}
	err = writeAtomic(files[:1], func(w []io.Writer) error { return s.WriteOpenMetrics(cmd.Context(), w[0]) })
	if err == nil {
		rc := s.RequestPath()
		rc.Spans = f.spans
		err = writeAtomic(files[1:3], func(w []io.Writer) error { return reqpath.WriteFiles(rc, w[0], w[1]) })
	}
	if err == nil {
		err = writeAtomic(files[3:4], func(w []io.Writer) error { return writeJSON(w[0], s.Truth()) })
	}
	if err == nil {
		err = writeAtomic(files[4:5], func(w []io.Writer) error { return writeJSON(w[0], s.Decoys()) })
	}
	if err == nil {
		err = writeAtomic(files[5:], func(w []io.Writer) error { return s.WriteLogs(cmd.Context(), w[0]) })
	}
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	c := s.Config()
	return reportSimulation(e, f, simulateReport{Scenario: sc.Name, Seed: c.Seed, Start: c.Start, End: c.Start.Add(c.Duration),
		Files: files, Faults: s.Truth(), Decoys: s.Decoys()})
}

// reportSimulation prints what a simulation wrote.
func reportSimulation(e *env, f simulateFlags, rep simulateReport) error {
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	_, err := fmt.Fprintf(e.stdout, "simulated %s (seed %d) from %s to %s: %d fault(s); wrote %s\n",
		rep.Scenario, rep.Seed, rep.Start.Format(time.RFC3339), rep.End.Format(time.RFC3339), len(rep.Faults),
		strings.Join(rep.Files, ", "))
	return err
}

// simulateMicroservices writes a metric_anomaly scenario: a microservice
// application (Sock Shop) with one faulty service, for the generic layer
// (vigil diagnose --entity-label service). It has no request-path OTLP:
// those files are written empty.
func simulateMicroservices(cmd *cobra.Command, e *env, f simulateFlags, start time.Time) error {
	spec, err := microsvc.ParseScenario(f.scenario)
	if err != nil {
		return usagef("simulate: %v", err)
	}
	fl := cmd.Flags()
	for _, name := range []string{"gpu", "gpu-model", "nodes"} {
		if fl.Changed(name) {
			return usagef("simulate: --%s does not apply to %s (a microservice application)", name, f.scenario)
		}
	}
	spec.Service, spec.After = f.node, f.onset
	g, err := microsvc.New(microsvc.Config{Seed: f.seed, Start: start, Duration: f.duration,
		FaultScale: f.faultScale, NoiseScale: f.noiseScale}, spec)
	if err != nil {
		return usagef("simulate: %v", err)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	name := func(n string) string { return filepath.Join(f.out, n) }
	files := []string{name("metrics.om"), name("traces.otlp.json"), name("logs.otlp.json"), name("truth.json"), name("decoys.json"),
		name("cluster-logs.otlp.json")}
	err = writeAtomic(files[:1], func(w []io.Writer) error { return g.WriteOpenMetrics(cmd.Context(), w[0]) })
	if err == nil {
		err = writeAtomic(files[1:3], func([]io.Writer) error { return nil })
	}
	if err == nil {
		err = writeAtomic(files[3:4], func(w []io.Writer) error { return writeJSON(w[0], g.Truth()) })
	}
	if err == nil {
		err = writeAtomic(files[4:], func(w []io.Writer) error { return writeJSON(w[0], g.Decoys()) })
	}
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	c := g.Config()
	return reportSimulation(e, f, simulateReport{Scenario: f.scenario, Seed: c.Seed, Start: c.Start, End: c.Start.Add(c.Duration),
		Files: files, Faults: g.Truth(), Decoys: g.Decoys()})
}

// pinFaults applies --onset to every fault of sc and --node and --gpu to
// its first.
func pinFaults(cmd *cobra.Command, sc *sim.Scenario, f simulateFlags) error {
	fl := cmd.Flags()
	if fl.Changed("onset") {
		switch {
		case f.onset <= 0 || f.onset >= f.duration:
			return usagef("simulate: --onset %s is outside the run: give an offset in (0, %s)", f.onset, f.duration)
		case len(sc.Faults) == 0:
			return usagef("simulate: --onset needs a scenario with a fault, not %s", sc.Name)
		}
		for i := range sc.Faults {
			sc.Faults[i].After = f.onset
		}
	}
	for _, name := range []string{"node", "gpu"} {
		if fl.Changed(name) && len(sc.Faults) == 0 {
			return usagef("simulate: --%s needs a scenario with a fault, not %s", name, sc.Name)
		}
	}
	if f.gpu != "" {
		if n, err := strconv.Atoi(f.gpu); err != nil || n < 0 {
			return usagef("simulate: --gpu %q is not a GPU index (0, 1, ...)", f.gpu)
		}
	}
	if fl.Changed("node") && f.node == "" {
		return usagef("simulate: --node is empty")
	}
	if len(sc.Faults) > 0 {
		sc.Faults[0].Node, sc.Faults[0].GPU = f.node, f.gpu
	}
	return nil
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
