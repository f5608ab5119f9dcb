package redacttest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretsDeterministic(t *testing.T) {
	a, b := Secrets(42, 2), Secrets(42, 2)
	require.Equal(t, a, b)
	require.Len(t, a, 2*len(SecretKinds()))
	require.NotEqual(t, a, Secrets(43, 2))
	require.Equal(t, LookAlikes(7, 3), LookAlikes(7, 3))
	require.Len(t, LookAlikes(7, 3), 3*len(LookAlikeKinds()))
}

// TestSecretsShape: every secret has its kind, a core of at least 10
// bytes, and its first core in its text (a basic-auth password is only
// there base64-encoded, so only the first core is checked).
func TestSecretsShape(t *testing.T) {
	kinds := map[string]bool{}
	for _, s := range Secrets(1, 3) {
		kinds[s.Kind] = true
		require.NotEmpty(t, s.Cores, s.Kind)
		for _, c := range s.Cores {
			require.GreaterOrEqual(t, len(c), 10, "%s core %q", s.Kind, c)
		}
		require.Contains(t, s.Text, s.Cores[0], s.Kind)
		if s.Key != "" {
			require.Equal(t, s.Cores[0], s.Text, s.Kind)
		}
	}
	require.Len(t, kinds, len(SecretKinds()))
}

func TestDistinctive(t *testing.T) {
	f := func(core string, want []string) {
		t.Helper()
		require.Equal(t, want, Distinctive(core))
	}
	f("short-core-16byt", []string{"short-core-16byt"})
	f("abcdefghijklmnopqr", []string{"abcdefghijklmnopqr", "abcdefghijkl", "ghijklmnopqr"})
	long := strings.Repeat("x", 40)
	require.Len(t, Distinctive(long), 1+5)
}
