package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/spf13/pflag"

	"github.com/vigil-obs/vigil/internal/tenant"
)

// httpConfigUsage is the help of --http.config.file.
const httpConfigUsage = "Prometheus HTTP client configuration for --prometheus / --server (basic_auth, authorization with credentials_file, tls_config, http_headers such as X-Scope-OrgID), as promtool takes it"

// tenantUsage is the help of --tenant.
const tenantUsage = "the tenant to act as: sends it as X-Scope-OrgID (a|b reads several, where the server allows it)"

// clientFlags are how a command that reads a server reaches it: the
// HTTP client configuration file and the tenant.
type clientFlags struct {
	file   string
	tenant string
}

// registerHTTPConfig adds --http.config.file and --tenant to fl.
func registerHTTPConfig(fl *pflag.FlagSet, p *clientFlags) {
	fl.StringVar(&p.file, "http.config.file", "", httpConfigUsage)
	fl.StringVar(&p.tenant, "tenant", "", tenantUsage)
}

// loadHTTPConfig reads a Prometheus HTTP client configuration file (the
// format of promtool's --http.config.file): relative paths in it are
// taken from the file's directory. With a tenant, it sends X-Scope-OrgID.
// The error is one line and never quotes a secret (common/config's
// Secret prints as <secret>).
func loadHTTPConfig(f clientFlags) (*commoncfg.HTTPClientConfig, error) {
	c := &commoncfg.HTTPClientConfig{}
	*c = commoncfg.DefaultHTTPClientConfig
	if path := f.file; path != "" {
		var err error
		if c, _, err = commoncfg.LoadHTTPConfigFile(path); err != nil {
			return nil, fmt.Errorf("--http.config.file: %s: %s", path, oneLine(err.Error()))
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("--http.config.file: %s: %s", path, oneLine(err.Error()))
		}
	}
	if f.tenant != "" {
		ids, err := tenant.ParseIDs(f.tenant)
		if err != nil {
			return nil, fmt.Errorf("--tenant: %v", err)
		}
		h := map[string]commoncfg.Header{}
		if c.HTTPHeaders != nil {
			for k, v := range c.HTTPHeaders.Headers {
				h[k] = v
			}
		}
		h[tenant.Header] = commoncfg.Header{Values: []string{tenant.JoinIDs(ids)}}
		c.HTTPHeaders = &commoncfg.Headers{Headers: h}
	}
	return c, nil
}

// newHTTPClient returns the client of the flags (no file is the default
// configuration), with common/config's own client: credentials files are
// read again for each request, so a rotated token is taken.
func newHTTPClient(f clientFlags, timeout time.Duration) (*http.Client, error) {
	c, err := loadHTTPConfig(f)
	if err != nil {
		return nil, err
	}
	hc, err := commoncfg.NewClientFromConfig(*c, "vigil")
	if err != nil {
		return nil, fmt.Errorf("--http.config.file: %s: %w", f.file, err)
	}
	hc.Timeout = timeout
	return hc, nil
}

type httpClientKey struct{}

// withHTTPClient returns ctx carrying the client that the commands
// reading a running Vigil (apiGet, getAPI) send their requests with,
// built from the flags; usage errors are the user's to fix.
func withHTTPClient(ctx context.Context, cmd string, f clientFlags) (context.Context, error) {
	if f == (clientFlags{}) {
		return ctx, nil
	}
	c, err := newHTTPClient(f, 0)
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
