package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/drift"
	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
	"github.com/vigil-obs/vigil/internal/slo"
)

// unknownFlagError is cobra's flag error as a usage error that names the command
// and where its flags are listed:
// "diagnose: unknown flag: --foo (see 'vigil diagnose --help')".
func unknownFlagError(cmd *cobra.Command, err error) error {
	path := cmd.CommandPath()
	if name, ok := strings.CutPrefix(path, cmd.Root().Name()+" "); ok {
		return usagef("%s: %w (see '%s --help')", name, err, path)
	}
	return usagef("%w (see '%s --help')", err, path)
}

// colour reports whether output to w may be coloured: w is a terminal, and
// neither --no-color nor the NO_COLOR environment variable (set and not
// empty, https://no-color.org) says otherwise.
func (e *env) colour(w any) bool {
	if e.noColor || e.getenv("NO_COLOR") != "" {
		return false
	}
	terminal := e.terminal
	if terminal == nil {
		terminal = isTerminal
	}
	return terminal(w)
}

// getenv reads the process's environment unless the env says otherwise
// (tests).
func (e *env) getenv(key string) string {
	if e.environ != nil {
		return e.environ(key)
	}
	return os.Getenv(key)
}

// fixedCompletion completes a flag or argument from a fixed list of
// values.
func fixedCompletion(values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// withPrefix keeps the values that start with what was typed.
func withPrefix(values []string, prefix string) []string {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// scenarioNames are the names `vigil simulate --list` prints: the GPU
// cluster's scenarios, then the microservice application's.
func scenarioNames() []string {
	return append(sim.ScenarioNames(), microsvc.Scenarios()...)
}

// completeScenario completes a scenario argument (vigil demo).
func completeScenario(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(scenarioNames(), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeIncidentIDs completes an incident ID from the --server the
// command line names (best effort: nothing when it does not answer within
// 2 s), each with its severity, kind and entity as the description.
func completeIncidentIDs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	server, _ := cmd.Flags().GetString("server")
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	list, _, err := fetchIncidents(ctx, server, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := make([]cobra.Completion, 0, len(list))
	for _, i := range list {
		state := i.Severity
		if i.State != incident.StateFiring {
			state = i.State
		}
		if !strings.HasPrefix(i.ID, toComplete) {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(i.ID, fmt.Sprintf("%s %s %s", state, i.Kind, entityText(i.Entity))))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// flagValues are the flags whose values the shell completes, by command
// path and flag name (flags of a command not built here are left alone).
func flagValues() map[string]map[string]cobra.CompletionFunc {
	methods := make([]string, 0, len(drift.Methods))
	for _, m := range drift.Methods {
		methods = append(methods, string(m))
	}
	scenarios := func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(scenarioNames(), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	return map[string]map[string]cobra.CompletionFunc{
		"vigil": {"log-level": fixedCompletion("debug", "info", "warn", "error")},
		"vigil simulate": {"scenario": scenarios, "gpu-model": fixedCompletion("A100", "H100", "H200"),
			"spans": fixedCompletion(reqpath.SpansPaired, reqpath.SpansServerOnly, reqpath.SpansNoKind)},
		"vigil cost":           {"by": fixedCompletion(cost.Groupings()...)},
		"vigil eval":           {"suite": fixedCompletion(append(eval.Suites(), "nezha", "petshop")...), "scenario": scenarios},
		"vigil drift":          {"method": fixedCompletion(methods...), "bins": fixedCompletion("quantile", "sturges", "doane")},
		"vigil import":         {"format": fixedCompletion("auto", "openmetrics", "prometheus")},
		"vigil rules generate": {"format": fixedCompletion(string(slo.FormatPrometheus), string(slo.FormatPrometheusRule))},
	}
}

// registerCompletions sets the completion of values on the command tree:
// the flags of flagValues, and `vigil demo`'s scenario argument.
func registerCompletions(root *cobra.Command) {
	values := flagValues()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, f := range values[c.CommandPath()] {
			if c.Flags().Lookup(name) != nil || c.PersistentFlags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, f)
			}
		}
		if c.CommandPath() == "vigil demo" && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = completeScenario
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
