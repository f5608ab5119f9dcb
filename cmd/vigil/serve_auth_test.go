package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-obs/vigil/internal/certtest"
	"github.com/vigil-obs/vigil/internal/peertest"
)

// The secrets of the authentication tests: none may appear in a log.
const (
	authPassword = "wonderland-7f3a"
	authToken    = "otlp-token-5c2e91"
	promPassword = "prom-writer-88d1"
	// amPassword and fwdToken go to receivers that are down, so that
	// the failures are logged.
	amPassword = "am-inline-61c0"
	fwdToken   = "fwd-token-0d7e"
)

// secureServe is a `vigil serve` with a web configuration file (TLS and
// basic-auth users) and OTLP over TLS with a bearer token.
type secureServe struct {
	*serveProc
	certs    certtest.Files
	otlpHTTP string
	// httpConfig is a promtool-format client file with alice's
	// credentials and the CA.
	httpConfig string
}

var otlpHTTPAddrRE = regexp.MustCompile(`transport=OTLP/HTTP address=(\S+)`)

func startSecureServe(t *testing.T, ctx context.Context, webExtra string) *secureServe {
	t.Helper()
	certs := certtest.New(t)
	web := certs.WriteFile(t, "web.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n"+webExtra+
		"basic_auth_users:\n  alice: "+certtest.Hash(t, authPassword)+"\n  prometheus: "+certtest.Hash(t, promPassword)+"\n")
	tokens := certs.WriteFile(t, "otlp-tokens", authToken+"\n")
	cfg := certs.WriteFile(t, "vigil.yaml", "storage:\n  data_dir: "+filepath.Join(t.TempDir(), "data")+
		"\nweb:\n  listen: 127.0.0.1:0\n  config_file: "+web+
		"\nself_monitoring:\n  interval: 1s\n"+
		"otlp:\n  grpc_listen: 127.0.0.1:0\n  http_listen: 127.0.0.1:0\n"+
		"  tls: {cert_file: "+certs.Server+", key_file: "+certs.ServerKey+"}\n"+
		"  auth:\n    bearertokenauth: {filename: "+tokens+"}\n"+
		// Receivers that are down: their failures are logged, their
		// credentials must not be.
		"alerting:\n  alertmanagers: [https://127.0.0.1:1]\n  http_config: {basic_auth: {username: vigil, password: "+amPassword+"}}\n"+
		"forwarding:\n  endpoint: https://127.0.0.1:1\n  authorization: {credentials_file: "+certs.WriteFile(t, "fwd-token", fwdToken)+"}\n")
	s := &secureServe{certs: certs, serveProc: &serveProc{stdout: &peertest.SyncBuffer{}, stderr: &peertest.SyncBuffer{}, done: make(chan error, 1)}}
	s.client = &http.Client{Transport: &basicAuth{user: "alice", pass: authPassword, next: &http.Transport{TLSClientConfig: certs.ClientTLS(t, true)}}}
	t.Cleanup(s.client.CloseIdleConnections)
	go func() {
		s.done <- Run(ctx, []string{"serve", "--config", cfg}, strings.NewReader(""), s.stdout, s.stderr)
	}()
	waitFor(t, func() bool { return listeningRE.MatchString(s.stderr.String()) }, "listening", s.stderr.String)
	s.url = "https://" + listeningRE.FindStringSubmatch(s.stderr.String())[1]
	s.otlpHTTP = otlpHTTPAddrRE.FindStringSubmatch(s.stderr.String())[1]
	s.waitFor(t, func() bool { code, _ := s.get(t, "/-/ready"); return code == http.StatusOK }, "/-/ready")
	s.httpConfig = certs.WriteFile(t, "client.yml", "basic_auth:\n  username: alice\n  password_file: alice.pass\ntls_config:\n  ca_file: ca.pem\n")
	certs.WriteFile(t, "alice.pass", authPassword)
	return s
}

// basicAuth adds basic-auth credentials to every request.
type basicAuth struct {
	user, pass string
	next       http.RoundTripper
}

func (b *basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.pass)
	return b.next.RoundTrip(r)
}

func (b *basicAuth) CloseIdleConnections() {
	if c, ok := b.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// authRemoteWrite sends one sample of name through remote write with
// client and returns the status.
func authRemoteWrite(t *testing.T, c *http.Client, base, name string) int {
	t.Helper()
	wr := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: name}, {Name: "job", Value: "forged"}},
		Samples: []prompb.Sample{{Value: 79, Timestamp: time.Now().UnixMilli()}},
	}}}
	raw, err := wr.Marshal()
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	require.NoError(t, err)
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestServeAuthAndTLS runs vigil serve with a web configuration file and
// OTLP TLS and a token, and talks to it as outsiders and as real clients:
// a wrong password, no credentials, plain HTTP to the TLS port and OTLP
// without the token are refused and store nothing; Debian's Prometheus,
// with remote_write basic_auth and tls_config, writes through; promtool
// and Vigil's own commands (--http.config.file) read; the OpenTelemetry
// SDK's exporter, over TLS with the token, writes a trace that `vigil
// trace` reads back. No secret appears in the logs.
func TestServeAuthAndTLS(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := startSecureServe(t, ctx, "")
	tlsOnly := &http.Client{Transport: &http.Transport{TLSClientConfig: s.certs.ClientTLS(t, false)}}
	t.Cleanup(tlsOnly.CloseIdleConnections)
	wrong := &http.Client{Transport: &basicAuth{user: "alice", pass: "not-" + authPassword, next: &http.Transport{TLSClientConfig: s.certs.ClientTLS(t, false)}}}
	t.Cleanup(wrong.CloseIdleConnections)
	plain := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(plain.CloseIdleConnections)
	plainURL := strings.Replace(s.url, "https://", "http://", 1)

	t.Run("refused", func(t *testing.T) {
		for _, path := range []string{"/-/ready", "/-/healthy", "/api/v1/query?query=up", "/metrics", "/"} {
			code, _ := httpGet(t, tlsOnly, s.url+path)
			require.Equal(t, http.StatusUnauthorized, code, "no credentials: %s", path)
			code, _ = httpGet(t, wrong, s.url+path)
			require.Equal(t, http.StatusUnauthorized, code, "wrong password: %s", path)
			code, _ = httpGet(t, plain, plainURL+path)
			require.Equal(t, http.StatusBadRequest, code, "plain HTTP to the TLS port: %s", path)
		}
		require.Equal(t, http.StatusUnauthorized, authRemoteWrite(t, wrong, s.url, "DCGM_FI_DEV_XID_ERRORS"))
		require.Equal(t, http.StatusUnauthorized, authRemoteWrite(t, tlsOnly, s.url, "DCGM_FI_DEV_XID_ERRORS"))
		require.Equal(t, http.StatusBadRequest, authRemoteWrite(t, plain, plainURL, "DCGM_FI_DEV_XID_ERRORS"))
		// An untrusting client fails the handshake.
		code, msg := httpGet(t, plain, s.url+"/-/ready")
		require.Zero(t, code)
		require.Contains(t, msg, "certificate")
		require.Empty(t, queryVector(t, s.serveProc, `DCGM_FI_DEV_XID_ERRORS`), "nothing refused is stored")
		require.Equal(t, http.StatusNoContent, authRemoteWrite(t, s.client, s.url, "vigil_test_written"))
		require.Len(t, queryVector(t, s.serveProc, `vigil_test_written`), 1)
		// As Prometheus's, the flags page names the web configuration.
		code, body := s.get(t, "/api/v1/status/flags")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `"web.config.file":"`+s.certs.Dir+`/web.yml"`)
	})

	t.Run("prometheus remote write", func(t *testing.T) {
		passFile := s.certs.WriteFile(t, "prom.pass", promPassword)
		cfg := "global:\n  scrape_interval: 1s\n  external_labels: {source: prom-tls}\n" +
			"scrape_configs:\n  - job_name: prometheus\n    static_configs: [{targets: ['PROM_ADDR']}]\n" +
			"remote_write:\n  - url: " + s.url + "/api/v1/write\n" +
			"    basic_auth: {username: prometheus, password_file: " + passFile + "}\n" +
			"    tls_config: {ca_file: " + s.certs.CA + "}\n" +
			"    queue_config: {batch_send_deadline: 1s}\n" +
			"  - url: " + s.url + "/api/v1/write\n" +
			"    name: wrong-password\n" +
			"    basic_auth: {username: prometheus, password: not-the-password}\n" +
			"    tls_config: {ca_file: " + s.certs.CA + "}\n" +
			"    write_relabel_configs: [{target_label: source, replacement: wrong-password}]\n"
		addr := peertest.FreeAddr(t)
		cfg = strings.ReplaceAll(cfg, "PROM_ADDR", addr)
		cfgPath := s.certs.WriteFile(t, "prometheus.yml", cfg)
		prom := peertest.Start(t, "http://"+addr, addr, peertest.StatusOK("http://"+addr+"/-/ready"), peertest.LookPath(t, "prometheus"),
			"--config.file="+cfgPath, "--storage.tsdb.path="+t.TempDir(), "--web.listen-address="+addr, "--log.level=warn")
		s.waitFor(t, func() bool {
			return len(queryVector(t, s.serveProc, `prometheus_build_info{source="prom-tls"}`)) == 1
		}, "Prometheus's samples, written over TLS with basic auth")
		// The remote with the wrong password got 401s and stored nothing.
		waitFor(t, func() bool {
			return strings.Contains(prom.Output(), "401")
		}, "Prometheus logs the 401 of the wrong password", prom.Output)
		require.Empty(t, queryVector(t, s.serveProc, `up{source="wrong-password"}`))
	})

	t.Run("promtool", func(t *testing.T) {
		// Debian's promtool (2.42) predates query --http.config.file: it
		// takes the credentials in the URL and the CA from SSL_CERT_FILE,
		// which Go's crypto/x509 reads.
		u, err := url.Parse(s.url)
		require.NoError(t, err)
		u.User = url.UserPassword("alice", authPassword)
		cmd := exec.Command(peertest.LookPath(t, "promtool"), "query", "instant", u.String(), `vigil_test_written`)
		cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+s.certs.CA)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), `vigil_test_written{job="forged"} => 79`)
		out, err = exec.Command(peertest.LookPath(t, "promtool"), "check", "web-config", s.certs.Dir+"/web.yml").CombinedOutput()
		require.NoError(t, err, "%s", out)
	})

	t.Run("vigil commands with --http.config.file", func(t *testing.T) {
		r := runVigil(t, "", "incidents", "--server", s.url, "--http.config.file", s.httpConfig, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		r = runVigil(t, "", "topology", "--prometheus", s.url, "--http.config.file", s.httpConfig, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		// Without it, the CA is unknown; with a wrong password, 401.
		r = runVigil(t, "", "incidents", "--server", s.url, "--json")
		require.NotEqual(t, 0, r.code)
		require.Contains(t, r.stderr, "certificate")
		bad := s.certs.WriteFile(t, "bad-client.yml", "basic_auth: {username: alice, password: nope}\ntls_config: {ca_file: ca.pem}\n")
		r = runVigil(t, "", "incidents", "--server", s.url, "--http.config.file", bad, "--json")
		require.NotEqual(t, 0, r.code)
		require.Contains(t, r.stderr, "401")
		require.NotContains(t, r.stderr, "nope")
		r = runVigil(t, "", "incidents", "--server", s.url, "--http.config.file", filepath.Join(t.TempDir(), "none.yml"))
		requireUsage(t, r, "--http.config.file")
	})

	t.Run("otlp", func(t *testing.T) {
		clientTLS := s.certs.ClientTLS(t, false)
		send := func(headers map[string]string) (string, error) {
			exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpoint(s.otlpHTTP), otlptracehttp.WithTLSClientConfig(clientTLS),
				otlptracehttp.WithHeaders(headers), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
			require.NoError(t, err)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(sdkResourceForAuth()))
			_, span := tp.Tracer("checkout").Start(t.Context(), "POST /v1/chat")
			span.End()
			id := span.SpanContext().TraceID().String()
			return id, tp.Shutdown(t.Context())
		}
		refused, _ := send(nil) // the exporter logs the 401 through otel's handler
		id, err := send(map[string]string{"Authorization": "Bearer " + authToken})
		require.NoError(t, err)
		s.waitFor(t, func() bool {
			r := runVigil(t, "", "trace", id, "--server", s.url, "--http.config.file", s.httpConfig, "--json")
			return r.code == 0 && strings.Contains(r.stdout, "POST /v1/chat")
		}, "the trace sent with the token")
		r := runVigil(t, "", "trace", refused, "--server", s.url, "--http.config.file", s.httpConfig, "--json")
		require.Equal(t, 2, r.code, "the trace without the token was not stored: %s", r.stdout)
		// Plain text to the OTLP/HTTP TLS port.
		code, _ := httpGet(t, plain, "http://"+s.otlpHTTP+"/v1/traces")
		require.Equal(t, http.StatusBadRequest, code)
	})

	cancel()
	require.NoError(t, <-s.done)
	logs := s.stderr.String()
	require.NotContains(t, logs, "listening on all interfaces", "127.0.0.1 is not all interfaces")
	require.Contains(t, logs, "component=forward", "forwarding ran (and failed) with its token")
	for _, secret := range []string{authPassword, authToken, promPassword, amPassword, fwdToken,
		base64.StdEncoding.EncodeToString([]byte("alice:" + authPassword)), base64.StdEncoding.EncodeToString([]byte("vigil:" + amPassword))} {
		require.NotContains(t, logs, secret)
	}
}

// TestServeMutualTLS: with client_auth_type RequireAndVerifyClientCert, a
// client without a certificate or with one of another CA fails the
// handshake; the CA's client gets in.
func TestServeMutualTLS(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := startSecureServe(t, ctx, "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n")
	for name, cfg := range map[string]*tls.Config{
		"no certificate":            s.certs.ClientTLS(t, false),
		"certificate of another CA": s.certs.BadClientTLS(t),
	} {
		c := &http.Client{Transport: &basicAuth{user: "alice", pass: authPassword, next: &http.Transport{TLSClientConfig: cfg}}}
		code, msg := httpGet(t, c, s.url+"/-/ready")
		require.Zero(t, code, "%s: %s", name, msg)
		require.Equal(t, 0, authRemoteWrite(t, c, s.url, "forged_by_"+strings.ReplaceAll(name, " ", "_")))
		c.CloseIdleConnections()
	}
	code, _ := s.get(t, "/-/ready")
	require.Equal(t, http.StatusOK, code)
	code, body := s.get(t, "/api/v1/query?query="+url.QueryEscape(`{__name__=~"forged_by_.*"}`))
	require.Equal(t, http.StatusOK, code)
	var resp struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Empty(t, resp.Data.Result)
	cancel()
	require.NoError(t, <-s.done)
}

// TestServeBadWebConfig: an invalid web configuration file is one line
// and exit 2, and nothing starts: no data directory, no listener.
func TestServeBadWebConfig(t *testing.T) {
	certs := certtest.New(t)
	for name, tc := range map[string]struct{ web, want string }{
		"not YAML":        {"tls_server_config: [", "line 1: did not find expected node content"},
		"unknown field":   {"basic_auth_user:\n  alice: x\n", "field basic_auth_user not found"},
		"plain password":  {"basic_auth_users:\n  alice: " + authPassword + "\n", "basic_auth_users: a password is not a bcrypt hash"},
		"missing key":     {"tls_server_config:\n  cert_file: server.pem\n", "missing one of key or key_file"},
		"missing cert":    {"tls_server_config:\n  cert_file: none.pem\n  key_file: server-key.pem\n", "cert_file"},
		"CA without auth": {"tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_ca_file: ca.pem\n", "client CA's have been configured without a Client Auth Policy"},
	} {
		t.Run(name, func(t *testing.T) {
			web := certs.WriteFile(t, "web-"+strings.ReplaceAll(name, " ", "-")+".yml", tc.web)
			data := filepath.Join(t.TempDir(), "data")
			r := runVigil(t, "", "serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--otlp-grpc-listen", "", "--otlp-http-listen", "", "--web.config.file", web)
			requireUsage(t, r, "serve: --web.config.file: "+web+": ")
			require.Contains(t, r.stderr, tc.want)
			require.NotContains(t, r.stderr, authPassword)
			_, err := os.Stat(data)
			require.ErrorIs(t, err, os.ErrNotExist, "nothing started")
			// The same from vigil.yaml names the field.
			cfg := certs.WriteFile(t, "vigil-"+strings.ReplaceAll(name, " ", "-")+".yaml", "web:\n  config_file: "+web+"\n")
			r = runVigil(t, "", "serve", "--config", cfg, "--data-dir", data, "--listen", "127.0.0.1:0", "--otlp-grpc-listen", "", "--otlp-http-listen", "")
			requireUsage(t, r, "serve: web.config_file: "+web+": ")
		})
	}
	t.Run("demo", func(t *testing.T) {
		web := certs.WriteFile(t, "web-demo.yml", "basic_auth_users:\n  alice: plain\n")
		r := runVigil(t, "", "demo", "--serve", "--listen", "127.0.0.1:0", "--web.config.file", web)
		requireUsage(t, r, "demo: --web.config.file: "+web)
	})
}

// TestServeBadOTLPSecurity: a bad otlp.tls or otlp.auth is one line and
// exit 2, naming the field.
func TestServeBadOTLPSecurity(t *testing.T) {
	certs := certtest.New(t)
	for name, tc := range map[string]struct{ otlp, want string }{
		"key without cert": {"tls: {key_file: " + certs.ServerKey + "}", "otlp.tls: key_file is set without cert_file"},
		"missing cert":     {"tls: {cert_file: /nonexistent.pem, key_file: " + certs.ServerKey + "}", "otlp.tls: read cert_file"},
		"old TLS":          {"tls: {cert_file: " + certs.Server + ", key_file: " + certs.ServerKey + ", min_version: \"1.0\"}", "TLS 1.0 and 1.1 are not accepted"},
		"no token":         {"auth: {bearertokenauth: {}}", "otlp.auth: bearertokenauth: set token, tokens or filename"},
		"md5 htpasswd":     {"auth: {basicauth: {htpasswd: {inline: \"alice:$apr1$x$y\"}}}", `otlp.auth: basicauth.htpasswd.inline: line 1: user "alice": not a bcrypt hash`},
		"typo":             {"auth: {bearertokenauth: {tokenz: [a]}}", "otlp.auth"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := certs.WriteFile(t, "vigil-"+strings.ReplaceAll(name, " ", "-")+".yaml", "otlp:\n  "+tc.otlp+"\n")
			r := runVigil(t, "", "serve", "--config", cfg, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0")
			requireUsage(t, r, tc.want)
		})
	}
}

func sdkResourceForAuth() *resource.Resource {
	return resource.NewSchemaless(attribute.String("service.name", "checkout"))
}
