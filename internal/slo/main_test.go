package slo

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (the TSDB of
// TestStoreLookup, promtool's pipes).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
