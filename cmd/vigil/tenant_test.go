package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/tenant"
)

// TestTenantFlag: against a serve with tenancy, `vigil import --server
// --tenant` writes as its tenant, and the reading commands with --tenant
// read their tenant's data only; without a tenant they are refused, and
// an invalid tenant is a usage error.
func TestTenantFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("storage:\n  data_dir: "+filepath.Join(dir, "data")+"\nweb:\n  listen: 127.0.0.1:0\nself_monitoring:\n  enabled: false\ntenancy:\n  enabled: true\n"), 0o644))
	ctx, cancel := context.WithCancel(t.Context())
	s := startServe(t, ctx, "serve", "--config", cfg)
	defer func() {
		cancel()
		require.NoError(t, <-s.done)
	}()
	for _, id := range []string{"a", "b"} {
		f := filepath.Join(dir, id+".prom")
		require.NoError(t, os.WriteFile(f, []byte("# TYPE owned gauge\nowned{owner=\"tenant_"+id+"_marker\"} 1\n"), 0o644))
		r := runVigil(t, "", "import", "--server", s.url, "--tenant", id, f)
		require.Equal(t, 0, r.code, "import as %s: %s", id, r.stderr)
	}
	r := runVigil(t, "", "import", "--server", s.url, filepath.Join(dir, "a.prom"))
	require.NotEqual(t, 0, r.code, "import with no tenant")
	require.Contains(t, r.stderr, "401")

	get := func(id, q string) string {
		req, err := http.NewRequest(http.MethodGet, s.url+"/api/v1/query?query="+url.QueryEscape(q), nil)
		require.NoError(t, err)
		req.Header.Set(tenant.Header, id)
		_, body := doReq(t, s.client, req)
		return body
	}
	s.waitFor(t, func() bool { return len(get("a", "owned")) > 60 }, "a's sample")
	require.Contains(t, get("a", "owned"), "tenant_a_marker")
	require.NotContains(t, get("a", "owned"), "tenant_b_marker")

	// diagnose and topology read through the query API as their tenant.
	r = runVigil(t, "", "topology", "--server", s.url, "--tenant", "a", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	r = runVigil(t, "", "diagnose", "--server", s.url, "--tenant", "b", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	r = runVigil(t, "", "diagnose", "--server", s.url, "--json")
	require.NotEqual(t, 0, r.code, "diagnose with no tenant")
	for _, cmd := range [][]string{{"diagnose"}, {"incidents"}, {"trace", "0123456789abcdef0123456789abcdef"}, {"slow"}, {"logs"}, {"cost", "--currency", "USD"}} {
		args := append(append([]string{}, cmd...), "--server", s.url, "--tenant", "../a")
		requireUsage(t, runVigil(t, "", args...), "--tenant")
	}
}

func doReq(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b := make([]byte, 1<<16)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n])
}
