package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/drift"
)

// runDriftMetric compares two windows of a histogram a model server
// exports for a feature: the buckets' increases over the baseline window
// (ending where the current one starts) against those over the current
// window (ending at --at), one feature per value of the --by labels.
func runDriftMetric(cmd *cobra.Command, e *env, f driftFlags) error {
	switch {
	case f.baseline != "" || f.current != "":
		return usagef("drift: --metric reads a store: give --input, --prometheus or --server, not --baseline and --current")
	case f.count() != 1:
		return usagef("drift: --metric needs exactly one of --input FILE, --prometheus URL or --server URL")
	case f.baseWindow <= 0 || f.curWindow <= 0:
		return usagef("drift: --baseline-window and --current-window must be positive")
	case !model.LegacyValidation.IsValidMetricName(f.metric):
		return usagef("drift: --metric %q is not a metric name", f.metric)
	}
	for _, l := range f.by {
		if !model.LegacyValidation.IsValidLabelName(l) || l == "le" {
			return usagef("drift: --by %q is not a label that can split a histogram", l)
		}
	}
	m, err := drift.ParseMethod(f.method)
	if err != nil {
		return usagef("drift: --method: %v", strings.TrimPrefix(err.Error(), drift.ErrInput.Error()+": "))
	}
	if f.push != "" && f.model == "" {
		return usagef("drift: --push needs --model NAME (the model the features belong to)")
	}
	var at time.Time
	if f.at != "" {
		if at, err = parseTime(f.at); err != nil {
			return usagef("drift: --at: %v", err)
		}
	}
	ctx := cmd.Context()
	src, at, closeSrc, err := openSource(ctx, e, "drift", f.sourceFlags, at, e.loggerAtLeast(slog.LevelWarn).With("component", "drift"))
	if err != nil {
		return err
	}
	defer closeSrc()
	w := drift.Windows{Metric: f.metric, By: f.by, Baseline: f.baseWindow, Current: f.curWindow, Method: m, Threshold: f.threshold}
	results, skipped, err := drift.CompareWindows(ctx, src, w, at)
	if err != nil {
		if errors.Is(err, drift.ErrInput) {
			return usagef("drift: %s", strings.ReplaceAll(err.Error(), drift.ErrInput.Error()+": ", ""))
		}
		return err
	}
	if len(results) == 0 && len(skipped) == 0 {
		return usagef("drift: no series of %s_bucket in the windows before %s", f.metric, at.UTC().Format(time.RFC3339))
	}
	for _, k := range skipped {
		fmt.Fprintf(e.stderr, "vigil: warning: drift: %s has observations in only one of the windows: not compared\n", k)
	}
	if len(results) == 0 {
		return usagef("drift: no feature of %s has observations in both windows before %s", f.metric, at.UTC().Format(time.RFC3339))
	}
	rep := &drift.Report{Features: []drift.Result{}}
	for _, r := range results {
		rep.Features = append(rep.Features, r.Result)
		rep.Total++
		if r.Drift {
			rep.Drifted++
		}
	}
	return writeDrift(e, f, rep)
}
