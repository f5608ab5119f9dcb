package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/topology"
)

// topologyFlags are the flags of `vigil topology`.
type topologyFlags struct {
	sourceFlags
	at          string
	tenantLabel string
	window      time.Duration
	asJSON      bool
}

func newTopologyCmd(e *env) *cobra.Command {
	var f topologyFlags
	cmd := &cobra.Command{
		Use:   "topology [--input FILE]... [--prometheus URL | --server URL] [--at TIME] [--json]",
		Short: "The entity tree: nodes → GPUs → pods → workloads",
		Long: `Print the cluster's entity tree at one instant: each node (one name across
dcgm-exporter, kube-state-metrics and node-exporter, resolved to the Kubernetes
node name), its GPUs with their model and a one-word health hint (ok, hot,
throttled, xid, ecc, lost, idle, unknown from their latest values; the kind
of what vigil diagnose names on a GPU or a node with confidence 0.5 or more,
e.g. pcie_degraded or exporter_down, over those), the pods using each GPU,
and the workloads, services and served models of those pods.

The data comes from files (--input, OpenMetrics or Prometheus text, "-" for
standard input; samples without a timestamp are taken at --at, or now), from
any Prometheus-compatible API (--prometheus URL) or from a running Vigil
(--server URL). --at is the instant (RFC 3339 or Unix seconds; default: now, or
the newest sample of --input). Missing or ambiguous data is reported on
stderr; --json prints one object with nodes nesting GPUs and pods.`,
		Example: `  vigil topology --server http://localhost:9700
  vigil topology --input dump.om --at 2026-11-12T02:50:00Z --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTopology(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	f.sourceFlags.register(fl)
	fl.StringVar(&f.at, "at", "", "the instant (RFC 3339 or Unix seconds; default now, or the newest sample of --input)")
	fl.StringVar(&f.tenantLabel, "tenant-label", "", "a pod or namespace label naming the tenant (default: the namespace)")
	fl.DurationVar(&f.window, "window", topology.DefaultOptions().Window, "how far before --at the latest sample of a series counts")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	return cmd
}

func runTopology(ctx context.Context, e *env, f topologyFlags) error {
	if f.count() != 1 {
		return usagef("topology: give exactly one of --input FILE, --prometheus URL or --server URL")
	}
	var at time.Time
	if f.at != "" {
		t, err := parseTime(f.at)
		if err != nil {
			return usagef("topology: --at: %v", err)
		}
		at = t
	}
	opts := topology.DefaultOptions()
	opts.TenantLabel, opts.Window = f.tenantLabel, f.window
	opts.History = max(opts.History, opts.Window)
	if err := opts.Validate(); err != nil {
		return usagef("topology: %v", err)
	}
	logger := e.loggerAtLeast(slog.LevelWarn).With("component", "topology")
	src, at, closeSrc, err := openSource(ctx, e, "topology", f.sourceFlags, at, logger)
	if err != nil {
		return err
	}
	topo, err := topology.Build(ctx, src, catalog.Default(), at, opts)
	if err == nil {
		err = applyDiagnosis(ctx, topo, src, at, f.tenantLabel, logger)
	}
	if cerr := closeSrc(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, topology.ErrNoData):
		return usageError{fmt.Errorf("topology: %w", err)}
	case err != nil:
		return fmt.Errorf("topology: %w", err)
	}
	for _, w := range topo.Warnings {
		fmt.Fprintf(e.stderr, "vigil: warning: %s\n", w)
	}
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(topo)
	}
	return topology.WriteText(e.stdout, topo)
}

// applyDiagnosis diagnoses src at at with the engine `vigil diagnose`
// runs and sets what it names on nodes and GPUs as their health hints, so
// that the two commands agree: a GPU the diagnosis calls pcie_degraded is
// not ok in the tree. Data too old for the diagnosis's window leaves the
// topology's own hints.
func applyDiagnosis(ctx context.Context, topo *topology.Topology, src topology.Source, at time.Time, tenantLabel string, logger *slog.Logger) error {
	eng, err := diagnose.New(diagnose.Options{TenantLabel: tenantLabel, Logger: logger})
	if err != nil {
		return err
	}
	rep, err := eng.Diagnose(ctx, src, at)
	switch {
	case errors.Is(err, diagnose.ErrNoData):
		return nil
	case err != nil:
		return fmt.Errorf("diagnose: %w", err)
	}
	topo.ApplyHints(rep.Hints())
	return nil
}

// sourceFlags name where a read-only command reads: files, a
// Prometheus-compatible API or a running Vigil.
type sourceFlags struct {
	inputs             []string
	prometheus, server string
	// httpConfig is --http.config.file and --tenant: the client settings of
	// --prometheus and --server.
	httpConfig clientFlags
}

// register adds --input, --prometheus and --server to fl.
func (f *sourceFlags) register(fl *pflag.FlagSet) {
	fl.StringArrayVar(&f.inputs, "input", nil, "a file to read (repeatable; - is standard input)")
	fl.StringVar(&f.prometheus, "prometheus", "", "the URL of a Prometheus-compatible API to read instead")
	fl.StringVar(&f.server, "server", "", "the URL of a running Vigil to read instead")
	registerHTTPConfig(fl, &f.httpConfig)
}

// openSource opens the files, the Prometheus API or the Vigil the flags
// name, and returns it with the instant to read at (at, or its default: now,
// or the newest sample of the files) and the function that releases it.
// cmd names the command in errors.
func openSource(ctx context.Context, e *env, cmd string, f sourceFlags, at time.Time, logger *slog.Logger) (topology.Source, time.Time, func() error, error) {
	if len(f.inputs) == 0 {
		u, flag := f.prometheus, "--prometheus"
		if f.server != "" {
			u, flag = f.server, "--server"
		}
		rc := store.DefaultRemoteConfig(strings.TrimSuffix(u, "/"))
		hc, err := loadHTTPConfig(f.httpConfig)
		if err != nil {
			return nil, at, nil, usagef("%s: %v", cmd, err)
		}
		rc.HTTPClient = *hc
		r, err := store.NewRemote(rc, e.now, logger, nil)
		if err != nil {
			return nil, at, nil, usagef("%s: %s: %v", cmd, flag, err)
		}
		if at.IsZero() {
			at = e.now()
		}
		return r, at, r.Close, nil
	}
	opts := fileimport.DefaultOptions(e.now())
	opts.DeriveFromOTLP = true
	opts.Spans = fileimport.NewSpanIndex() // trace files' span names for the log files after them
	if !at.IsZero() {
		opts.DefaultTime = at
	}
	var files []*fileimport.File
	stdinRead := false
	for _, name := range f.inputs {
		if name == "-" {
			if stdinRead {
				return nil, at, nil, usagef(`%s: "-" (standard input) given twice`, cmd)
			}
			stdinRead = true
		}
		file, err := readFile(name, e.stdin, opts)
		switch {
		case errors.Is(err, fileimport.ErrOTLPNotMetrics):
			// The request path's traces and logs are not metrics.
			fmt.Fprintf(e.stderr, "vigil: warning: %s: skipped %s: OTLP traces or logs; %s reads metrics\n", cmd, name, cmd)
			continue
		case err != nil:
			return nil, at, nil, usageError{fmt.Errorf("%s: %w", cmd, err)}
		}
		files = append(files, file)
	}
	stats := fileimport.Sum(files)
	if stats.Samples == 0 {
		return nil, at, nil, usagef("%s: no samples in --input", cmd)
	}
	if at.IsZero() {
		at = time.UnixMilli(stats.MaxT).UTC()
	}
	if stats.MinT > at.UnixMilli() {
		return nil, at, nil, usagef("%s: no data at or before %s: the oldest sample of --input is at %s", cmd,
			at.UTC().Format(time.RFC3339), time.UnixMilli(stats.MinT).UTC().Format(time.RFC3339))
	}
	s, err := fileimport.OpenTemp(ctx, files, e.now, logger)
	if err != nil {
		return nil, at, nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return s, at, s.Close, nil
}

// count returns how many of the source flags are set.
func (f sourceFlags) count() int {
	n := 0
	for _, set := range []bool{len(f.inputs) > 0, f.prometheus != "", f.server != ""} {
		if set {
			n++
		}
	}
	return n
}
