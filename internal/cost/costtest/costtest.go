// Package costtest holds test helpers over internal/cost's hand-computed
// hour (testdata/hand.om, whose figures internal/cost's cost_test.go
// works out by hand).
package costtest

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
)

// HandFile is the path of the hand-computed hour.
func HandFile(t testing.TB) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	require.True(t, ok, "locate costtest")
	return filepath.Join(filepath.Dir(self), "..", "testdata", "hand.om")
}

// HandStore loads the hand-computed hour into a temporary store, closed
// with the test.
func HandStore(t testing.TB) *fileimport.TempStore {
	t.Helper()
	name := HandFile(t)
	fh, err := os.Open(name)
	require.NoError(t, err)
	f, err := fileimport.Read(name, fh, fileimport.DefaultOptions(time.Now()))
	require.NoError(t, fh.Close())
	require.NoError(t, err)
	st, err := fileimport.OpenTemp(t.Context(), []*fileimport.File{f}, time.Now, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}
