package fileimport_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
)

// crashEnv makes the test binary an importer that dies after moving the
// second block into the directory it names (TestCrashBetweenBlockRenames).
const crashEnv = "VIGIL_FILEIMPORT_CRASH_DIR"

// TestMain checks that no test leaves a goroutine behind: OpenTemp opens a
// TSDB and a PromQL engine, which start their own.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		os.Exit(crashingImport(dir))
	}
	goleak.VerifyTestMain(m)
}

// crashingImport writes crashImport into dir and exits with 3 right after
// its second block's rename, as a kill -9 there would leave it.
func crashingImport(dir string) int {
	f, err := fileimport.Read("six-hours.prom", strings.NewReader(crashImport()), opts())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fileimport.SetAfterBlockMove(func(i int) {
		if i == 1 {
			os.Exit(3)
		}
	})
	if _, err := fileimport.WriteBlocks(context.Background(), dir, []*fileimport.File{f}, 0, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
