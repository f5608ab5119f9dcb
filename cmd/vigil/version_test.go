package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	r := runVigil(t, "", "version")
	require.NoError(t, r.err)
	require.Empty(t, r.stderr)
	require.Regexp(t, `^vigil \S+ \(revision \S+, built \S+, go[0-9.]+\S*\)\n$`, r.stdout)
	require.True(t, strings.HasPrefix(r.stdout, "vigil "+buildinfo.Version+" "), r.stdout)
}

func TestVersionJSON(t *testing.T) {
	r := runVigil(t, "", "version", "--json")
	require.NoError(t, r.err)
	require.Empty(t, r.stderr)
	got := decodeOne[map[string]string](t, r.stdout)
	require.Equal(t, buildinfo.Version, got["version"])
	require.Equal(t, runtime.Version(), got["goVersion"])
	for _, k := range []string{"revision", "branch", "buildDate"} {
		require.Contains(t, got, k)
	}
}

// decodeOne decodes s, which must hold exactly one JSON object.
func decodeOne[T any](t *testing.T, s string) T {
	t.Helper()
	require.True(t, strings.HasPrefix(s, "{"), "stdout starts with an object: %q", s)
	dec := json.NewDecoder(strings.NewReader(s))
	var v T
	require.NoError(t, dec.Decode(&v))
	require.False(t, dec.More(), "more than one JSON value on stdout: %q", s)
	require.Equal(t, "\n", s[dec.InputOffset():], "only a newline after the object")
	return v
}
