package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/store"
)

// TestReplay runs serve's pipeline over a simulated NVLink fault's file:
// the first page comes after the onset and names the fault as its rank-1
// cause, the answer at that instant is what vigil diagnose --at says,
// the same data gives the same bytes, and the healthy minutes before the
// onset page nothing.
func TestReplay(t *testing.T) {
	d := writeDump(t, t.TempDir(), "nvlink_degraded", smallCluster(1))
	f := d.truth[0]
	from, to := d.cfg.Start.Add(10*time.Minute), d.end()
	args := []string{"replay", "--json", "--input", d.path, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}
	r := runVigil(t, "", args...)
	require.NoError(t, r.err, r.stderr)
	rep := decodeOne[replayReport](t, r.stdout)
	require.True(t, rep.From.Equal(from) && rep.To.Equal(to))
	require.Equal(t, "30s", rep.Interval)
	var first *replayPage
	for i, p := range rep.Pages {
		if p.Severity == "page" && len(p.Causes) > 0 {
			first = &rep.Pages[i]
			break
		}
	}
	require.NotNil(t, first, "no page with a cause: %+v", rep.Pages)
	require.False(t, first.At.Before(f.Onset), "paged at %s, before the onset %s", first.At, f.Onset)
	require.Equal(t, f.Kind, first.Causes[0].Kind)
	require.True(t, eval.EntityMatch(f.Entity, first.Causes[0].Entity), "rank 1 names %v, the fault is on %v", first.Causes[0].Entity, f.Entity)
	require.Equal(t, 1, first.Revision)
	require.NotEmpty(t, rep.Incident)

	// The same instant through vigil diagnose --at.
	dr, _ := diagnoseJSON(t, "--input", d.path, "--at", first.At.Format(time.RFC3339))
	require.NotEmpty(t, dr.Causes)
	require.Equal(t, first.Causes[0].Kind, dr.Causes[0].Kind)
	require.Equal(t, first.Causes[0].Entity, dr.Causes[0].Entity)

	again := runVigil(t, "", args...)
	require.NoError(t, again.err)
	require.Equal(t, r.stdout, again.stdout, "same data, same bytes")

	// Before the onset: nothing pages.
	quiet := runVigil(t, "", "replay", "--json", "--input", d.path, "--from", from.Format(time.RFC3339),
		"--to", f.Onset.Add(-time.Minute).Format(time.RFC3339))
	require.NoError(t, quiet.err, quiet.stderr)
	q := decodeOne[replayReport](t, quiet.stdout)
	for _, p := range q.Pages {
		require.NotEqual(t, "page", p.Severity, "paged before the onset: %+v", p)
	}

	text := runVigil(t, "", "replay", "--input", d.path, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339))
	require.NoError(t, text.err)
	require.Contains(t, text.stdout, "PAGE")
	require.Contains(t, text.stdout, f.Kind)
}

// TestReplayUsage: bad input gets one line and exit 2.
func TestReplayUsage(t *testing.T) {
	d := writeDump(t, t.TempDir(), "nvlink_degraded", smallCluster(2))
	from, to := d.cfg.Start.Add(10*time.Minute).Format(time.RFC3339), d.end().Format(time.RFC3339)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>login</html>"))
	}))
	defer html.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer denied.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"--from", from, "--to", to}, "give exactly one of --input FILE, --prometheus URL or --server URL"},
		{"no range", []string{"--input", d.path}, "give --from and --to"},
		{"from after to", []string{"--input", d.path, "--from", to, "--to", from}, "must be before --to"},
		{"bad from", []string{"--input", d.path, "--from", "yesterday", "--to", to}, "--from"},
		{"bad interval", []string{"--input", d.path, "--from", from, "--to", to, "--interval", "0s"}, "--interval must be positive"},
		{"unreachable", []string{"--prometheus", "http://127.0.0.1:1", "--from", from, "--to", to}, "--prometheus"},
		{"HTML", []string{"--prometheus", html.URL, "--from", from, "--to", to}, "not Prometheus API JSON"},
		{"401", []string{"--server", denied.URL, "--from", from, "--to", to}, "HTTP 401"},
		{"no data in the range", []string{"--input", d.path, "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T01:00:00Z"}, "no data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireUsage(t, runVigil(t, "", append([]string{"replay"}, tc.args...)...), tc.want)
		})
	}
}

// TestReplaySettled: the files' store read through store.Settled (each
// instant reads only what the previous did not) gives the replay the
// same answer, byte for byte, as the store read whole at every instant.
func TestReplaySettled(t *testing.T) {
	d := writeDump(t, t.TempDir(), "nvlink_degraded", smallCluster(1))
	from, to := d.cfg.Start.Add(10*time.Minute), d.end()
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, now: time.Now}
	logger := slog.New(slog.DiscardHandler)
	src, _, closeSrc, err := openSource(t.Context(), e, "replay", sourceFlags{inputs: []string{d.path}}, to, logger)
	require.NoError(t, err)
	defer func() { require.NoError(t, closeSrc()) }()
	f := replayFlags{interval: 30 * time.Second}
	run := func(read storage.Queryable) []byte {
		clock := from
		rep, err := replay(t.Context(), read, from, to, f, func() time.Time { return clock }, func(at time.Time) { clock = at }, logger)
		require.NoError(t, err)
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		return b
	}
	whole := run(src)
	require.Contains(t, string(whole), `"severity":"page"`)
	require.Equal(t, string(whole), string(run(store.NewSettled(src, 1<<26))))
}
