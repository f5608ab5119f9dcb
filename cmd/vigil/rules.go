package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/slo"
)

// rulesFlags are the flags of `vigil rules generate`.
type rulesFlags struct {
	spec, format, out string
	// namespace and labels go on PrometheusRule objects.
	namespace string
	labels    []string
	// A store to check the spec's metrics against (optional).
	sourceFlags
	at string
}

// checkRange is how far back `rules generate` looks for an SLO's metrics in
// a store: a week, so that weekly pushed scores count.
const checkRange = 7 * 24 * time.Hour

func newRulesCmd(e *env) *cobra.Command {
	rules := &cobra.Command{
		Use:     "rules",
		Short:   "Prometheus rules for AI SLOs",
		Example: `  vigil rules generate --out rules/`,
		Args:    cobra.NoArgs,
	}
	var f rulesFlags
	gen := &cobra.Command{
		Use:   "generate [--slo FILE] [--format prometheus|prometheusrule] --out DIR",
		Short: "Write Prometheus rule files or PrometheusRule objects for SLOs",
		Long: `Write the recording and alerting rules of an SLO spec (default: the built-in
AI SLO presets) into DIR: one file per SLO (vigil-slo-NAME), one per
composite alert (vigil-composite-NAME) and the watchdog (vigil-watchdog),
as Prometheus rule files (.yml, for rule_files) or prometheus-operator
PrometheusRule objects (.yaml, for kubectl or a GitOps repository). It
prints the path of each file it writes.

A spec error names the field and its line. A latency threshold must be a
bucket bound of its histogram: the bounds of well-known exporters (vLLM)
are checked offline. With --input, --prometheus or --server the spec is
also checked against that store (the last 7 days before --at): an SLO whose
metrics have no series, or whose threshold is not one of the le bounds the
store holds, gets a warning on stderr. See docs/slo.md.`,
		Example: `  vigil rules generate --out rules/
  vigil rules generate --slo slo.yaml --format prometheusrule --namespace monitoring --label release=kube-prometheus-stack --out rules/
  vigil rules generate --slo slo.yaml --server http://localhost:9700 --out rules/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRulesGenerate(cmd, e, f)
		},
	}
	fl := gen.Flags()
	fl.StringVar(&f.spec, "slo", "", "the SLO spec (YAML); default: the built-in AI SLO presets")
	fl.StringVar(&f.format, "format", string(slo.FormatPrometheus), "prometheus (rule files) or prometheusrule (prometheus-operator objects)")
	fl.StringVar(&f.out, "out", "", "the directory to write into (created if missing)")
	fl.StringArrayVar(&f.inputs, "input", nil, "check the spec's metrics against a metrics file (repeatable; - is standard input)")
	fl.StringVar(&f.prometheus, "prometheus", "", "check the spec's metrics against a Prometheus-compatible API")
	fl.StringVar(&f.server, "server", "", "check the spec's metrics against a running Vigil")
	registerHTTPConfig(fl, &f.httpConfig)
	fl.StringVar(&f.at, "at", "", "with a store: the end of the checked week (default now, or the newest sample of --input)")
	fl.StringVar(&f.namespace, "namespace", "", "with --format prometheusrule: the objects' metadata.namespace")
	fl.StringArrayVar(&f.labels, "label", nil, "with --format prometheusrule: a label k=v of the objects (repeatable), e.g. release=kube-prometheus-stack for its ruleSelector")
	rules.AddCommand(gen)
	return rules
}

func runRulesGenerate(cmd *cobra.Command, e *env, f rulesFlags) error {
	format := slo.Format(f.format)
	switch {
	case format != slo.FormatPrometheus && format != slo.FormatPrometheusRule:
		return usagef("rules generate: --format %q is not prometheus or prometheusrule", f.format)
	case f.out == "":
		return usagef("rules generate: --out DIR is required")
	case f.count() > 1:
		return usagef("rules generate: give one of --input, --prometheus or --server")
	case f.at != "" && f.count() == 0:
		return usagef("rules generate: --at goes with --input, --prometheus or --server")
	case (f.namespace != "" || len(f.labels) > 0) && format != slo.FormatPrometheusRule:
		return usagef("rules generate: --namespace and --label go with --format prometheusrule")
	}
	meta, err := parseObjectMeta(f.namespace, f.labels)
	if err != nil {
		return err
	}
	spec := slo.Presets()
	if f.spec != "" {
		var err error
		if spec, err = slo.ParseFile(f.spec); err != nil {
			return specError(err)
		}
	}
	if errs := slo.ValidateBuckets(spec, slo.KnownBuckets()); len(errs) > 0 {
		return specError(errors.Join(errs...))
	}
	if f.count() > 0 {
		if err := checkSpec(cmd, e, f, spec); err != nil {
			return err
		}
	}
	files, err := slo.Files(spec)
	if err != nil {
		return specError(err)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("rules generate: %w", err)
	}
	for _, file := range files {
		b, err := renderRules(file, format, meta)
		if err != nil {
			return fmt.Errorf("rules generate: %w", err)
		}
		path := filepath.Join(f.out, file.FileName(format))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("rules generate: %w", err)
		}
		fmt.Fprintln(e.stdout, path)
	}
	return nil
}

// specError is a spec's problems as one usage error: each problem names
// its file, line and field, several are joined with "; ".
func specError(err error) error {
	if !errors.Is(err, slo.ErrInvalid) {
		if _, ok := errors.AsType[*os.PathError](err); !ok {
			return fmt.Errorf("rules generate: %w", err)
		}
	}
	var msgs []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			msgs = append(msgs, e.Error())
		}
	} else {
		msgs = []string{err.Error()}
	}
	return usagef("rules generate: %s", strings.Join(msgs, "; "))
}

// checkSpec warns on stderr about SLOs whose metrics the store lacks, or
// whose latency threshold is not one of the store's le bounds.
func checkSpec(cmd *cobra.Command, e *env, f rulesFlags, spec *slo.Spec) error {
	var at time.Time
	if f.at != "" {
		var err error
		if at, err = parseTime(f.at); err != nil {
			return usagef("rules generate: --at: %v", err)
		}
	}
	ctx := cmd.Context()
	logger := e.loggerAtLeast(slog.LevelWarn).With("component", "rules")
	src, at, closeSrc, err := openSource(ctx, e, "rules generate", f.sourceFlags, at, logger)
	if err != nil {
		return err
	}
	defer closeSrc()
	warns, err := slo.CheckMetrics(ctx, spec, slo.StoreLookup(src, at.Add(-checkRange), at))
	if err != nil {
		return fmt.Errorf("rules generate: %w", err)
	}
	for _, w := range warns {
		fmt.Fprintf(e.stderr, "vigil: warning: rules generate: %s\n", w)
	}
	return nil
}
