package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/drift"
)

// driftFlags are the flags of `vigil drift`.
type driftFlags struct {
	baseline, current     string
	features, categorical []string
	method, bins          string
	threshold             float64
	asJSON                bool
	push, model, job      string
	// The store mode: a histogram's two windows.
	sourceFlags
	metric, at            string
	by                    []string
	baseWindow, curWindow time.Duration
}

func newDriftCmd(e *env) *cobra.Command {
	var f driftFlags
	cmd := &cobra.Command{
		Use:   "drift --baseline FILE --current FILE [--features a,b] [--categorical a,b] [--method M] [--json]",
		Short: "Measure how far a current sample's features drifted from a baseline",
		Long: `Compare each feature of a current sample with a baseline (reference)
sample, both CSV with a header row (gzip-compressed too) or Parquet, streamed.

Features default to the columns both files share. A feature is categorical
when --categorical names it or when the baseline holds a non-numeric value in
it. Empty cells and NA, N/A, NaN, null and None are missing values: counted
and reported, not compared.

Methods: psi, kl, js, hellinger, linf, wasserstein (normalised by the
baseline's standard deviation), ks and chisquare (with p-values). Without
--method each feature gets Evidently's default: ks (numeric) or chisquare
(categorical) for a baseline of at most 1000 rows, wasserstein or js above.
Numeric features are binned by the baseline's deciles (--bins sturges or
doane for equal-width bins). Drift is a score at or above the threshold, or
a p-value below it; the exit status is 0 whether or not features drifted.

--push URL sends the scores as vigil_feature_drift{model, feature, method}
gauges to a Pushgateway or a running vigil serve (PUT to
/metrics/job/<--job>/model/<--model>, replacing the group), the CronJob flow:
vigil serve stores them, and the diagnosis reports model_drift when a score
crosses its method's threshold.`,
		Example: `  vigil drift --baseline train.csv --current today.csv
  vigil drift --baseline train.parquet --current today.parquet --method psi --json
  vigil drift --metric vllm:request_prompt_tokens --server http://localhost:9700`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDrift(cmd, e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.baseline, "baseline", "", "the baseline (reference) sample: CSV or Parquet")
	fl.StringVar(&f.current, "current", "", "the current sample: CSV or Parquet")
	fl.StringSliceVar(&f.features, "features", nil, "the features to compare (default: every shared column)")
	fl.StringSliceVar(&f.categorical, "categorical", nil, "features to treat as categories")
	fl.StringVar(&f.method, "method", "", "psi, kl, js, hellinger, linf, wasserstein, ks or chisquare (default: by type and size)")
	fl.StringVar(&f.bins, "bins", "quantile", "numeric bins: quantile, sturges or doane")
	fl.Float64Var(&f.threshold, "threshold", 0, "drift threshold on the score, or on the p-value for ks and chisquare (default: the method's)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	fl.StringVar(&f.push, "push", "", "push the scores to a Pushgateway or vigil serve at this URL")
	fl.StringVar(&f.model, "model", "", "the model the features belong to (required with --push)")
	fl.StringVar(&f.job, "job", "vigil-drift", "the job of the pushed group")
	fl.StringVar(&f.metric, "metric", "", "compare two windows of this histogram in a store instead of two files")
	fl.StringArrayVar(&f.inputs, "input", nil, "with --metric: a metrics file to read (repeatable; - is standard input)")
	fl.StringVar(&f.prometheus, "prometheus", "", "with --metric: a Prometheus-compatible API to read")
	fl.StringVar(&f.server, "server", "", "with --metric: a running Vigil to read")
	registerHTTPConfig(fl, &f.httpConfig)
	fl.StringVar(&f.at, "at", "", "with --metric: the end of the current window (default now, or the newest sample of --input)")
	fl.StringSliceVar(&f.by, "by", nil, "with --metric: labels that split the histogram into features (default: one feature)")
	fl.DurationVar(&f.baseWindow, "baseline-window", time.Hour, "with --metric: the baseline window, ending where the current one starts")
	fl.DurationVar(&f.curWindow, "current-window", 15*time.Minute, "with --metric: the current window, ending at --at")
	return cmd
}

func runDrift(cmd *cobra.Command, e *env, f driftFlags) error {
	if f.metric != "" {
		return runDriftMetric(cmd, e, f)
	}
	if f.count() > 0 {
		return usagef("drift: --input, --prometheus and --server go with --metric NAME")
	}
	switch {
	case f.baseline == "":
		return usagef("drift: --baseline FILE is required")
	case f.current == "":
		return usagef("drift: --current FILE is required")
	}
	if f.push != "" && f.model == "" {
		return usagef("drift: --push needs --model NAME (the model the features belong to)")
	}
	m, err := drift.ParseMethod(f.method)
	if err != nil {
		return usagef("drift: --method: %v", strings.TrimPrefix(err.Error(), drift.ErrInput.Error()+": "))
	}
	o := drift.Options{Method: m, Features: f.features, Categorical: f.categorical, Bins: drift.BinRule(f.bins), Threshold: f.threshold}
	rep, err := drift.Compare(cmd.Context(), drift.FileOpener(f.baseline), drift.FileOpener(f.current), o)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), drift.ErrInput.Error()+": ", "")
		if errors.Is(err, drift.ErrInput) {
			return usagef("drift: %s", msg)
		}
		return fmt.Errorf("drift: %s", msg)
	}
	return writeDrift(e, f, rep)
}

// writeDrift pushes (with --push) and prints a report.
func writeDrift(e *env, f driftFlags, rep *drift.Report) error {
	if f.push != "" {
		if err := pushDrift(f, rep); err != nil {
			return err
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(e.stdout)
		return enc.Encode(rep)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tTYPE\tMETHOD\tSCORE\tP-VALUE\tTHRESHOLD\tDRIFT\tMISSING (BASE/CUR)")
	for _, r := range rep.Features {
		p := "-"
		if r.PValue != nil {
			p = fmt.Sprintf("%.4g", *r.PValue)
		}
		d := "no"
		if r.Drift {
			d = "yes"
		}
		if r.Level != "" {
			d += " (" + r.Level + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.4g\t%s\t%g\t%s\t%d/%d\n", r.Feature, r.Type, r.Method, r.Score, p, r.Threshold, d, r.MissingReference, r.MissingCurrent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Features {
		if r.Note != "" {
			fmt.Fprintf(e.stdout, "note: %s: %s\n", r.Feature, r.Note)
		}
	}
	_, err := fmt.Fprintf(e.stdout, "%d of %d features drifted\n", rep.Drifted, rep.Total)
	return err
}

// pushDrift sends the scores as vigil_feature_drift gauges to a Pushgateway
// (or vigil serve's push endpoint), replacing the job and model's group;
// the model label comes from the group.
func pushDrift(f driftFlags, rep *drift.Report) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vigil_feature_drift",
		Help: "Drift score of a feature against its baseline, by `vigil drift`."}, []string{"feature", "method"})
	for _, r := range rep.Features {
		g.WithLabelValues(r.Feature, string(r.Method)).Set(r.Score)
	}
	if err := push.New(strings.TrimSuffix(f.push, "/"), f.job).Grouping("model", f.model).Collector(g).Push(); err != nil {
		return fmt.Errorf("drift: push to %s: %w", f.push, err)
	}
	return nil
}
