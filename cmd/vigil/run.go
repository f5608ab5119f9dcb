package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/eval"
)

// usageError is bad input or usage: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode maps Run's error to the process exit status: 0 done, 2 bad input
// or usage, 1 anything else.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// Run is the whole program: it parses args, runs one command and returns
// its error, having printed it in one line on stderr.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &env{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now}
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		var ue usageError
		if !errors.As(err, &ue) && isCobraUsage(err) {
			err = usageError{err}
		}
		fmt.Fprintf(stderr, "vigil: %s\n", oneLine(err.Error()))
	}
	return err
}

// isCobraUsage tells cobra's own flag and argument errors apart.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "required flag", "bad flag syntax", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// oneLine folds a message onto one line; cobra's "Did you mean this?"
// suggestions become a parenthesis.
func oneLine(s string) string {
	if msg, sugg, ok := strings.Cut(s, "\n\nDid you mean this?\n"); ok {
		s = msg + " (did you mean " + strings.Join(strings.Fields(sugg), " or ") + "?)"
	}
	return strings.Join(strings.Fields(s), " ")
}

// env is what commands get from the process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time
	logLevel       string
	// evalEngine is the engine `vigil eval` scores; nil is the real one
	// (tests give a fake).
	evalEngine eval.DiagnoseFunc
	// noColor is --no-color; environ and terminal, if set, replace
	// os.Getenv and the terminal test (tests).
	noColor  bool
	environ  func(string) string
	terminal func(any) bool
}

func (e *env) logger() *slog.Logger {
	return e.loggerAtLeast(slog.LevelDebug)
}

// loggerAtLeast logs at --log-level, but never below floor unless
// --log-level is debug.
func (e *env) loggerAtLeast(floor slog.Level) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(e.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	if lvl != slog.LevelDebug {
		lvl = max(lvl, floor)
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: lvl}))
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "vigil",
		Short: "Vigil finds why an AI cluster misbehaves",
		Long:  "Vigil stores and correlates the telemetry of AI clusters (Kubernetes, GPU, inference, request path).",
		Example: `  vigil demo
  vigil serve --config vigil.yaml
  vigil diagnose --prometheus http://prometheus:9090
  vigil completion bash > /etc/bash_completion.d/vigil`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&e.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().BoolVar(&e.noColor, "no-color", false, "never colour the output (so does a non-empty NO_COLOR in the environment); colour is only ever written to a terminal")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(e.logLevel)); err != nil {
			return usagef("--log-level must be debug, info, warn or error, got %q", e.logLevel)
		}
		return nil
	}
	root.SetFlagErrorFunc(unknownFlagError)
	root.AddCommand(newVersionCmd(e), newServeCmd(e), newImportCmd(e), newTopologyCmd(e), newSimulateCmd(e), newEvalCmd(e), newDiagnoseCmd(e), newDemoCmd(e), newDriftCmd(e), newIncidentsCmd(e), newRulesCmd(e), newTraceCmd(e), newSlowCmd(e), newLogsCmd(e), newReplayCmd(e), newCostCmd(e), newDashboardsCmd(e), newManifestsCmd(e))
	registerCompletions(root)
	return root
}

// parseTime reads RFC 3339 or Unix seconds (with a fraction).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is neither RFC 3339 nor Unix seconds", s)
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
}
