package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/certtest"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
)

func TestLoadWebConfig(t *testing.T) {
	certs := certtest.New(t)
	hash := certtest.Hash(t, "pw")
	f := func(content string, want WebSecurity) {
		t.Helper()
		ws, err := LoadWebConfig(certs.WriteFile(t, "web.yml", content))
		require.NoError(t, err)
		require.Equal(t, want, ws)
	}
	f("", WebSecurity{})
	f("basic_auth_users:\n  alice: "+hash+"\n", WebSecurity{Users: 1})
	f("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n", WebSecurity{TLS: true})
	f("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n",
		WebSecurity{TLS: true, ClientCerts: true})
	f("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.pem\n",
		WebSecurity{TLS: true})

	ws, err := LoadWebConfig("")
	require.NoError(t, err)
	require.False(t, ws.Authenticates())
	_, err = LoadWebConfig(filepath.Join(t.TempDir(), "none.yml"))
	require.ErrorContains(t, err, "web.config_file: ")
	_, err = LoadWebConfig(certs.WriteFile(t, "bad.yml", "basic_auth_users:\n  alice: pw\n"))
	require.ErrorContains(t, err, "basic_auth_users: a password is not a bcrypt hash")
	require.NotContains(t, err.Error(), "\n")
}

func TestOTLPAuthenticates(t *testing.T) {
	certs := certtest.New(t)
	tls := otlp.TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey}
	mtls := tls
	mtls.ClientCAFile = certs.CA
	optional := mtls
	optional.ClientAuthType = "VerifyClientCertIfGiven"
	for name, tc := range map[string]struct {
		o    OTLPConfig
		want bool
	}{
		"nothing":            {OTLPConfig{}, false},
		"TLS only":           {OTLPConfig{TLS: tls}, false},
		"mutual TLS":         {OTLPConfig{TLS: mtls}, true},
		"optional client":    {OTLPConfig{TLS: optional}, false},
		"token":              {OTLPConfig{Auth: otlp.AuthConfig{BearerToken: &otlp.BearerTokenConfig{Token: "x"}}}, true},
		"TLS and basic auth": {OTLPConfig{TLS: tls, Auth: otlp.AuthConfig{Basic: &otlp.BasicAuthConfig{}}}, true},
	} {
		require.Equal(t, tc.want, tc.o.OTLPAuthenticates(), name)
	}
}

// TestParseOTLPSecurity reads otlp.tls and otlp.auth from vigil.yaml.
func TestParseOTLPSecurity(t *testing.T) {
	certs := certtest.New(t)
	tokens := certs.WriteFile(t, "tokens", "a\nb\n")
	b := []byte("otlp:\n  tls:\n    cert_file: " + certs.Server + "\n    key_file: " + certs.ServerKey + "\n    client_ca_file: " + certs.CA + "\n    min_version: \"1.3\"\n" +
		"  auth:\n    bearertokenauth:\n      scheme: Token\n      filename: " + tokens + "\n    basicauth:\n      htpasswd:\n        inline: \"alice:" + certtest.Hash(t, "pw") + "\"\n" +
		"web:\n  config_file: /etc/vigil/web.yml\n")
	cfg, err := Parse("vigil.yaml", b)
	require.NoError(t, err)
	require.Equal(t, "/etc/vigil/web.yml", cfg.Web.ConfigFile)
	require.Equal(t, certs.CA, cfg.OTLP.TLS.ClientCAFile)
	require.Equal(t, "Token", *cfg.OTLP.Auth.BearerToken.Scheme)
	require.True(t, cfg.OTLP.OTLPAuthenticates())
	tc, err := cfg.OTLP.TLS.ServerConfig()
	require.NoError(t, err)
	require.EqualValues(t, 0x0304, tc.MinVersion)

	// The files are read at start, where the server runs, not here.
	_, err = Parse("vigil.yaml", []byte("otlp:\n  auth:\n    bearertokenauth:\n      filename: "+filepath.Join(t.TempDir(), "none")+"\n"))
	require.NoError(t, err)
	_, err = Parse("vigil.yaml", []byte("otlp:\n  auth:\n    bearertokenauth: {}\n"))
	require.ErrorContains(t, err, "vigil.yaml:3: otlp.auth: bearertokenauth: set token, tokens or filename")
	_, err = Parse("vigil.yaml", []byte("otlp:\n  tls: {cert_file: a.pem, key_file: b.pem, client_auth_type: RequireAndVerifyClientCert}\n"))
	require.ErrorContains(t, err, "vigil.yaml:2: otlp.tls: client_auth_type RequireAndVerifyClientCert needs client_ca_file")
	// The token never shows in an error.
	_, err = Parse("vigil.yaml", []byte("otlp:\n  auth:\n    bearertokenauth:\n      token: hunter2\n      header: [x]\n"))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
	require.NoError(t, os.Remove(tokens))
}
