package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestUIMount: Options.UI takes the paths no other handler does, and
// leaves /api/v1/, /metrics and the probes to the API.
func TestUIMount(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the UI")) })
	reg := prometheus.NewRegistry()
	h, err := api.New(api.Options{Store: openStore(t, store.DefaultEngineConfig()), Gatherer: reg, Registerer: reg, QueryTimeout: time.Minute, UI: ui})
	require.NoError(t, err)
	h.SetReady(true)
	srv := httptest.NewServer(h)
	defer srv.Close()
	f := func(path string, ui bool) {
		t.Helper()
		_, body := get(t, srv, path)
		if ui {
			require.Equal(t, "the UI", body, path)
		} else {
			require.NotEqual(t, "the UI", body, path)
		}
	}
	f("/", true)
	f("/incidents", true)
	f("/incidents/abc", true)
	f("/gpus", true)
	f("/api/v1/query?query=1", false)
	f("/api/v1/nope", false)
	f("/metrics", false)
	f("/-/healthy", false)
	f("/-/ready", false)
}
