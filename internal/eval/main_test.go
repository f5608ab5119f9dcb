package eval

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: Run starts
// workers, and each case an embedded store.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
