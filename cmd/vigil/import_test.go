package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

const fixtureAt = "2026-01-01T00:00:00Z"

func fixtures(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "exposition", "*.prom"))
	require.NoError(t, err)
	require.Len(t, files, 6)
	return files
}

func TestImportFixturesJSON(t *testing.T) {
	dir := t.TempDir()
	files := fixtures(t)
	r := runVigil(t, "", append([]string{"import", "--data-dir", dir, "--at", fixtureAt, "--json"}, files...)...)
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stderr)
	rep := decodeOne[importReport](t, r.stdout)
	at, err := time.Parse(time.RFC3339, fixtureAt)
	require.NoError(t, err)
	require.Equal(t, dir, rep.DataDir)
	require.Equal(t, len(files), rep.Files)
	require.Positive(t, rep.Series)
	require.Equal(t, rep.Series, rep.Samples, "one sample per series: none of the fixtures has timestamps")
	require.Equal(t, 1, rep.Blocks)
	require.Equal(t, at, rep.MinTime)
	require.Equal(t, at, rep.MaxTime)

	s := openStore(t, dir)
	v, _, err := store.Query(t.Context(), s, "count({__name__=~\".+\"})", at)
	require.NoError(t, err)
	require.Equal(t, float64(rep.Series), v.(promql.Vector)[0].F, "every series is in the store")
	v, _, err = store.Query(t.Context(), s, `vllm:num_requests_running{model_name="facebook/opt-125m"}`, at)
	require.NoError(t, err)
	require.Len(t, v.(promql.Vector), 1)
}

func TestImportText(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "import", "--data-dir", dir, "--at", fixtureAt, filepath.Join("..", "..", "testdata", "exposition", "triton.prom"))
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stderr)
	require.Regexp(t, `^imported [1-9][0-9]* series, [1-9][0-9]* samples from 1 file\(s\) into `+dir+`: 1 block\(s\), 2026-01-01T00:00:00Z to 2026-01-01T00:00:00Z\n$`, r.stdout)
}

func TestImportStdin(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "exposition", "vllm.prom")
	content, err := os.ReadFile(path)
	require.NoError(t, err)

	fromFile := runVigil(t, "", "import", "--data-dir", t.TempDir(), "--at", fixtureAt, "--json", path)
	require.NoError(t, fromFile.err, fromFile.stderr)
	dir := t.TempDir()
	fromStdin := runVigil(t, string(content), "import", "--data-dir", dir, "--at", fixtureAt, "--json", "-")
	require.NoError(t, fromStdin.err, fromStdin.stderr)

	want, got := decodeOne[importReport](t, fromFile.stdout), decodeOne[importReport](t, fromStdin.stdout)
	require.Positive(t, got.Samples)
	require.Equal(t, want.Series, got.Series)
	require.Equal(t, want.Samples, got.Samples)

	r := runVigil(t, string(content), "import", "--data-dir", dir, "-", "-")
	requireUsage(t, r, `"-" (standard input) given twice`)
}

func TestImportMalformed(t *testing.T) {
	dir := t.TempDir()
	// An earlier import, which a failed one must leave as it is.
	r := runVigil(t, "", "import", "--data-dir", dir, "--at", fixtureAt, filepath.Join("..", "..", "testdata", "exposition", "tgi.prom"))
	require.NoError(t, r.err, r.stderr)
	before := tree(t, dir)

	bad := filepath.Join(t.TempDir(), "bad.prom")
	require.NoError(t, os.WriteFile(bad, []byte("# TYPE up gauge\nup{job=\"a\"} 1\nup{job=\"b\" 1\n"), 0o644))
	good := filepath.Join("..", "..", "testdata", "exposition", "vllm.prom")
	r = runVigil(t, "", "import", "--data-dir", dir, "--at", fixtureAt, good, bad)
	requireUsage(t, r, bad+":3: ")
	require.Equal(t, before, tree(t, dir), "the data directory is unchanged")
}

// tree lists the files under dir with their sizes.
func tree(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, dir)] = info.Size()
		return nil
	}))
	return out
}

// openStore opens the embedded store in dir, keeping everything, and closes
// it when the test ends.
func openStore(t *testing.T, dir string) *store.Embedded {
	t.Helper()
	cfg := store.DefaultEmbeddedConfig(dir)
	cfg.Retention = 100 * 365 * 24 * time.Hour
	s, err := store.OpenEmbedded(cfg, nil, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// queryStore evaluates an instant query over s at its current time.
func queryStore(t *testing.T, s store.Store, q string) promql.Vector {
	t.Helper()
	v, _, err := store.Query(t.Context(), s, q, s.Now())
	require.NoError(t, err)
	return v.(promql.Vector)
}

// TestImportLockedDir imports into a directory another process holds: exit
// 1, and the message names the lock and the way round it.
func TestImportLockedDir(t *testing.T) {
	dir := t.TempDir()
	release, err := store.LockDir(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, release()) }()
	r := runVigil(t, "", "import", "--data-dir", dir, "--at", fixtureAt, filepath.Join("..", "..", "testdata", "exposition", "triton.prom"))
	require.Equal(t, 1, r.code, r.stderr)
	requireOneLine(t, r, "data directory is locked by another process (a running vigil serve?): send the files through it with --server URL instead")
	require.Empty(t, r.stdout)
}
