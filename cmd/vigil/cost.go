package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/cost"
)

// costFlags are the flags of `vigil cost`.
type costFlags struct {
	sourceFlags
	prices      string
	currency    string
	from, to    string
	window      time.Duration
	step        time.Duration
	by          string
	tenantLabel string
	asJSON      bool
}

func newCostCmd(e *env) *cobra.Command {
	var f costFlags
	cmd := &cobra.Command{
		Use:   "cost (--input FILE... | --prometheus URL | --server URL) [--prices FILE] [--from TIME --to TIME | --window D] [--by node|namespace|tenant|workload|model] [--json]",
		Short: "What the GPUs cost: available, allocated, used and idle, per node, namespace, tenant, workload or model",
		Long: `Compute what the GPUs cost over a range, from the telemetry the cluster
already emits: GPU-hours available (every GPU dcgm-exporter reports),
allocated (held by a pod: dcgm-exporter's pod labels, a MIG instance its
share of the GPU, a time-sliced GPU split among its pods; without pod
labels, kube-state-metrics' nvidia.com/gpu requests) and used (allocated ×
DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL with a warning);
their cost — total, allocated, idle (allocated but inactive) and
unallocated — per node, namespace, tenant, workload or served model, and
what a million prompt or generated tokens cost (vLLM, NIM, SGLang, TGI and
OpenTelemetry GenAI counters) on the allocation and the usage basis.

The prices file (--prices) is YAML, prices of one GPU for one hour:
  currency: USD
  gpu_hourly: {"NVIDIA A100-SXM4-80GB": 2.5, default: 2.0}
  node_overrides: [{match: {node.kubernetes.io/instance-type: p4d.24xlarge}, gpu_hourly: 1.1}]
gpu_hourly's keys are dcgm-exporter's modelName; node_overrides match the
node labels of kube_node_labels, the first match wins. Without --prices,
OpenCost's node_gpu_hourly_cost is read, in the currency --currency names.

The range is --from to --to (RFC 3339 or Unix seconds), or the --window
before the newest sample of --input (or now). Every step of the data's own
interval (--step) in which a GPU reports counts once. The table is sorted
by idle cost; --json prints one object.

Exit 0 with the figures; 2 on bad input, no prices, or no GPU in the range.`,
		Example: `  vigil cost --input dump.om --prices prices.yaml
  vigil cost --prometheus http://prometheus:9090 --prices prices.yaml --window 720h --by tenant
  vigil cost --server http://vigil:9700 --currency USD --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z --by model --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCost(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	f.sourceFlags.register(fl)
	fl.StringVar(&f.prices, "prices", "", "the prices file (YAML: currency, gpu_hourly, node_overrides)")
	fl.StringVar(&f.currency, "currency", "", "the currency of OpenCost's node_gpu_hourly_cost, read without --prices")
	fl.StringVar(&f.from, "from", "", "the range's start (RFC 3339 or Unix seconds); with --to")
	fl.StringVar(&f.to, "to", "", "the range's end (RFC 3339 or Unix seconds); with --from")
	fl.DurationVar(&f.window, "window", 24*time.Hour, "the range: this long before the newest sample of --input, or now")
	fl.DurationVar(&f.step, "step", 0, "the resolution (default: the data's own interval)")
	fl.StringVar(&f.by, "by", cost.ByNamespace, "group by "+strings.Join(cost.Groupings(), ", "))
	fl.StringVar(&f.tenantLabel, "tenant-label", "", "a pod or namespace label naming the tenant (default: the namespace)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	cmd.MarkFlagsRequiredTogether("from", "to")
	cmd.MarkFlagsMutuallyExclusive("from", "window")
	return cmd
}

func runCost(ctx context.Context, e *env, f costFlags) error {
	if f.count() != 1 {
		return usagef("cost: give exactly one of --input FILE, --prometheus URL or --server URL")
	}
	opts := cost.Options{Step: f.step, By: f.by, TenantLabel: f.tenantLabel, Currency: f.currency}
	if f.prices != "" {
		p, err := cost.LoadPrices(f.prices)
		if err != nil {
			return usagef("cost: --prices: %v", err)
		}
		opts.Prices = p
		if f.currency != "" && !strings.EqualFold(f.currency, p.Currency) {
			return usagef("cost: --currency %s disagrees with the prices file's currency %s", f.currency, p.Currency)
		}
	}
	var at time.Time
	if f.to != "" {
		from, err := parseTime(f.from)
		if err != nil {
			return usagef("cost: --from: %v", err)
		}
		to, err := parseTime(f.to)
		if err != nil {
			return usagef("cost: --to: %v", err)
		}
		opts.From, at = from, to
	}
	if f.window <= 0 {
		return usagef("cost: --window must be positive, got %s", f.window)
	}
	if f.step < 0 {
		return usagef("cost: --step must not be negative, got %s", f.step)
	}
	if opts.Prices == nil && f.currency == "" {
		return usageError{fmt.Errorf("cost: %w: give --prices FILE, or --currency with OpenCost's node_gpu_hourly_cost in the data", cost.ErrNoPrices)}
	}
	logger := e.loggerAtLeast(slog.LevelWarn).With("component", "cost")
	src, at, closeSrc, err := openSource(ctx, e, "cost", f.sourceFlags, at, logger)
	if err != nil {
		return err
	}
	opts.To = at
	if opts.From.IsZero() {
		opts.From = at.Add(-f.window)
	}
	if err := opts.Validate(); err != nil {
		return errors.Join(usagef("cost: %v", err), closeSrc())
	}
	rep, err := cost.Compute(ctx, src, opts)
	if cerr := closeSrc(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, cost.ErrNoGPUs), errors.Is(err, cost.ErrNoPrices):
		return usageError{fmt.Errorf("cost: %w", err)}
	case err != nil:
		return fmt.Errorf("cost: %w", err)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stderr, "vigil: warning: %s\n", w)
	}
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	bw := bufio.NewWriter(e.stdout)
	if err := cost.WriteText(bw, rep, f.by); err != nil {
		return err
	}
	return bw.Flush()
}
