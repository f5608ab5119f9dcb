package cost_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
)

// openFiles imports the files into a temporary store, as `vigil cost
// --input` does.
func openFiles(t testing.TB, names ...string) *fileimport.TempStore {
	t.Helper()
	opts := fileimport.DefaultOptions(time.Now())
	var files []*fileimport.File
	for _, name := range names {
		fh, err := os.Open(name)
		require.NoError(t, err)
		f, err := fileimport.Read(name, fh, opts)
		fh.Close()
		require.NoError(t, err)
		files = append(files, f)
	}
	s, err := fileimport.OpenTemp(t.Context(), files, time.Now, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}
