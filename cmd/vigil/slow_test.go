package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/hops"
)

func TestSlowCommand(t *testing.T) {
	api := startTraceAPI(t)

	r := runVigil(t, "", "slow", "--server", api.url)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Contains(t, r.stdout, "route POST /v1/chat")
	require.Regexp(t, `critical path \(medians\): API gateway [0-9.]+ ms, application`, r.stdout)
	require.Contains(t, r.stdout, "slowest traces (vigil trace ID):")

	r = runVigil(t, "", "slow", "--server", api.url, "--route", "/v1/chat", "--window", "2m", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	res := decodeOne[hops.SlowResult](t, r.stdout)
	require.Len(t, res.Routes, 1)
	rb := res.Routes[0]
	require.Equal(t, "/v1/chat", rb.Route)
	require.Equal(t, api.end.Add(-2*time.Minute), rb.From)
	require.Positive(t, rb.Traces)
	require.NotEmpty(t, rb.Services)

	// --end moves the window: before the run there is nothing.
	r = runVigil(t, "", "slow", "--server", api.url, "--end", strconv.FormatInt(api.end.Add(-time.Hour).Unix(), 10))
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "No traces in the window.\n", r.stdout)
	r = runVigil(t, "", "slow", "--server", api.url, "--route", "GET /nope", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	res = decodeOne[hops.SlowResult](t, r.stdout)
	require.Zero(t, res.Routes[0].Traces)
}

func TestSlowBadInput(t *testing.T) {
	requireUsage(t, runVigil(t, "", "slow", "--window", "fortnight"), `slow: --window "fortnight": want a duration`)
	requireUsage(t, runVigil(t, "", "slow", "--window", "0s"), "want more than 0")
	requireUsage(t, runVigil(t, "", "slow", "--end", "yesterday"), "slow: --end")
	requireUsage(t, runVigil(t, "", "slow", "extra"), `unknown command "extra"`)
	requireUsage(t, runVigil(t, "", "slow", "--server", "ftp://x"), "is not an http:// or https:// URL")
}
