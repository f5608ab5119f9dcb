package topology_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/topology"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// fixtureAt is the instant of the synthetic fixtures (and the time given to
// samples without a timestamp in the real ones).
var fixtureAt = time.Date(2026, 11, 12, 2, 50, 0, 0, time.UTC)

// realFixture is the path of a real exposition sample of the project.
func realFixture(name string) string {
	return filepath.Join("..", "..", "testdata", "exposition", name)
}

// openFiles loads files (paths, or name → content for inline text) into a
// temporary embedded store; samples without a timestamp are at fixtureAt.
func openFiles(t *testing.T, paths []string, inline map[string]string) *fileimport.TempStore {
	t.Helper()
	opts := fileimport.DefaultOptions(fixtureAt)
	var files []*fileimport.File
	for _, p := range paths {
		fh, err := os.Open(p)
		require.NoError(t, err)
		f, err := fileimport.Read(p, fh, opts)
		require.NoError(t, fh.Close())
		require.NoError(t, err)
		files = append(files, f)
	}
	for name, text := range inline {
		f, err := fileimport.Read(name, strings.NewReader(text), opts)
		require.NoError(t, err, name)
		files = append(files, f)
	}
	s, err := fileimport.OpenTemp(t.Context(), files, func() time.Time { return fixtureAt }, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// build builds the topology of files at fixtureAt with the default options.
func build(t *testing.T, paths []string, inline map[string]string) *topology.Topology {
	t.Helper()
	s := openFiles(t, paths, inline)
	topo, err := topology.Build(t.Context(), s, nil, fixtureAt, topology.DefaultOptions())
	require.NoError(t, err)
	return topo
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), string(got))
}

// jsonOf is the indented JSON of v.
func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(v))
	return buf.Bytes()
}

// textOf is the text tree of topo.
func textOf(t *testing.T, topo *topology.Topology) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, topology.WriteText(&buf, topo))
	return buf.Bytes()
}

// requireWarning checks that one warning contains every part.
func requireWarning(t *testing.T, topo *topology.Topology, parts ...string) {
	t.Helper()
	for _, w := range topo.Warnings {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w, p)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no warning contains %q; warnings:\n%s", parts, strings.Join(topo.Warnings, "\n"))
}
