package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/store"
)

// writeConfig writes a vigil.yaml for a test server: data in dir, HTTP on
// listen, its own metrics stored every second.
func writeConfig(t *testing.T, dir, listen string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vigil.yaml")
	cfg := "storage:\n  data_dir: " + dir + "\nweb:\n  listen: " + listen + "\nself_monitoring:\n  interval: 1s\n"
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func TestServe(t *testing.T) {
	// Registered first, the leak check runs after every other cleanup.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "from-flag")
	// The file's data directory and port 1 are overridden by flags.
	cfg := writeConfig(t, filepath.Join(tmp, "from-config"), "127.0.0.1:1")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := startServe(t, ctx, "serve", "--config", cfg, "--data-dir", dir, "--listen", "127.0.0.1:0", "--retention", "2h")

	// Vigil stores its own metrics: up{job="vigil"} appears after the first
	// interval.
	s.waitFor(t, func() bool { return len(queryVector(t, s, `up{job="vigil"}`)) == 1 }, `up{job="vigil"}`)
	up := queryVector(t, s, `up{job="vigil"}`)[0]
	require.Equal(t, strings.TrimPrefix(s.url, "http://"), up.Metric["instance"])
	require.Equal(t, "1", up.Value[1])
	s.waitFor(t, func() bool { return len(queryVector(t, s, `vigil_build_info{job="vigil"}`)) == 1 }, "vigil_build_info")

	// Flags override the file.
	code, body := s.get(t, "/api/v1/status/flags")
	require.Equal(t, http.StatusOK, code, body)
	var flags struct {
		Data map[string]string `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &flags))
	require.Equal(t, "2h", flags.Data["storage.tsdb.retention.time"])
	require.Equal(t, dir, flags.Data["storage.tsdb.path"])
	code, body = s.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "vigil_build_info{")
	require.Contains(t, body, "prometheus_tsdb_head_series ")

	// A running server holds the directory: import fails and says why.
	r := runVigil(t, "", "import", "--data-dir", dir, "--at", fixtureAt, filepath.Join("..", "..", "testdata", "exposition", "tgi.prom"))
	require.Equal(t, 1, r.code, r.stderr)
	requireOneLine(t, r, "data directory is locked by another process (a running vigil serve?)")

	// So does a second server.
	r = runVigil(t, "", "serve", "--data-dir", dir, "--listen", "127.0.0.1:0")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "vigil: serve: open data directory "+dir+": data directory is locked by another process")

	cancel()
	require.NoError(t, <-s.done)
	logs := s.stderr.String()
	require.NotContains(t, logs, "level=ERROR")
	httpStopped, storeClosed := strings.Index(logs, "msg=\"HTTP server stopped\""), strings.Index(logs, "msg=\"store closed\"")
	require.Positive(t, httpStopped, logs)
	require.Greater(t, storeClosed, httpStopped, "the HTTP server stops before the store closes:\n%s", logs)
	require.Empty(t, s.stdout.String())
	_, err := os.Stat(filepath.Join(tmp, "from-config"))
	require.ErrorIs(t, err, os.ErrNotExist, "--data-dir overrides storage.data_dir")

	// The TSDB was closed cleanly: the directory is free and what was
	// stored is there.
	st := openStore(t, dir)
	v := queryStore(t, st, `count_over_time(up{job="vigil"}[1h])`)
	require.Len(t, v, 1)
}

func TestServeBadConfig(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"bad duration", "storage:\n  retention: 15x\n", `:2: storage.retention: "15x" is not a duration`},
		{"unknown field", "web:\n  listen: \":9700\"\n  lissen: \":9701\"\n", ":3: web.lissen: unknown field"},
		{"invalid YAML", "storage:\n\tretention: 1d\n", ":2: invalid YAML: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.yml")
			require.NoError(t, os.WriteFile(path, []byte(tt.yaml), 0o644))
			r := runVigil(t, "", "serve", "--config", path)
			requireUsage(t, r, path+tt.want)
		})
	}
}

func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := t.TempDir()
	r := runVigil(t, "", "serve", "--data-dir", dir, "--listen", ln.Addr().String())
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "vigil: serve: listen on "+ln.Addr().String()+": address already in use")
	require.Equal(t, 1, strings.Count(r.stderr, "level=ERROR")+strings.Count(r.stderr, "vigil: "), "one error line:\n%s", r.stderr)
	// The store was closed on the way out.
	release, err := store.LockDir(dir, nil)
	require.NoError(t, err)
	require.NoError(t, release())
}
