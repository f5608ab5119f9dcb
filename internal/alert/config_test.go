package alert

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the expected errors in testdata/bad/*.err")

// load decodes a file of the alerting section over the defaults, strictly,
// and validates it, as the vigil.yaml loader does.
func load(path string) (Config, error) {
	cfg := Default()
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func TestDefaultIsValid(t *testing.T) {
	cfg := Default()
	require.NoError(t, cfg.Validate())
	require.Equal(t, model.Duration(time.Minute), cfg.ResendInterval)
	require.Equal(t, model.Duration(10*time.Second), cfg.Timeout)
	require.Equal(t, 10_000, cfg.QueueCapacity)
}

func TestGood(t *testing.T) {
	tests := map[string]func(*Config){
		"empty.yml": func(*Config) {},
		"full.yml": func(c *Config) {
			c.Alertmanagers = []string{"http://127.0.0.1:9093", "https://vigil:s3cret@am.example.com/alertmanager"}
			c.Webhooks = []string{"https://hooks.example.com/services/T000/B000?token=abc"}
			c.ResendInterval = model.Duration(30 * time.Second)
			c.Timeout = model.Duration(5 * time.Second)
			c.QueueCapacity = 500
			c.ExternalURL = "https://vigil.example.com/"
		},
		"webhook_only.yml": func(c *Config) { c.Webhooks = []string{"http://127.0.0.1:8080/alerts"} },
	}
	files, err := filepath.Glob(filepath.Join("testdata", "good", "*.yml"))
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every file in testdata/good has a case here")
	for name, edit := range tests {
		t.Run(name, func(t *testing.T) {
			want := Default()
			edit(&want)
			got, err := load(filepath.Join("testdata", "good", name))
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// TestBad checks each file in testdata/bad against the error in its .err
// sibling (go test -update rewrites them). Every error names its field
// and never shows a password.
func TestBad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yml"), func(t *testing.T) {
			_, err := load(path)
			require.Error(t, err)
			msg := err.Error()
			require.NotContains(t, msg, "\n")
			require.NotContains(t, msg, "secret")
			require.NotContains(t, msg, "pw@")
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "a *FieldError in %q", msg)
			require.True(t, strings.HasPrefix(msg, fe.Field+": "), msg)
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

func TestValidate(t *testing.T) {
	f := func(edit func(*Config), want string) {
		t.Helper()
		cfg := Default()
		edit(&cfg)
		err := cfg.Validate()
		if want == "" {
			require.NoError(t, err)
			return
		}
		var fe *FieldError
		require.True(t, errors.As(err, &fe), "want a *FieldError, got %v", err)
		require.Equal(t, want, err.Error())
	}
	f(func(c *Config) { c.Alertmanagers = []string{"http://am:9093", "https://am.example.com/prefix"} }, "")
	f(func(c *Config) { c.Webhooks = []string{"https://h.example.com/x?token=1"} }, "")
	f(func(c *Config) { c.ExternalURL = "http://vigil:9700" }, "")
	f(func(c *Config) { c.ResendInterval = -1 }, "resend_interval: must be positive, got 0s")
	f(func(c *Config) { c.QueueCapacity = -5 }, "queue_capacity: must be positive, got -5")
	f(func(c *Config) { c.Alertmanagers = []string{""} }, `alertmanagers: entry 1 "": the scheme must be http or https, not ""`)
	f(func(c *Config) { c.Alertmanagers = []string{"http://a:9093#x"} }, `alertmanagers: entry 1 "http://a:9093": a fragment (#...) has no meaning here`)
	f(func(c *Config) { c.Webhooks = []string{"https://u:p@h/x", "https://h/x?t=1", "https://u:p@h/x"} },
		`webhooks: entry 3 "https://h/x" is entry 1 again`)
	f(func(c *Config) { c.ExternalURL = "vigil.example.com" }, `external_url: "vigil.example.com": no scheme: give http://host:port or https://host:port`)
	f(func(c *Config) { c.ExternalLabels = map[string]string{"cluster": "a", "region": "eu"} }, "")
	f(func(c *Config) { c.ExternalLabels = map[string]string{"__name__": "x"} }, `external_labels: "__name__" is not a label name`)
	f(func(c *Config) { c.ExternalLabels = map[string]string{"cluster": ""} }, "external_labels: cluster has an empty value: leave it out")
}

func TestRedact(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		require.Equal(t, want, redactString(in))
	}
	f("http://127.0.0.1:9093", "http://127.0.0.1:9093")
	f("https://user:pass@am.example.com/prefix", "https://am.example.com/prefix")
	f("https://hooks.example.com/x?token=abc#frag", "https://hooks.example.com/x")
	f("http://user:pass@bad host/", "<unparsable URL>")
	f("http://bad host/", "http://bad host/")
}

func TestIncidentURL(t *testing.T) {
	f := func(base, id, want string) {
		t.Helper()
		c := Default()
		c.ExternalURL = base
		require.Equal(t, want, c.IncidentURL(id))
	}
	f("", "abc", "")
	f("https://vigil.example.com", "", "")
	f("https://vigil.example.com", "3f2a", "https://vigil.example.com/api/v1/incidents/3f2a")
	f("https://example.com/vigil/", "3f2a", "https://example.com/vigil/api/v1/incidents/3f2a")
	f("https://example.com", "a/b", "https://example.com/api/v1/incidents/a%2Fb")
}
