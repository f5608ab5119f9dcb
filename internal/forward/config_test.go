package forward

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// decode reads a forwarding section strictly, over the defaults, as the
// configuration file does.
func decode(t *testing.T, path string) (Config, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&cfg))
	return cfg, cfg.Validate()
}

func TestConfigFiles(t *testing.T) {
	cfg, err := decode(t, "testdata/good.yml")
	require.NoError(t, err)
	require.Equal(t, Config{
		Endpoint: "https://tempo.example.com:4318/otlp", Protocol: ProtocolHTTP,
		Headers: []string{"X-Scope-OrgID: ml-platform", "Authorization: Bearer example-not-a-token"},
		Timeout: model.Duration(15 * time.Second), QueueSize: 500,
		Signals: []string{SignalTraces, SignalLogs}, Compression: CompressionGzip,
	}, cfg)
	ep, err := parseEndpoint(cfg.Endpoint, cfg.Protocol)
	require.NoError(t, err)
	require.Equal(t, "https://tempo.example.com:4318/otlp/v1/traces", ep.base.JoinPath("v1", "traces").String())

	cfg, err = decode(t, "testdata/good-grpc.yml")
	require.NoError(t, err)
	require.Equal(t, model.Duration(DefaultTimeout), cfg.Timeout, "defaults stay")
	require.Equal(t, []string{SignalLogs}, cfg.Signals)

	bad, err := filepath.Glob("testdata/bad-*.yml")
	require.NoError(t, err)
	require.NotEmpty(t, bad)
	for _, path := range bad {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		first, _, _ := strings.Cut(string(b), "\n")
		want, ok := strings.CutPrefix(first, "# error: ")
		require.True(t, ok, "%s starts with # error: …", path)
		_, err = decode(t, path)
		require.EqualError(t, err, want, path)
	}
}

func TestValidate(t *testing.T) {
	f := func(cfg Config, want string) {
		t.Helper()
		err := cfg.Validate()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.EqualError(t, err, want)
		var fe *FieldError
		require.ErrorAs(t, err, &fe)
	}
	f(Config{}, "")
	f(DefaultConfig(), "")
	f(Config{Endpoint: "http://127.0.0.1:4318"}, "")
	f(Config{Endpoint: "grpcs://collector:4317"}, "")
	f(Config{Endpoint: "http://collector:4317", Protocol: ProtocolGRPC}, "")
	f(Config{Endpoint: "ftp://x:1"}, `endpoint: ftp://x:1: the scheme must be http, https, grpc or grpcs, not "ftp"`)
	f(Config{Endpoint: "grpc://collector"}, "endpoint: grpc://collector: no port (OTLP/gRPC listens on 4317)")
	f(Config{Endpoint: "grpc://c:4317/v1"}, "endpoint: grpc://c:4317/v1: a gRPC endpoint has no path")
	f(Config{Endpoint: "grpc://c:4317", Protocol: ProtocolHTTP}, `endpoint: grpc://c:4317: scheme grpc:// with protocol "http": give http:// or https://`)
	f(Config{Endpoint: "http://tempo:4318?tenant=a"}, "endpoint: http://tempo:4318: a query or fragment has no meaning here")
	f(Config{Endpoint: "http://alice:hunter2@/x"}, "endpoint: http:///x: no host")
	f(Config{Endpoint: "http://tempo:4318", Protocol: "udp"}, `protocol: must be "http" or "grpc", got "udp"`)
	f(Config{Compression: "zstd"}, `compression: must be "gzip" or "none", got "zstd"`)
	f(Config{Signals: []string{"logs", "logs"}}, `signals[1]: "logs" is listed twice`)
	f(Config{Timeout: model.Duration(-time.Second)}, "timeout: must not be negative, got -1s")
	f(Config{QueueSize: -1}, "queue_size: must not be negative, got -1")
	f(Config{Headers: []string{": v"}}, `headers[0]: not "Name: value": no name before the colon`)
	f(Config{Headers: []string{"Bearer sk-secret: x"}}, "headers[0]: the name before the colon is not a valid header name")
	f(Config{Headers: []string{"Content-Type: text/plain"}}, "headers[0]: Content-Type is set by the exporter")
	f(Config{Headers: []string{"X-Token: a\x00b"}}, "headers[0]: the value of X-Token holds a character not allowed in a header")
}

func TestValidateNeverQuotesSecrets(t *testing.T) {
	for _, cfg := range []Config{
		{Endpoint: "ftp://alice:hunter2@x:1"},
		{Endpoint: "http://alice:hunter2@/x"},
		{Endpoint: "http://alice:hunter2@tempo:4318?x=hunter2"},
		{Endpoint: "http://alice:hunter2@%zz"},
		{Headers: []string{"Authorization Bearer hunter2"}},
		{Headers: []string{"Authorization hunter2: x"}},
		{Headers: []string{"X: hunter2\x7f"}},
	} {
		err := cfg.Validate()
		require.Error(t, err)
		require.NotContains(t, err.Error(), "hunter2")
		_, err = New(cfg, nil, nil)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "hunter2")
	}
}

func TestNewNeedsAnEndpoint(t *testing.T) {
	_, err := New(DefaultConfig(), nil, nil)
	require.EqualError(t, err, "forwarding: no endpoint")
	require.False(t, DefaultConfig().Enabled())
	f, err := New(Config{Endpoint: "http://tempo:4318"}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, DefaultQueueSize, cap(f.q.ch), "zero values are the defaults")
	require.Equal(t, model.Duration(DefaultTimeout), f.cfg.Timeout)
	require.True(t, f.traces && f.logs)
}
