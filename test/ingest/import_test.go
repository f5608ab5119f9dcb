package ingest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// vigilCmd runs the vigil binary to completion and returns its exit code,
// stdout and stderr.
func vigilCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), peertest.Vigil(t), args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stdout.String(), stderr.String()
}

// writeDump writes a Prometheus text dump (timestamps in milliseconds) of
// the series gpu_util{gpu="0".."3"}, one sample every 15 s for span up to
// end, and returns its path and the samples of each gpu.
func writeDump(t *testing.T, dir, name string, end time.Time, span time.Duration) (string, map[string][]point) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# TYPE gpu_util gauge\n")
	want := map[string][]point{}
	for gpu := range 4 {
		g := strconv.Itoa(gpu)
		for ts := end.Add(-span).Truncate(time.Second); !ts.After(end); ts = ts.Add(15 * time.Second) {
			p := point{T: ts.UnixMilli(), Raw: strconv.FormatFloat(float64(gpu)*10+float64(ts.Unix()%97)/4, 'f', -1, 64)}
			fmt.Fprintf(&b, "gpu_util{gpu=%q,file=%q} %s %d\n", g, name, p.Raw, p.T)
			want[g] = append(want[g], p)
		}
	}
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path, want
}

// TestImportIntoRunningServer imports files while a server holds the data
// directory: --data-dir fails with the lock message (and writes nothing),
// --server sends the file through the server's remote-write endpoint and
// the samples are queryable exactly, and a file older than the server's
// out-of-order window fails with a message that says so and what to do —
// which then works: stopped server, --data-dir, restart.
func TestImportIntoRunningServer(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	srv := startVigil(t, dir, "")
	data := filepath.Join(dir, "data")
	now := time.Now()
	recent, want := writeDump(t, dir, "recent.prom", now, 10*time.Minute)

	code, stdout, stderr := vigilCmd(t, "import", "--data-dir", data, recent)
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Empty(t, stdout)
	requireOneLine(t, strings.TrimSpace(stderr), "locked by another process", data, "--server URL")
	require.NotContains(t, stderr, "goroutine")
	entries, err := os.ReadDir(data)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoFileExists(t, filepath.Join(data, e.Name(), "meta.json"), "no block written")
	}

	code, stdout, stderr = vigilCmd(t, "import", "--server", srv.URL, recent)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, fmt.Sprintf("sent 4 series, %d samples from 1 file(s) to %s", 4*len(want["0"]), srv.URL))
	requireDump(t, srv, "recent.prom", now, want)

	old, wantOld := writeDump(t, dir, "old.prom", now.Add(-48*time.Hour), time.Hour)
	code, stdout, stderr = vigilCmd(t, "import", "--server", srv.URL, old)
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	requireOneLine(t, strings.TrimSpace(stderr), "too_old", "out-of-order window", "--data-dir")
	srv.requireReady(t)
	requireDump(t, srv, "recent.prom", now, want)

	// What the message says to do works.
	require.NoError(t, srv.Stop())
	code, stdout, stderr = vigilCmd(t, "import", "--data-dir", data, old)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	srv = startVigil(t, dir, "")
	requireDump(t, srv, "old.prom", now.Add(-48*time.Hour), wantOld)
	requireDump(t, srv, "recent.prom", now, want)
	require.NoError(t, srv.Stop())
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}

// requireDump requires the server to hold exactly the samples of a dump.
func requireDump(t *testing.T, srv *server, file string, end time.Time, want map[string][]point) {
	t.Helper()
	res := srv.query(t, fmt.Sprintf(`gpu_util{file=%q}[2h]`, file), end)
	got := map[string][]point{}
	for _, s := range res {
		got[s.Metric["gpu"]] = s.Points
	}
	require.Equal(t, want, got, file)
}
