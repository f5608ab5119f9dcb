package fileimport_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: OpenTemp opens a
// TSDB and a PromQL engine, which start their own.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
