package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/cost"
)

var update = flag.Bool("update", false, "rewrite the expected errors in testdata/bad/*.err")

func TestDefaultIsValid(t *testing.T) {
	cfg := Default()
	require.NoError(t, cfg.Validate())
}

// TestExampleListsDefaults keeps examples/vigil.yaml true to its claim that
// it lists the defaults.
func TestExampleListsDefaults(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "..", "examples", "vigil.yaml"))
	require.NoError(t, err)
	require.Equal(t, Default(), *cfg)
}

func TestGood(t *testing.T) {
	tests := map[string]func(*Config){
		"empty.yml":         func(*Config) {},
		"comments_only.yml": func(*Config) {},
		"empty_values.yml":  func(*Config) {},
		"partial.yml": func(c *Config) {
			c.Storage.Retention = model.Duration(30 * 24 * time.Hour)
			c.Web.Listen = "127.0.0.1:9701"
		},
		"short_retention.yml": func(c *Config) {
			c.Storage.Retention = model.Duration(6 * time.Hour)
			c.Storage.OutOfOrderWindow = model.Duration(6 * time.Hour)
		},
		"self_monitoring_off.yml": func(c *Config) {
			c.Self.Enabled = false
			c.Self.Interval = 0
		},
		"cost.yml": func(c *Config) {
			c.Cost.Currency = "USD"
			c.Cost.GPUHourly = map[string]float64{"NVIDIA H100 80GB HBM3": 4, "default": 2}
			c.Cost.NodeOverrides = []cost.NodeOverride{{Match: map[string]string{"node.kubernetes.io/instance-type": "p5.48xlarge", "spot": "true"}, GPUHourly: 1.5}}
			c.Cost.Window = 10 * time.Minute
		},
		"scrape.yml": func(c *Config) {
			c.Limits.MaxActiveSeries = 500_000
			c.Limits.MaxInflightRequests = 8
		},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "good", "*.yml"))
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every file in testdata/good has a case here")
	for name, edit := range tests {
		t.Run(name, func(t *testing.T) {
			want := Default()
			edit(&want)
			got, err := Load(filepath.Join("testdata", "good", name))
			require.NoError(t, err)
			if name == "scrape.yml" {
				require.NotNil(t, got.Scrape)
				jobs, err := got.Scrape.GetScrapeConfigs()
				require.NoError(t, err)
				require.Len(t, jobs, 1)
				require.Equal(t, "dcgm-exporter", jobs[0].JobName)
				require.Equal(t, model.Duration(15*time.Second), jobs[0].ScrapeInterval)
				got.Scrape = nil
			}
			require.Equal(t, want, *got)
		})
	}
}

// syntaxOnly says whether the error of a bad file comes from the YAML
// syntax or the file's shape rather than from one field.
func syntaxOnly(name string) bool {
	return strings.HasPrefix(name, "invalid_yaml") || name == "two_documents.yml" || name == "not_a_mapping.yml" ||
		strings.HasPrefix(name, "scrape_") || strings.HasPrefix(name, "remote_write_") // Prometheus's own loader reads these sections

}

// TestBad checks each file in testdata/bad against the error in its .err
// sibling (go test -update rewrites them). Every error is one line, names
// the file and a line, and, unless the YAML itself is broken, the field.
func TestBad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	located := regexp.MustCompile(`^` + regexp.QuoteMeta("testdata/bad/") + `[a-z_]+\.yml:[1-9][0-9]*: `)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yml"), func(t *testing.T) {
			_, err := Load(path)
			require.Error(t, err)
			msg := err.Error()
			require.NotContains(t, msg, "\n")
			require.Regexp(t, located, msg)
			if !syntaxOnly(name) {
				var fe *FieldError
				require.True(t, errors.As(err, &fe), "a *FieldError in %q", msg)
				require.Contains(t, msg, ": "+fe.Field+": ")
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

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "vigil.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), "read config: ")
}

func TestValidate(t *testing.T) {
	f := func(edit func(*Config), field, msg string) {
		t.Helper()
		cfg := Default()
		edit(&cfg)
		err := cfg.Validate()
		var fe *FieldError
		require.True(t, errors.As(err, &fe), "want a *FieldError, got %v", err)
		require.Equal(t, field, fe.Field)
		require.Equal(t, field+": "+msg, err.Error())
	}
	f(func(c *Config) { c.Storage.DataDir = " " }, "storage.data_dir", "must not be empty")
	f(func(c *Config) { c.Storage.Retention = -model.Duration(time.Millisecond) }, "storage.retention", "must be positive, got -1ms")
	f(func(c *Config) { c.Storage.OutOfOrderWindow = -model.Duration(time.Hour) }, "storage.out_of_order_window", "must not be negative, got -1h")
	f(func(c *Config) { c.Query.Timeout = 0 }, "query.timeout", "must be positive, got 0s")
	f(func(c *Config) { c.Query.MaxConcurrency = 0 }, "query.max_concurrency", "must be positive, got 0")
	f(func(c *Config) { c.Query.LookbackDelta = 0 }, "query.lookback_delta", "must be positive, got 0s")
	f(func(c *Config) { c.Web.ReadTimeout = 0 }, "web.read_timeout", "must be positive, got 0s")
	f(func(c *Config) { c.Web.MaxConnections = -1 }, "web.max_connections", "must not be negative, got -1")
	f(func(c *Config) { c.Web.CORSOrigin = "(" }, "web.cors_origin", "not a regular expression: error parsing regexp: missing closing ): `(`")
	f(func(c *Config) { c.Query.RemoteRead.MaxConcurrency = 0 }, "query.remote_read.max_concurrency", "must be positive, got 0")
	f(func(c *Config) { c.Query.RemoteRead.SampleLimit = -1 }, "query.remote_read.sample_limit", "must not be negative, got -1")
	f(func(c *Config) { c.Query.RemoteRead.MaxBytesInFrame = 10 }, "query.remote_read.max_bytes_in_frame", "must be at least 1024, got 10")
	f(func(c *Config) { c.Web.Listen = "" }, "web.listen", `"" is not host:port (missing port in address)`)
	f(func(c *Config) { c.Web.Listen = "127.0.0.1:http" }, "web.listen", `port "http" of "127.0.0.1:http" is not a number from 0 to 65535`)

	for _, listen := range []string{":9700", "127.0.0.1:0", "[::1]:9700", "localhost:9700"} {
		cfg := Default()
		cfg.Web.Listen = listen
		require.NoError(t, cfg.Validate(), listen)
	}
}

// FuzzParse checks that no input panics and that whatever Parse accepts is
// valid.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"good", "bad"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yml"))
		require.NoError(f, err)
		for _, p := range files {
			b, err := os.ReadFile(p)
			require.NoError(f, err)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse("fuzz.yml", b)
		if err != nil {
			require.Nil(t, cfg)
			return
		}
		require.NoError(t, cfg.Validate())
	})
}

func TestMemory(t *testing.T) {
	cfg, err := Parse("m.yml", []byte("memory:\n  budget: 2GiB\n  max_inflight_bytes: 268435456\n"))
	require.NoError(t, err)
	require.Equal(t, Bytes(2<<30), cfg.Memory.Budget)
	require.Equal(t, int64(256<<20), cfg.Memory.InflightBytes(int64(cfg.Memory.Budget)))
	cfg, err = Parse("m.yml", []byte("memory:\n  budget: 512MiB\n"))
	require.NoError(t, err)
	require.Equal(t, int64(256<<20), cfg.Memory.InflightBytes(int64(cfg.Memory.Budget)), "half the budget")
	require.Equal(t, int64(DefaultInflightBytes), Default().Memory.InflightBytes(0), "no budget")
	b, err := Bytes(2 << 30).MarshalText()
	require.NoError(t, err)
	require.Equal(t, "2GiB", string(b))
}

func TestSource(t *testing.T) {
	cfg, err := Parse("s.yml", []byte(`source:
  url: https://mimir.example/prometheus
  timeout: 20s
  selector: '{cluster="gpu-east"}'
  http_headers:
    X-Scope-OrgID:
      values: [team-ml]
  basic_auth:
    username: vigil
    password_file: /etc/vigil/mimir-password
  tls_config:
    insecure_skip_verify: false
`))
	require.NoError(t, err)
	s := cfg.Source
	require.Equal(t, "https://mimir.example/prometheus", s.URL)
	require.Equal(t, model.Duration(20*time.Second), s.Timeout)
	ms, err := s.Matchers()
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, `cluster="gpu-east"`, ms[0].String())
	require.Equal(t, []string{"team-ml"}, s.HTTPClient.HTTPHeaders.Headers["X-Scope-OrgID"].Values)
	require.Equal(t, "vigil", s.HTTPClient.BasicAuth.Username)
	require.True(t, s.HTTPClient.FollowRedirects, "Prometheus's client defaults kept")
	// DESIGN.md's form, the backend under its kind, reads the same.
	design, err := Parse("d.yml", []byte(`source:
  prometheus:
    url: https://mimir.example/prometheus
    timeout: 20s
    selector: '{cluster="gpu-east"}'
    headers:
      X-Scope-OrgID: team-ml
    http_config:
      basic_auth:
        username: vigil
        password_file: /etc/vigil/mimir-password
`))
	require.NoError(t, err)
	require.Equal(t, s, design.Source)
	for body, want := range map[string]string{
		"source:\n  prometheus:\n    url: http://p:9090\n    timout: 5s\n":                                                           "d.yml:4: source.prometheus.timout: unknown field",
		"source:\n  prometheus:\n    url: http://p:9090\n  url: http://q:9090\n":                                                     "d.yml:4: source.url: source.prometheus takes the backend's settings",
		"source:\n  prometheus:\n    url: ftp://p\n":                                                                                 "source.url: \"ftp://p\": the scheme must be http or https",
		"source:\n  prometheus:\n    url: http://p:9090\n    headers: {A: b}\n    http_config: {http_headers: {A: {values: [c]}}}\n": "source.prometheus.headers: A is set in http_config.http_headers too",
	} {
		_, err := Parse("d.yml", []byte(body))
		require.Error(t, err, body)
		require.Contains(t, err.Error(), want, body)
	}
	// No section: no backend, the defaults.
	cfg, err = Parse("e.yml", []byte("web:\n  listen: \":9700\"\n"))
	require.NoError(t, err)
	require.Equal(t, DefaultSource(), cfg.Source)
}

// TestExternalLabels: alerting.external_labels is a mapping of label names
// to strings; anything else, or a name Prometheus would refuse, is a
// one-line error at its line.
func TestExternalLabels(t *testing.T) {
	load := func(body string) (*Config, error) {
		p := filepath.Join(t.TempDir(), "vigil.yaml")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return Load(p)
	}
	cfg, err := load("alerting:\n  external_labels:\n    cluster: gpu-east\n    region: eu\n")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cluster": "gpu-east", "region": "eu"}, cfg.Alerting.ExternalLabels)
	for body, want := range map[string]string{
		"alerting:\n  external_labels: [cluster]\n":            "alerting.external_labels: must be a mapping of names to strings, not a list",
		"alerting:\n  external_labels:\n    cluster: [a, b]\n": "alerting.external_labels.cluster: must be a string, not a list",
		"alerting:\n  external_labels:\n    __x: a\n":          `alerting.external_labels: "__x" is not a label name`,
	} {
		_, err := load(body)
		require.Error(t, err, body)
		require.Contains(t, err.Error(), want, body)
		require.NotContains(t, err.Error(), "\n")
	}
}

// TestTenancySection: the tenancy section's identities (a mapping of
// names to sections) and limits decode, and a wrong field names its path.
func TestTenancySection(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	require.NoError(t, os.WriteFile(good, []byte("tenancy:\n  enabled: true\n  identities:\n    alice: {tenants: [a], role: platform}\n    bob:\n      tenants: [b]\n  limits: {ingestion_rate: 100, max_push_groups: 3}\n"), 0o644))
	cfg, err := Load(good)
	require.NoError(t, err)
	require.True(t, cfg.Tenancy.Enabled)
	require.Equal(t, []string{"a"}, cfg.Tenancy.Identities["alice"].Tenants)
	require.Equal(t, "platform", cfg.Tenancy.Identities["alice"].Role)
	require.Equal(t, []string{"b"}, cfg.Tenancy.Identities["bob"].Tenants)
	require.Equal(t, 100.0, cfg.Tenancy.Limits.IngestionRate)
	require.Equal(t, 3, cfg.Tenancy.Limits.MaxPushGroups)
	for body, want := range map[string]string{
		"tenancy:\n  identities:\n    alice: {tenants: [a], rol: x}\n":                    "bad.yml:3: tenancy.identities.alice.rol: unknown field",
		"tenancy:\n  identities:\n    alice: {tenants: [a]}\n    alice: {tenants: [b]}\n": "tenancy.identities.alice: set twice",
		"tenancy:\n  identities: [a]\n":                                                   "tenancy.identities: must be a mapping of names to sections",
		"tenancy:\n  enabled: true\n  identities:\n    x: {tenants: [../a]}\n":            "tenancy",
	} {
		bad := filepath.Join(dir, "bad.yml")
		require.NoError(t, os.WriteFile(bad, []byte(body), 0o644))
		_, err := Load(bad)
		require.ErrorContains(t, err, want, body)
		require.NotContains(t, err.Error(), "\n")
	}
}
