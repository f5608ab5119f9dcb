package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		contains string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"misspelt command", []string{"serv"}, `unknown command "serv" for "vigil" (did you mean serve?)`},
		{"unknown flag", []string{"version", "--frob"}, "unknown flag: --frob"},
		{"unknown root flag", []string{"--frob", "version"}, "unknown flag: --frob"},
		{"unknown shorthand", []string{"version", "-z"}, "unknown shorthand flag: 'z'"},
		{"extra argument", []string{"version", "extra"}, `unknown command "extra"`},
		{"flag without value", []string{"serve", "--listen"}, "flag needs an argument: --listen"},
		{"bad log level", []string{"--log-level", "bogus", "version"}, `--log-level must be debug, info, warn or error, got "bogus"`},
		{"serve takes no arguments", []string{"serve", "now"}, `unknown command "now" for "vigil serve"`},
		{"bad retention", []string{"serve", "--retention", "15x"}, `invalid argument "15x" for "--retention" flag`},
		{"negative retention", []string{"serve", "--retention", "-1d"}, `invalid argument "-1d" for "--retention" flag`},
		{"zero retention", []string{"serve", "--retention", "0s"}, "serve: --retention: must be positive, got 0s"},
		{"bad listen", []string{"serve", "--listen", "nope"}, `serve: --listen: "nope" is not host:port (missing port in address)`},
		{"empty data dir", []string{"serve", "--data-dir", ""}, "serve: --data-dir: must not be empty"},
		{"missing config", []string{"serve", "--config", "does-not-exist.yml"}, "read config: open does-not-exist.yml: no such file or directory"},
		{"import without files", []string{"import", "--data-dir", "x"}, "requires at least 1 arg(s), only received 0"},
		{"import without data dir", []string{"import", "../../testdata/exposition/vllm.prom"}, "import: --data-dir DIR or --server URL is required"},
		{"import bad at", []string{"import", "--data-dir", "x", "--at", "yesterday", "f.prom"}, `import: --at: time "yesterday" is neither RFC 3339 nor Unix seconds`},
		{"import bad format", []string{"import", "--data-dir", "x", "--format", "csv", "f.prom"}, `import: --format must be auto, openmetrics or prometheus, got "csv"`},
		{"import bad block duration", []string{"import", "--data-dir", "x", "--block-duration", "90m", "f.prom"}, "import: --block-duration must be a whole number of hours, got 1h30m0s"},
		{"import missing file", []string{"import", "--data-dir", "x", "no-such-file.prom"}, "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			r := runVigil(t, "", tt.args...)
			requireUsage(t, r, tt.contains)
			var ue usageError
			require.True(t, errors.As(r.err, &ue))
		})
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"serve", "--help"}, {"help", "import"}} {
		r := runVigil(t, "", args...)
		require.NoError(t, r.err, "%v", args)
		require.Contains(t, r.stdout, "Usage:", "%v", args)
		require.Empty(t, r.stderr, "%v", args)
	}
}

func TestExitCode(t *testing.T) {
	f := func(err error, want int) {
		t.Helper()
		require.Equal(t, want, exitCode(err))
	}
	f(nil, 0)
	f(usagef("bad"), 2)
	f(errors.Join(errors.New("other"), usagef("bad")), 2)
	f(errors.New("disk full"), 1)
}
