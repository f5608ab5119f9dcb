package ingest

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// TestTenancyPrometheusRemoteWrite: Debian's Prometheus scrapes itself
// and remote-writes everything three times to a Vigil with tenancy on and
// the web config file's basic-auth users mapped to tenants: once per
// tenant, as its user (remote_write's basic_auth) with a relabelling that
// marks the copy, and once with no credentials. Each tenant reads its own
// copy only; the copy with no credentials is refused (401), which
// Prometheus logs. (Debian's Prometheus 2.42.0+ds does not send
// remote_write's headers — checked against a server that prints them — so
// the tenant comes from the identity, as it would behind any gateway.)
func TestTenancyPrometheusRemoteWrite(t *testing.T) {
	dir := t.TempDir()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		require.NoError(t, err)
		return string(h)
	}
	web := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(web, []byte("basic_auth_users:\n  writer-a: "+hash("pa")+"\n  writer-b: "+hash("pb")+"\n"), 0o600))
	cfg := filepath.Join(dir, "vigil.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("self_monitoring:\n  enabled: false\nweb:\n  config_file: "+web+"\ntenancy:\n  enabled: true\n  identities:\n    writer-a: {tenants: [a]}\n    writer-b: {tenants: [b]}\n"), 0o644))
	vaddr := peertest.FreeAddr(t)
	vurl := "http://" + vaddr
	// The probes are behind the web config file's authentication too.
	ready := func() bool {
		req, _ := http.NewRequest(http.MethodGet, vurl+"/-/ready", nil)
		req.SetBasicAuth("writer-a", "pa")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	args := append([]string{"serve", "--listen", vaddr, "--data-dir", filepath.Join(dir, "data"), "--config", cfg}, peertest.OTLPFlags(nil)...)
	v := &server{Proc: peertest.Start(t, vurl, vaddr, ready, peertest.Vigil(t), args...), client: newClient(t)}
	addr := peertest.FreeAddr(t)
	var rw strings.Builder
	for _, id := range []string{"a", "b", ""} {
		fmt.Fprintf(&rw, "  - url: %s/api/v1/write\n    queue_config: {batch_send_deadline: 1s}\n", v.URL)
		mark := "tenant_nobody_marker"
		if id != "" {
			fmt.Fprintf(&rw, "    basic_auth: {username: writer-%s, password: p%s}\n", id, id)
			mark = "tenant_" + id + "_marker"
		}
		fmt.Fprintf(&rw, "    write_relabel_configs: [{target_label: owner, replacement: %s}]\n", mark)
	}
	prom := startPrometheusOn(t, addr, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: [%q]}]
remote_write:
%s`, addr, rw.String()))

	q := func(id, expr string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, v.URL+"/api/v1/query?query="+url.QueryEscape(expr), nil)
		require.NoError(t, err)
		if id != "" {
			req.SetBasicAuth("writer-"+id, "p"+id)
		}
		resp, err := v.client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	waitFor(t, 90*time.Second, "both tenants' copies of up", func() bool {
		_, a := q("a", `up{job="prometheus"}`)
		_, b := q("b", `up{job="prometheus"}`)
		return strings.Contains(a, "tenant_a_marker") && strings.Contains(b, "tenant_b_marker")
	}, func() string { return "vigil:\n" + v.Output() + "\nprometheus:\n" + prom.Output() })
	for _, id := range []string{"a", "b"} {
		other := map[string]string{"a": "tenant_b_marker", "b": "tenant_a_marker"}[id]
		for _, expr := range []string{`up`, `{__name__=~"prometheus_tsdb_.+"}`, `count by (owner) ({__name__=~".+"})`, `{__tenant_id__!="` + id + `",__name__=~".+"}`} {
			code, body := q(id, expr)
			require.Equal(t, http.StatusOK, code, body)
			require.NotContains(t, body, other, "%s as %s", expr, id)
			require.NotContains(t, body, "nobody", "%s as %s", expr, id)
		}
	}
	code, _ := q("", "up")
	require.Equal(t, http.StatusUnauthorized, code)
	waitFor(t, 60*time.Second, "Prometheus counts the queue with no tenant as failing", func() bool {
		return strings.Contains(prom.Output(), "401 Unauthorized")
	}, func() string { return prom.Output() })
}
