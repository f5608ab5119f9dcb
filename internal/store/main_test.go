package store_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: the TSDB, the
// PromQL engine and the HTTP clients all start their own.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
