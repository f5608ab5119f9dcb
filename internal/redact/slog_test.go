package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/slogtest"

	"github.com/stretchr/testify/require"
)

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

type creds struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

type panicky struct{}

func (*panicky) String() string { panic("boom") }

type valuer struct{}

func (valuer) LogValue() slog.Value {
	return slog.StringValue("Authorization: Bearer " + strings.Repeat("z9", 12))
}

func TestHandler(t *testing.T) {
	r := newTestRedactor(t, Default())
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var next slog.Handler = slog.NewJSONHandler(&buf, nil)
			if format == "text" {
				next = slog.NewTextHandler(&buf, nil)
			}
			log := slog.New(NewHandler(next, r)).With("api_key", "k-123456", "svc", "gw")
			log.Info("calling upstream with "+pat,
				"url", "https://u:p4ssw0rd-xyz@db/x",
				"err", fmt.Errorf("dial: token=%s refused", "tok-abcdef123"),
				"who", stringer{"bearer " + strings.Repeat("Ab1", 8)},
				"creds", creds{User: "bob", Password: "pw-hunter2-xyz"},
				"raw", []byte("password=bytes-secret-1"),
				"lazy", valuer{},
				"bad", (*panicky)(nil),
				slog.Group("db", "password", "grp-secret-1", "host", "db-0"),
				"gen_ai.prompt", "tell me the launch codes",
				"n", 3,
			)
			log.WithGroup("oauth").Info("refresh", "client_secret", "cs-secret-42", "expires_in", 3600)
			out := buf.String()
			for _, secret := range []string{pat, "k-123456", "p4ssw0rd-xyz", "tok-abcdef123", strings.Repeat("Ab1", 8), "pw-hunter2-xyz",
				"bytes-secret-1", strings.Repeat("z9", 12), "grp-secret-1", "launch codes", "cs-secret-42"} {
				require.NotContains(t, out, secret)
			}
			for _, kept := range []string{"gw", "db-0", "bob", "3600", "calling upstream with [REDACTED:github-token]", "[REDACTED:genai-content]"} {
				require.Contains(t, out, kept)
			}
			if format == "json" {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				require.Len(t, lines, 2)
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
				require.Equal(t, "[REDACTED:secret-key]", rec["api_key"])
				require.Equal(t, map[string]any{"password": "[REDACTED:secret-key]", "host": "db-0"}, rec["db"])
				require.Equal(t, float64(3), rec["n"], "numbers stay numbers")
				require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
				require.Equal(t, map[string]any{"client_secret": "[REDACTED:secret-key]", "expires_in": float64(3600)}, rec["oauth"])
			}
		})
	}
}

// TestHandlerContract runs the standard library's handler conformance
// tests through the redacting handler.
func TestHandlerContract(t *testing.T) {
	var buf bytes.Buffer
	r := newTestRedactor(t, Default())
	h := NewHandler(slog.NewJSONHandler(&buf, nil), r)
	err := slogtest.TestHandler(h, func() []map[string]any {
		var out []map[string]any
		for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	})
	require.NoError(t, err)
}

func TestHandlerEnabled(t *testing.T) {
	r := newTestRedactor(t, Default())
	h := NewHandler(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}), r)
	require.False(t, h.Enabled(t.Context(), slog.LevelInfo))
	require.True(t, h.Enabled(t.Context(), slog.LevelError))
	require.Same(t, h, h.WithGroup(""))
}
