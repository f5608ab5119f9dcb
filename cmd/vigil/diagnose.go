package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// diagnoseFlags are the flags of `vigil diagnose`.
type diagnoseFlags struct {
	sourceFlags
	at          string
	window      time.Duration
	step        time.Duration
	stepSet     bool // --step given: the data's interval does not set it
	entityLabel string
	tenantLabel string
	asJSON      bool
}

func newDiagnoseCmd(e *env) *cobra.Command {
	var f diagnoseFlags
	cmd := &cobra.Command{
		Use:   "diagnose [--input FILE]... [--prometheus URL | --server URL] [--at TIME] [--window DURATION] [--entity-label LABEL] [--json]",
		Short: "One-shot diagnosis from files, a running Vigil, or any Prometheus-compatible URL",
		Long: `Diagnose a GPU cluster: find the symptoms (a training job that stalls or
slows, inference latency, time to first token or queues that grow), and rank
their probable root causes — NVLink degradation, XIDs, lost GPUs, thermal and
power throttling, memory errors, PCIe, a node down, CPU or memory pressure,
InfiniBand, a slow input pipeline, OOM kills, crash loops, evictions, a
straggling rank, saturated capacity, a full KV cache, a blind exporter — each
with its evidence, a calibrated confidence and what to do. Problems with no
symptom yet (a GPU held but idle, a part degrading) are findings.

The data comes from files (--input, OpenMetrics or Prometheus text, .gz too,
"-" for standard input; samples without a timestamp are taken at --at; OTLP
JSON, one export request per line as the Collector's file exporter writes
it: metrics through Prometheus's translation, traces as the span metrics and
service graph vigil serve derives from them, logs as its log-derived
counters — NCCL timeouts, XIDs, OOM kills, HTTP 5xx), from
any Prometheus-compatible API (--prometheus URL: Prometheus, Thanos, Mimir,
VictoriaMetrics; raw samples are fetched and evaluated locally) or from a
running Vigil (--server URL). --at is the evaluation time (RFC 3339 or Unix
seconds; default now, or the newest sample of --input): data after it is
ignored. --window is how far back to look. Files sampled less often than
--step (5-minute aggregates) are read at their own interval unless --step
is given.

--entity-label LABEL switches on the generic layer for data in any
vocabulary: the entities named by LABEL (e.g. service) are ranked as
metric_anomaly causes by how far their series moved after the common onset.

The page's second line says what the diagnosis saw, layer by layer, and what
Vigil is blind to (--json: coverage). Data in no vocabulary Vigil knows (a wrong
URL, relabelled metrics) and no --entity-label is BLIND: not healthy, nothing
said about the cluster.

Exit 0 with a diagnosis (healthy, not healthy or blind); 2 on bad input or no
data at or before --at.`,
		Example: `  vigil diagnose --input dump.om
  vigil diagnose --prometheus http://prometheus:9090 --window 30m --json
  vigil diagnose --input traces.otlp.jsonl --entity-label service`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.stepSet = cmd.Flags().Changed("step")
			return runDiagnose(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	f.sourceFlags.register(fl)
	fl.StringVar(&f.at, "at", "", "the evaluation time (RFC 3339 or Unix seconds; default now, or the newest sample of --input)")
	fl.DurationVar(&f.window, "window", diagnose.DefaultWindow, "how far back from --at to look")
	fl.DurationVar(&f.step, "step", diagnose.DefaultStep, "the resolution the engine reads series at (with --input, by default the data's own interval when it is coarser, e.g. 5m aggregates; a series sampled coarser than the step counts once a sample)")
	fl.StringVar(&f.entityLabel, "entity-label", "", "rank the entities named by this label as metric_anomaly causes")
	fl.StringVar(&f.tenantLabel, "tenant-label", "", "a pod or namespace label naming the tenant (default: the namespace)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	return cmd
}

func runDiagnose(ctx context.Context, e *env, f diagnoseFlags) error {
	if f.count() != 1 {
		return usagef("diagnose: give exactly one of --input FILE, --prometheus URL or --server URL")
	}
	var at time.Time
	if f.at != "" {
		t, err := parseTime(f.at)
		if err != nil {
			return usagef("diagnose: --at: %v", err)
		}
		at = t
	}
	logger := e.loggerAtLeast(slog.LevelWarn).With("component", "diagnose")
	if f.step <= 0 {
		return usagef("diagnose: --step must be positive, got %s", f.step)
	}
	opts := diagnose.Options{Window: f.window, Step: f.step, EntityLabel: f.entityLabel, TenantLabel: f.tenantLabel, Logger: logger}
	eng, err := diagnose.New(opts)
	if err != nil {
		return usagef("diagnose: %v", err)
	}
	src, at, closeSrc, err := openSource(ctx, e, "diagnose", f.sourceFlags, at, logger)
	if err != nil {
		return err
	}
	if iv, ok := src.(interface{ Interval() time.Duration }); ok && !f.stepSet && stepFor(iv.Interval(), f.step, f.window) != f.step {
		opts.Step = stepFor(iv.Interval(), f.step, f.window)
		if eng, err = diagnose.New(opts); err != nil {
			return errors.Join(usagef("diagnose: %v", err), closeSrc())
		}
	}
	rep, err := eng.Diagnose(ctx, src, at)
	if cerr := closeSrc(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, diagnose.ErrNoData):
		return usageError{fmt.Errorf("diagnose: %w", err)}
	case err != nil:
		return fmt.Errorf("diagnose: %w", err)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stderr, "vigil: warning: %s\n", w)
	}
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	bw := bufio.NewWriter(e.stdout)
	if err := diagnose.WriteText(bw, rep, e.colour(e.stdout)); err != nil {
		return err
	}
	return bw.Flush()
}

// stepFor is the step to read data sampled every interval at: step, or
// the interval when it is coarser (5-minute aggregates read every 30 s
// would be gaps between readings) and the window still holds a step of it.
func stepFor(interval, step, window time.Duration) time.Duration {
	if interval > step && interval <= window {
		return interval
	}
	return step
}

// isTerminal reports whether w is a terminal (colour only there).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
