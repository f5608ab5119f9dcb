package ui

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCut(t *testing.T) {
	f := func(s string, n int, want string) {
		t.Helper()
		require.Equal(t, want, cut(s, n))
	}
	f("gateway · POST /v1/chat", 40, "gateway · POST /v1/chat")
	f("gateway · POST /v1/chat", 10, "gateway ·…")
	f("vector-db", 0, "v…")
	f("", 0, "")
	f("αβγδ", 3, "αβ…")
}
