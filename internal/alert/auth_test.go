package alert

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-obs/vigil/internal/certtest"
	"github.com/vigil-obs/vigil/internal/peertest"
)

// TestAlertmanagerWithTLSAndBasicAuth sends an alert to Debian's
// Alertmanager 0.25 served over TLS with a basic-auth user
// (--web.config.file): http_config's basic_auth (password_file) and
// tls_config (ca_file) get it through; without them it is refused.
func TestAlertmanagerWithTLSAndBasicAuth(t *testing.T) {
	if _, err := exec.LookPath("prometheus-alertmanager"); err != nil {
		t.Skip("prometheus-alertmanager is not installed (Debian package prometheus-alertmanager)")
	}
	certs := certtest.New(t)
	web := certs.WriteFile(t, "web.yml", "tls_server_config: {cert_file: server.pem, key_file: server-key.pem}\nbasic_auth_users:\n  vigil: "+certtest.Hash(t, "am-secret-4e1")+"\n")
	pass := certs.WriteFile(t, "am.pass", "am-secret-4e1")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(t, false)}}
	t.Cleanup(client.CloseIdleConnections)
	get := func(url string) (int, []byte) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.SetBasicAuth("vigil", "am-secret-4e1")
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	cfgPath := certs.WriteFile(t, "alertmanager.yml", "route: {receiver: default, group_wait: 1s}\nreceivers: [{name: default}]\n")
	addr := peertest.FreeAddr(t)
	url := "https://" + addr
	peertest.Start(t, url, addr, func() bool { code, _ := get(url + "/-/ready"); return code == http.StatusOK },
		peertest.LookPath(t, "prometheus-alertmanager"), "--config.file="+cfgPath, "--storage.path="+t.TempDir(),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=warn", "--web.config.file="+web)

	send := func(t *testing.T, httpConfig, summary string) *harness {
		cfg := Default()
		cfg.Alertmanagers = []string{url}
		require.NoError(t, yaml.Unmarshal([]byte(httpConfig), &cfg.HTTPConfig))
		require.NoError(t, cfg.Validate())
		h := newHarness(t, cfg)
		h.run(t)
		spec := stallSpec(summary)
		spec.Labels["summary_id"] = summary
		h.n.Send(h.n.Alert(spec, time.Now()))
		return h
	}
	active := func() []amAlert {
		code, body := get(url + "/api/v2/alerts?active=true")
		require.Equal(t, http.StatusOK, code)
		var out []amAlert
		require.NoError(t, json.Unmarshal(body, &out))
		return out
	}

	// Without the user, and without the CA, nothing arrives.
	noUser := send(t, "tls_config: {ca_file: "+certs.CA+"}\n", "no-user")
	noCA := send(t, "basic_auth: {username: vigil, password_file: "+pass+"}\n", "no-ca")
	eventually(t, func() bool {
		return noUser.metric(t, "vigil_notifications_failed_total", url+"/api/v2/alerts") >= 1 &&
			noCA.metric(t, "vigil_notifications_failed_total", url+"/api/v2/alerts") >= 1
	}, "both fail")
	require.Empty(t, active())
	require.NotContains(t, noCA.logs.String(), "am-secret-4e1")

	ok := send(t, "basic_auth: {username: vigil, password_file: "+pass+"}\ntls_config: {ca_file: "+certs.CA+"}\n", "secured")
	eventually(t, func() bool { return len(active()) == 1 }, "the alert arrives over TLS with basic auth")
	require.Equal(t, "secured", active()[0].Labels["summary_id"])
	require.Equal(t, 0.0, ok.metric(t, "vigil_notifications_failed_total", url+"/api/v2/alerts"))
	require.NotContains(t, ok.logs.String(), "am-secret-4e1")
}

// TestWebhookHTTPConfig: http_config's authorization (credentials_file)
// and tls_config reach a webhook served over TLS.
func TestWebhookHTTPConfig(t *testing.T) {
	certs := certtest.New(t)
	token := certs.WriteFile(t, "token", "hook-token-93b")
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	srv.TLS = serverTLS(t, certs)
	srv.StartTLS()
	defer srv.Close()
	cfg := Default()
	cfg.Webhooks = []string{srv.URL + "/hook"}
	require.NoError(t, yaml.Unmarshal([]byte("authorization: {credentials_file: "+token+"}\ntls_config: {ca_file: "+certs.CA+"}\n"), &cfg.HTTPConfig))
	require.NoError(t, cfg.Validate())
	h := newHarness(t, cfg)
	h.run(t)
	h.n.Send(h.n.Alert(stallSpec("hook"), time.Now()))
	eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(auths) == 1 }, "the webhook is called")
	require.Equal(t, "Bearer hook-token-93b", auths[0])
	require.NotContains(t, h.logs.String(), "hook-token-93b")
}

func TestHTTPConfigValidate(t *testing.T) {
	f := func(doc, want string) {
		t.Helper()
		cfg := Default()
		err := yaml.Unmarshal([]byte(doc), &cfg)
		if err == nil {
			err = cfg.Validate()
		}
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, want)
		require.NotContains(t, err.Error(), "s3cret")
	}
	f("alertmanagers: [https://am:9093]\nhttp_config: {basic_auth: {username: u, password: s3cret}}\n", "")
	f("alertmanagers: [https://u:s3cret@am:9093]\nhttp_config: {basic_auth: {username: u, password: x}}\n", "http_config: entry 1")
	f("http_config: {basic_auth: {username: u, password: x}, authorization: {credentials: y}}\n", "at most one of basic_auth")
	f("http_config: {basic_auth: {username: u}, tls_confg: {}}\n", "unknown field tls_confg")
}

func serverTLS(t *testing.T, certs certtest.Files) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certs.Server, certs.ServerKey)
	require.NoError(t, err)
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}
