package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

func TestEmbeddedConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*store.EmbeddedConfig)
		want string
	}{
		{"defaults", func(*store.EmbeddedConfig) {}, ""},
		{"no out-of-order window", func(c *store.EmbeddedConfig) { c.OutOfOrderWindow = 0 }, ""},
		{"no exemplars", func(c *store.EmbeddedConfig) { c.MaxExemplars = 0 }, ""},
		{"empty dir", func(c *store.EmbeddedConfig) { c.Dir = "" }, "data directory is empty"},
		{"zero retention", func(c *store.EmbeddedConfig) { c.Retention = 0 }, "retention must be positive, got 0s"},
		{"negative retention", func(c *store.EmbeddedConfig) { c.Retention = -time.Hour }, "retention must be positive, got -1h0m0s"},
		{"negative window", func(c *store.EmbeddedConfig) { c.OutOfOrderWindow = -time.Minute }, "out-of-order window must not be negative, got -1m0s"},
		{"negative exemplars", func(c *store.EmbeddedConfig) { c.MaxExemplars = -1 }, "max exemplars must not be negative, got -1"},
		{"bad engine", func(c *store.EmbeddedConfig) { c.Engine.MaxSamples = 0 }, "max_samples must be positive, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := store.DefaultEmbeddedConfig(t.TempDir() + "/data")
			tt.mod(&cfg)
			err := cfg.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
			// OpenEmbedded refuses it before touching the disk.
			_, err = store.OpenEmbedded(cfg, nil, nil, nil)
			require.EqualError(t, err, tt.want)
			if cfg.Dir != "" {
				require.NoDirExists(t, cfg.Dir)
			}
		})
	}
}

func TestEngineConfigValidate(t *testing.T) {
	f := func(mod func(*store.EngineConfig), want string) {
		t.Helper()
		cfg := store.DefaultEngineConfig()
		mod(&cfg)
		err := cfg.Validate()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.EqualError(t, err, want)
	}
	f(func(*store.EngineConfig) {}, "")
	f(func(c *store.EngineConfig) { c.MaxSamples = -5 }, "max_samples must be positive, got -5")
	f(func(c *store.EngineConfig) { c.Timeout = 0 }, "timeout must be positive, got 0s")
	f(func(c *store.EngineConfig) { c.MaxConcurrency = 0 }, "max_concurrency must be positive, got 0")
	f(func(c *store.EngineConfig) { c.LookbackDelta = -time.Second }, "lookback_delta must be positive, got -1s")
}

func TestRemoteConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*store.RemoteConfig)
		want string
	}{
		{"defaults", func(*store.RemoteConfig) {}, ""},
		{"https with a path", func(c *store.RemoteConfig) { c.URL = "https://mimir.example/prometheus" }, ""},
		{"no scheme", func(c *store.RemoteConfig) { c.URL = "prometheus:9090" }, `url "prometheus:9090": scheme must be http or https`},
		{"bad scheme", func(c *store.RemoteConfig) { c.URL = "ftp://prometheus" }, `url "ftp://prometheus": scheme must be http or https`},
		{"no host", func(c *store.RemoteConfig) { c.URL = "http://" }, `url "http://": no host`},
		{"unparsable", func(c *store.RemoteConfig) { c.URL = "http://a b:%zz" }, `url "http://a b:%zz": parse`},
		{"zero timeout", func(c *store.RemoteConfig) { c.Timeout = 0 }, "timeout must be positive, got 0s"},
		{"zero max bytes", func(c *store.RemoteConfig) { c.MaxResponseBytes = 0 }, "max response bytes must be positive, got 0"},
		{"bad http client", func(c *store.RemoteConfig) {
			c.HTTPClient.BearerToken = "a"
			c.HTTPClient.BearerTokenFile = "/b"
		}, "http client: "},
		{"bad engine", func(c *store.RemoteConfig) { c.Engine.Timeout = 0 }, "timeout must be positive, got 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := store.DefaultRemoteConfig("http://127.0.0.1:9090")
			tt.mod(&cfg)
			err := cfg.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
			_, err = store.NewRemote(cfg, nil, nil, nil)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
