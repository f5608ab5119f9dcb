package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUIOnTheAPIListener: the web UI answers at / on the API's listener,
// beside the API, the metrics and the probes, which it leaves alone.
func TestUIOnTheAPIListener(t *testing.T) {
	s := New(Options{Config: testConfig(t, t.TempDir())})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	base := "http://" + s.Addr().String()
	f := func(path string, code int, want string) {
		t.Helper()
		got, body := get(t, base+path)
		require.Equal(t, code, got, path)
		require.Contains(t, body, want, path)
	}
	f("/", http.StatusOK, "<title>Incidents · Vigil</title>")
	f("/incidents", http.StatusOK, "Nothing is open")
	f("/incidents/nope", http.StatusNotFound, "There is no incident")
	f("/api/v1/incidents", http.StatusOK, `"incidents":[]`)
	f("/gpus", http.StatusOK, "No GPU reports to Vigil")
	f("/api/v1/gpus", http.StatusOK, `"gpus":0`)
	f("/api/v1/query?query=1", http.StatusOK, `"status":"success"`)
	f("/-/healthy", http.StatusOK, "Vigil is Healthy.")
	f("/-/ready", http.StatusOK, "Vigil is Ready.")
	f("/metrics", http.StatusOK, "# TYPE")
}
