package redaction

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScannerFindsEverySecret: the scanner finds each secret of the
// corpus in its text as sent and as a JSON string (the API's, the CLI's and
// the backend's encoding), so a secret that survived would be seen.
func TestScannerFindsEverySecret(t *testing.T) {
	cases := buildCases(2026, 5)
	for _, c := range cases {
		if !c.secret {
			continue
		}
		sc := newScanner(cases)
		j, err := json.Marshal(map[string]string{c.key: c.text})
		require.NoError(t, err)
		sc.scan("test", "text", []byte(c.text))
		sc.scan("test", "json", j)
		var outputs []string
		for _, l := range sc.leaks {
			// JWTs share the start of their payloads ({"iat":17…).
			require.Equal(t, c.kind, l.c.kind, "the secrets of different kinds share no needle")
			if l.c == c {
				outputs = append(outputs, l.output)
			}
		}
		require.ElementsMatch(t, []string{"text", "json"}, outputs, "%s: %q", c.kind, c.text)
	}
}

// TestScannerNeedsWholeNeedle: a needle cut short, or broken in the
// middle, is not a leak; benign text is not either.
func TestScannerNeedsWholeNeedle(t *testing.T) {
	cases := buildCases(2026, 5)
	sc := newScanner(cases)
	core := cases[0].cores[0]
	sc.scan("test", "short", []byte(core[:sc.width-1]))
	sc.scan("test", "broken", []byte(core[:11]+"\x00"+core[12:23]+"\x00"))
	for _, c := range cases {
		if !c.secret {
			sc.scan("test", c.id, []byte(c.text))
		}
	}
	require.Empty(t, sc.leaks)
	sc.scan("test", "whole", []byte("x"+core+"y"))
	require.Len(t, sc.leaks, 1)
}
