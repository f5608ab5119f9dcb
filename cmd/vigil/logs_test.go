package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLogsCommand(t *testing.T) {
	api := startTraceAPI(t)

	r := runVigil(t, "", "logs", "--request", api.requestID, "--server", api.url, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	got := decodeOne[struct {
		RequestID string            `json:"request_id"`
		Logs      []json.RawMessage `json:"logs"`
	}](t, r.stdout)
	require.Equal(t, api.requestID, got.RequestID)
	require.Len(t, got.Logs, api.requestLogs)
	// The request crosses services: the gateway's access log and the
	// application's lines are both there.
	services := map[string]bool{}
	for _, raw := range got.Logs {
		var rec struct {
			Service string `json:"service"`
			TraceID string `json:"trace_id"`
		}
		require.NoError(t, json.Unmarshal(raw, &rec))
		services[rec.Service] = true
		require.NotEmpty(t, rec.TraceID)
	}
	require.True(t, services["api-gateway"], "%v", services)
	require.True(t, services["ai-app"], "%v", services)

	r = runVigil(t, "", "logs", "--request", api.requestID, "--server", api.url)
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), api.requestLogs+1)
	require.Regexp(t, `^2026-11-12 02:0\d:\d\d\.\d{3}  \S+ +[A-Z]+ +.+  \[trace [0-9a-f]{32} span [0-9a-f]{16}\]$`, lines[0])
	require.Regexp(t, `^\d+ records, 1 traces$`, lines[len(lines)-1])

	// By trace: the same records here, the request being one trace.
	r = runVigil(t, "", "logs", "--trace", api.traceID, "--server", api.url, "--limit", "3", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	byTrace := decodeOne[map[string]any](t, r.stdout)
	require.Equal(t, api.traceID, byTrace["trace_id"])
	require.Len(t, byTrace["logs"], 3)

	r = runVigil(t, "", "logs", "--request", "no-such-request", "--server", api.url)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "No logs for request no-such-request.\n", r.stdout)
}

func TestLogsBadInput(t *testing.T) {
	requireUsage(t, runVigil(t, "", "logs"), "logs: give --request ID or --trace ID")
	requireUsage(t, runVigil(t, "", "logs", "--request", "a", "--trace", strings.Repeat("a", 32)), "give --request ID or --trace ID")
	requireUsage(t, runVigil(t, "", "logs", "--trace", "123"), "logs: --trace: trace id \"123\"")
	requireUsage(t, runVigil(t, "", "logs", "--request", "  "), "--request is blank")
	requireUsage(t, runVigil(t, "", "logs", "--request", "a", "--limit", "-1"), "--limit must be between 0 and 10000")
}

func TestSeverity(t *testing.T) {
	f := func(text string, n int32, want string) {
		t.Helper()
		require.Equal(t, want, severity(text, n))
	}
	f("warning", 0, "WARNING")
	f("", 9, "INFO")
	f("", 17, "ERROR")
	f("", 24, "FATAL")
	f("", 0, "-")
}
