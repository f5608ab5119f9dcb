package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/spf13/pflag"
)

// httpConfigUsage is the help of --http.config.file.
const httpConfigUsage = "Prometheus HTTP client configuration for --prometheus / --server (basic_auth, authorization with credentials_file, tls_config, http_headers such as X-Scope-OrgID), as promtool takes it"

// registerHTTPConfig adds --http.config.file to fl.
func registerHTTPConfig(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "http.config.file", "", httpConfigUsage)
}

// loadHTTPConfig reads a Prometheus HTTP client configuration file (the
// format of promtool's --http.config.file): relative paths in it are
// taken from the file's directory. The error is one line and never
// quotes a secret (common/config's Secret prints as <secret>).
func loadHTTPConfig(path string) (*commoncfg.HTTPClientConfig, error) {
	if path == "" {
		c := commoncfg.DefaultHTTPClientConfig
		return &c, nil
	}
	c, _, err := commoncfg.LoadHTTPConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("--http.config.file: %s: %s", path, oneLine(err.Error()))
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("--http.config.file: %s: %s", path, oneLine(err.Error()))
	}
	return c, nil
}

// newHTTPClient returns the client of the configuration file at path
// ("" is the default configuration), with common/config's own client:
// credentials files are read again for each request, so a rotated token
// is taken.
func newHTTPClient(path string, timeout time.Duration) (*http.Client, error) {
	c, err := loadHTTPConfig(path)
	if err != nil {
		return nil, err
	}
	hc, err := commoncfg.NewClientFromConfig(*c, "vigil")
	if err != nil {
		return nil, fmt.Errorf("--http.config.file: %s: %w", path, err)
	}
	hc.Timeout = timeout
	return hc, nil
}

type httpClientKey struct{}

// withHTTPClient returns ctx carrying the client that the commands
// reading a running Vigil (apiGet, getAPI) send their requests with,
// built from the file at path; usage errors are the user's to fix.
func withHTTPClient(ctx context.Context, cmd, path string) (context.Context, error) {
	if path == "" {
		return ctx, nil
	}
	c, err := newHTTPClient(path, 0)
	if err != nil {
		return ctx, usagef("%s: %v", cmd, err)
	}
	return context.WithValue(ctx, httpClientKey{}, c), nil
}

// httpClientOf returns the client withHTTPClient put in ctx, or
// http.DefaultClient.
func httpClientOf(ctx context.Context) *http.Client {
	if c, ok := ctx.Value(httpClientKey{}).(*http.Client); ok {
		return c
	}
	return http.DefaultClient
}
