package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIncidentsCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := startServe(t, ctx, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	defer func() {
		cancel()
		require.NoError(t, <-s.done)
	}()

	r := runVigil(t, "", "incidents", "--server", s.url, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var got map[string][]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Contains(t, got, "incidents")
	require.Empty(t, got["incidents"])

	r = runVigil(t, "", "incidents", "--server", s.url)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "No incidents.\n", r.stdout)

	code, body := s.get(t, "/api/v1/incidents/nope")
	require.Equal(t, http.StatusNotFound, code, body)
	code, body = s.get(t, "/api/v1/incidents?state=odd")
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = s.get(t, "/api/v1/alerts")
	require.Equal(t, http.StatusOK, code, body)
	// Nothing fires on an empty store but the dead man's switch, once the
	// first cycle has run.
	var alerts struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
			} `json:"alerts"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &alerts), body)
	for _, a := range alerts.Data.Alerts {
		require.Equal(t, "VigilWatchdog", a.Labels["alertname"], body)
	}
	code, body = s.get(t, "/api/v1/rules")
	require.Equal(t, http.StatusOK, code, body)
}

func TestIncidentsBadInput(t *testing.T) {
	requireUsage(t, runVigil(t, "", "incidents", "--state", "open"), "--state must be firing or resolved")
	requireUsage(t, runVigil(t, "", "incidents", "--server", "localhost:9700"), "is not an http:// or https:// URL")
	r := runVigil(t, "", "incidents", "--server", "http://127.0.0.1:1")
	require.Equal(t, 1, r.code)
	requireOneLine(t, r, "incidents:")
}
