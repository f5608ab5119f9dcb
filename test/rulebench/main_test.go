package rulebench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test or benchmark leaves a goroutine behind (a
// store not closed, a server's process watcher, an idle HTTP connection).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
