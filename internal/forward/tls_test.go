package forward

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-obs/vigil/internal/certtest"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
)

// idSink keeps the identities the receiver authenticated the spans as.
type idSink struct {
	sink
	idMu sync.Mutex
	ids  []string
}

func (s *idSink) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	id, _ := otlp.Identity(ctx)
	s.idMu.Lock()
	s.ids = append(s.ids, id)
	s.idMu.Unlock()
	return s.sink.ConsumeTraces(ctx, td)
}

// TestForwardTLSAndToken forwards to Vigil's own OTLP receiver served
// over mutual TLS with a bearer token: tls_config (the CA, the client's
// certificate) and authorization (the token file, read again before each
// export) get the spans through, on both protocols; the token file
// rotated mid-way is taken.
func TestForwardTLSAndToken(t *testing.T) {
	certs := certtest.New(t)
	tc := otlp.TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey, ClientCAFile: certs.CA}
	srvTLS, err := tc.ServerConfig()
	require.NoError(t, err)
	auth, err := otlp.NewAuthenticator(otlp.AuthConfig{BearerToken: &otlp.BearerTokenConfig{Tokens: []commoncfg.Secret{"old-token", "new-token"}}})
	require.NoError(t, err)
	s := &idSink{}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r, err := otlp.New(otlp.Options{GRPC: gl, HTTP: hl, Traces: s, Logs: s, TLS: srvTLS, Auth: auth, Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.NoError(t, r.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Shutdown(ctx))
	})
	token := certs.WriteFile(t, "token", "old-token\n")
	tlsYAML := "ca_file: " + certs.CA + "\ncert_file: " + certs.Client + "\nkey_file: " + certs.ClientKey + "\n"
	total := 0
	for _, endpoint := range []string{"grpcs://" + gl.Addr().String(), "https://" + hl.Addr().String()} {
		cfg := DefaultConfig()
		cfg.Endpoint = endpoint
		cfg.Authorization = Authorization{CredentialsFile: token}
		require.NoError(t, yaml.Unmarshal([]byte(tlsYAML), &cfg.TLS))
		require.NoError(t, cfg.Validate())
		f := startForwarder(t, cfg, nil)
		require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(1, 10)))
		total += 10
		eventually(t, func() bool { n, _ := s.counts(); return n == total }, "the spans arrive at %s", endpoint)
		require.NoError(t, os.WriteFile(token, []byte("new-token"), 0o600))
		require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(2, 10)))
		total += 10
		eventually(t, func() bool { n, _ := s.counts(); return n == total }, "the spans arrive with the rotated token at %s", endpoint)
		require.NoError(t, f.stop())
		require.NoError(t, os.WriteFile(token, []byte("old-token"), 0o600))
	}
	require.Equal(t, []string{"token-0", "token-1", "token-0", "token-1"}, s.ids)
}

func TestForwardTLSConfigValidate(t *testing.T) {
	f := func(doc, want string) {
		t.Helper()
		cfg := DefaultConfig()
		err := yaml.Unmarshal([]byte(doc), &cfg)
		if err == nil {
			err = cfg.Validate()
		}
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, want)
	}
	f("endpoint: https://tempo:4318\ntls_config: {ca_file: ca.pem}\nauthorization: {credentials_file: t}\n", "")
	f("endpoint: grpc://tempo:4317\ntls_config: {ca_file: ca.pem}\n", "tls_config: the endpoint grpc://tempo:4317 is plain text")
	f("endpoint: https://tempo:4318\ntls_config: {cert_file: c.pem}\n", "exactly one of key or key_file")
	f("endpoint: https://tempo:4318\ntls_config: {ca_flie: x}\n", "unknown field ca_flie")
	f("endpoint: https://u:p@tempo:4318\nauthorization: {credentials_file: t}\n", "authorization: the endpoint has a user and password too")
	f("endpoint: https://tempo:4318\nheaders: [\"Authorization: Bearer x\"]\nauthorization: {credentials_file: t}\n", "headers[0]: Authorization is set by authorization too")
	f("authorization: {type: Bearer}\n", "authorization: type is set without credentials_file")
}
