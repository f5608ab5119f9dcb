package traces

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the expected errors in testdata/config/bad/*.err")

func TestDefaultConfigIsValid(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
}

func loadConfig(t *testing.T, path string) (Config, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		Traces Config `yaml:"traces"`
	}
	doc.Traces = DefaultConfig()
	err = yaml.Unmarshal(b, &doc)
	return doc.Traces, err
}

func TestConfigGood(t *testing.T) {
	tests := map[string]func(*Config){
		"empty.yml": func(*Config) {},
		"all.yml": func(c *Config) {
			c.Dir = "/var/lib/vigil/traces"
			c.Retention = model.Duration(72 * time.Hour)
			c.MaxBytes = 2 << 30
			c.CacheBytes = 256 << 20
			c.TenantAttribute = "customer.id"
			c.CorrelationKeys = []string{"trace_request", "x-amzn-requestid"}
		},
		"no_size_bound.yml": func(c *Config) {
			c.MaxBytes = 0
			c.CorrelationKeys = []string{}
		},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "config", "good", "*.yml"))
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every file in testdata/config/good has a case here")
	for name, edit := range tests {
		t.Run(name, func(t *testing.T) {
			want := DefaultConfig()
			edit(&want)
			got, err := loadConfig(t, filepath.Join("testdata", "config", "good", name))
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestConfigBad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "config", "bad", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := loadConfig(t, f)
			require.Error(t, err)
			errFile := strings.TrimSuffix(f, ".yml") + ".err"
			if *update {
				require.NoError(t, os.WriteFile(errFile, []byte(err.Error()+"\n"), 0o644))
			}
			want, rerr := os.ReadFile(errFile)
			require.NoError(t, rerr)
			require.Equal(t, strings.TrimSpace(string(want)), err.Error())
		})
	}
}

func TestOpenNeedsDir(t *testing.T) {
	_, err := Open(DefaultConfig(), nil, nil, nil)
	require.EqualError(t, err, "traces: no directory")
}
