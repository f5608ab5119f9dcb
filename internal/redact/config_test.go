package redact

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the expected errors in testdata/bad/*.err")

// load reads a redaction section the way vigil.yaml's loader does: the
// defaults, overwritten by the fields the file sets, then Validate.
func load(path string) (Config, error) {
	cfg := Default()
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && err.Error() != "EOF" {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func TestConfigGood(t *testing.T) {
	tests := map[string]Config{
		"empty.yml": Default(),
		"keep.yml":  {GenAIContent: GenAIKeep},
		"full.yml": {
			GenAIContent: GenAIHash, HashKey: "change-me", GenAIKeys: []string{"myapp.llm.prompt"},
			Allow: []string{"^AKIAIOSFODNN7EXAMPLE$"}, Deny: []string{"acme-[0-9a-f]{8}", `employee_id=(\d+)`},
			DenyKeys: []string{"x-internal-auth"}, AllowKeys: []string{"app.session_token"}, DisableRules: []string{"basic-auth"},
		},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "good", "*.yml"))
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every file in testdata/good has a case here")
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := load(filepath.Join("testdata", "good", name))
			require.NoError(t, err)
			require.Equal(t, want, got)
			_, err = New(got, nil)
			require.NoError(t, err)
		})
	}
}

// TestConfigBad checks each file in testdata/bad against the error in its
// .err sibling (go test -update rewrites them). Validation errors are
// *FieldError naming the field and, for lists, the index.
func TestConfigBad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yml")
		t.Run(name, func(t *testing.T) {
			cfg, err := load(path)
			require.Error(t, err)
			msg := err.Error()
			{
				var fe *FieldError
				require.True(t, errors.As(err, &fe), "a *FieldError in %q", msg)
				require.True(t, strings.HasPrefix(msg, fe.Field+": "), msg)
				_, err := New(cfg, nil)
				require.ErrorContains(t, err, "redaction config: "+msg)
			}
			golden := strings.TrimSuffix(path, ".yml") + ".err"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(msg+"\n"), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, strings.TrimSpace(string(want)), msg)
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg := Default()
	require.NoError(t, cfg.Validate())
	require.Equal(t, GenAIDrop, cfg.GenAIContent)
	require.NoError(t, (&Config{}).Validate(), "the zero Config is valid")
}
