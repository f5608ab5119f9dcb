package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A journal that cannot be read (a torn write cannot happen, it is renamed
// into place, but a hand-edited or foreign file can) is removed with a
// warning and moves nothing; one whose blocks are all in place is just
// removed; names that leave the directory are never touched.
func TestRecoverBlockMovesBadJournals(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"+journalSuffix), []byte("{not json"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "01BLOCK"), 0o755))
	require.NoError(t, writeJournal(filepath.Join(dir, "b"+journalSuffix), blockJournal{Staging: "b.tmp-for-creation", Blocks: []string{"01BLOCK"}}))
	require.NoError(t, writeJournal(filepath.Join(dir, "c"+journalSuffix), blockJournal{Staging: "../" + filepath.Base(outside), Blocks: []string{"x"}}))
	require.NoError(t, writeJournal(filepath.Join(dir, "d"+journalSuffix), blockJournal{Staging: "d.tmp-for-creation", Blocks: []string{"../" + filepath.Base(outside), "gone"}}))
	require.NoError(t, RecoverBlockMoves(dir, nil))
	left, err := filepath.Glob(filepath.Join(dir, "*"+journalSuffix))
	require.NoError(t, err)
	require.Empty(t, left)
	require.DirExists(t, filepath.Join(dir, "01BLOCK"), "a finished move stays")
	require.DirExists(t, outside, "nothing outside the directory is removed")
}
