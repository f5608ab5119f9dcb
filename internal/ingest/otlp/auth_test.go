package otlp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/vigil-obs/vigil/internal/certtest"
)

func basicHeader(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestAuthenticate(t *testing.T) {
	certs := certtest.New(t)
	tokenFile := certs.WriteFile(t, "tokens", "# rotated weekly\n\nfile-token-1\n  file-token-2  \n")
	htpasswd := certs.WriteFile(t, "htpasswd", "alice:"+certtest.Hash(t, "wonderland")+"\n")
	a, err := NewAuthenticator(AuthConfig{
		BearerToken: &BearerTokenConfig{Token: "tok-0", Tokens: []commoncfg.Secret{"tok-1", "tok-2"}, Filename: tokenFile},
		Basic:       &BasicAuthConfig{Htpasswd: HtpasswdConfig{File: htpasswd, Inline: commoncfg.Secret("bob:" + certtest.Hash(t, "builder"))}},
	})
	require.NoError(t, err)
	f := func(header, wantID string) {
		t.Helper()
		md := map[string][]string{}
		if header != "" {
			md["authorization"] = []string{header}
		}
		id, err := a.Authenticate(md)
		if wantID == "" {
			require.ErrorIs(t, err, ErrUnauthenticated, header)
			for _, secret := range []string{"wonderland", "tok-", "nope"} {
				require.NotContains(t, err.Error(), secret)
			}
			return
		}
		require.NoError(t, err, header)
		require.Equal(t, wantID, id)
	}
	f("Bearer tok-0", "token-0")
	f("bearer tok-2", "token-2")
	f("Bearer file-token-1", "token-3")
	f("Bearer file-token-2", "token-4")
	f(basicHeader("alice", "wonderland"), "alice")
	f(basicHeader("alice", "wonderland"), "alice") // remembered
	f(basicHeader("bob", "builder"), "bob")
	f("", "")
	f("Bearer nope", "")
	f("Bearer", "")
	f("Bearer tok-0x", "")
	f("tok-0", "")
	f(basicHeader("alice", "wrong"), "")
	f(basicHeader("mallory", "wonderland"), "")
	f("Basic !!!notbase64", "")
	f("Basic "+base64.StdEncoding.EncodeToString([]byte("nocolon")), "")
}

func TestBearerSchemeAndHeader(t *testing.T) {
	empty := ""
	bare, err := NewAuthenticator(AuthConfig{BearerToken: &BearerTokenConfig{Scheme: &empty, Token: "t"}})
	require.NoError(t, err)
	id, err := bare.Authenticate(map[string][]string{"authorization": {"t"}})
	require.NoError(t, err)
	require.Equal(t, "token-0", id)
	_, err = bare.Authenticate(map[string][]string{"authorization": {"Bearer t"}})
	require.ErrorIs(t, err, ErrUnauthenticated)

	custom := "Token"
	h, err := NewAuthenticator(AuthConfig{BearerToken: &BearerTokenConfig{Header: "X-API-Key", Scheme: &custom, Token: "t"}})
	require.NoError(t, err)
	_, err = h.Authenticate(map[string][]string{"x-api-key": {"Token t"}})
	require.NoError(t, err)
	_, err = h.Authenticate(map[string][]string{"authorization": {"Token t"}})
	require.ErrorIs(t, err, ErrUnauthenticated)
}

func TestAuthConfigErrors(t *testing.T) {
	dir := t.TempDir()
	md5 := filepath.Join(dir, "md5")
	require.NoError(t, os.WriteFile(md5, []byte("alice:$apr1$abc$def\n"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("# nothing\n"), 0o600))
	for name, tc := range map[string]struct {
		yaml, want string
	}{
		"no token":       {"bearertokenauth: {scheme: Bearer}", "bearertokenauth: set token, tokens or filename"},
		"empty tokens":   {`bearertokenauth: {tokens: [""]}`, "bearertokenauth.tokens[0]: empty token"},
		"missing file":   {"bearertokenauth: {filename: " + filepath.Join(dir, "none") + "}", "bearertokenauth.filename: read tokens: open"},
		"empty file":     {"bearertokenauth: {filename: " + empty + "}", "holds no token"},
		"no users":       {"basicauth: {htpasswd: {}}", "basicauth.htpasswd: set file or inline"},
		"md5 hash":       {"basicauth: {htpasswd: {file: " + md5 + "}}", `line 1: user "alice": not a bcrypt hash`},
		"unknown field":  {"bearertokenauth: {token: x, tokenz: [y]}", "unknown field tokenz"},
		"unknown kind":   {"oauth2: {}", "unknown field oauth2"},
		"inline garbage": {"basicauth: {htpasswd: {inline: \"alice\"}}", "basicauth.htpasswd.inline: line 1: not user:hash"},
	} {
		t.Run(name, func(t *testing.T) {
			var c AuthConfig
			err := yaml.Unmarshal([]byte(tc.yaml), &c)
			if err == nil {
				_, err = NewAuthenticator(c) // reads the files too
			}
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestParseHtpasswd(t *testing.T) {
	hash := certtest.Hash(t, "pw")
	f := func(in, wantErr string, wantUsers ...string) {
		t.Helper()
		users, err := ParseHtpasswd([]byte(in))
		if wantErr != "" {
			require.ErrorContains(t, err, wantErr)
			require.NotContains(t, err.Error(), "$2")
			return
		}
		require.NoError(t, err)
		require.Len(t, users, len(wantUsers))
		for _, u := range wantUsers {
			require.Contains(t, users, u)
		}
	}
	f("", "")
	f("# comment\n\nalice:"+hash+"\r\nbob:"+hash+"\n", "", "alice", "bob")
	f("alice:"+hash+"\nalice:"+hash, `line 2: user "alice" appears twice`)
	f("alice", "line 1: not user:hash")
	f(":"+hash, "line 1: empty user name")
	f("al ice:"+hash, "the user name has a blank")
	f("alice:plaintext", `line 1: user "alice": not a bcrypt hash`)
	f("alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "not a bcrypt hash")
}

func TestParseTokens(t *testing.T) {
	require.Equal(t, []string{"a", "b c"}, ParseTokens([]byte("# x\n a \n\n\tb c\n")))
	require.Empty(t, ParseTokens(nil))
}

func FuzzParseHtpasswd(f *testing.F) {
	f.Add([]byte("alice:$2y$04$" + strings.Repeat("a", 53) + "\n"))
	f.Add([]byte("# c\n\nbob:$apr1$x$y\n"))
	f.Add([]byte(":\n:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		users, err := ParseHtpasswd(b)
		if err != nil {
			require.NotContains(t, err.Error(), "\n")
			return
		}
		for u, h := range users {
			require.NotEmpty(t, u)
			require.NotContains(t, u, ":")
			require.True(t, isBcrypt(string(h)), "only bcrypt hashes are kept")
		}
	})
}

func FuzzParseTokens(f *testing.F) {
	f.Add([]byte("a\nb\n# c\n"))
	f.Add([]byte("\r\n\t\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, tok := range ParseTokens(b) {
			require.NotEmpty(t, tok)
			require.Equal(t, strings.TrimSpace(tok), tok)
			require.False(t, strings.HasPrefix(tok, "#"))
			require.NotContains(t, tok, "\n")
		}
	})
}

// FuzzAuthenticate sends any Authorization header: nothing but the
// configured credentials lets a request in, and nothing panics.
func FuzzAuthenticate(f *testing.F) {
	hash := "$2a$04$1vYyJ6pM3CZaCGqkQ1sMyeuB8pN5yoWn7v2ivBpC4cUuJ8J8CkLnC"
	a, err := NewAuthenticator(AuthConfig{
		BearerToken: &BearerTokenConfig{Token: "secret-token"},
		Basic:       &BasicAuthConfig{Htpasswd: HtpasswdConfig{Inline: commoncfg.Secret("alice:" + hash)}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Bearer secret-token")
	f.Add("Basic YWxpY2U6eA==")
	f.Add("Bearer ")
	f.Add("Basic")
	f.Fuzz(func(t *testing.T, h string) {
		id, err := a.Authenticate(map[string][]string{"authorization": {h}})
		if err != nil {
			require.ErrorIs(t, err, ErrUnauthenticated)
			return
		}
		if id == "token-0" {
			require.True(t, strings.EqualFold(h[:7], "bearer ") && strings.TrimSpace(h[7:]) == "secret-token", h)
		}
	})
}

// identitySink keeps the spans it gets and the identity and tenant of
// their requests.
type identitySink struct {
	sink
	mu      sync.Mutex
	ids     []string
	tenants []string
}

type tenantKey struct{}

func (s *identitySink) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	id, _ := Identity(ctx)
	tenant, _ := ctx.Value(tenantKey{}).(string)
	s.mu.Lock()
	s.ids = append(s.ids, id)
	s.tenants = append(s.tenants, tenant)
	s.mu.Unlock()
	return s.sink.ConsumeTraces(ctx, td)
}

func (s *identitySink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	return s.sink.ConsumeLogs(ctx, ld)
}

func (s *identitySink) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	return s.sink.ConsumeMetrics(ctx, md)
}

// secureReceiver serves traces over TLS (mutual when clientCA) with a
// bearer token and an alice:wonderland user.
func secureReceiver(t *testing.T, certs certtest.Files, clientCA bool, onRequest func(context.Context, map[string][]string) (context.Context, error)) (*testReceiver, *identitySink) {
	t.Helper()
	tc := TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey}
	if clientCA {
		tc.ClientCAFile = certs.CA
	}
	srvTLS, err := tc.ServerConfig()
	require.NoError(t, err)
	auth, err := NewAuthenticator(AuthConfig{
		BearerToken: &BearerTokenConfig{Token: "s3cret"},
		Basic:       &BasicAuthConfig{Htpasswd: HtpasswdConfig{Inline: commoncfg.Secret("alice:" + certtest.Hash(t, "wonderland"))}},
	})
	require.NoError(t, err)
	s := &identitySink{}
	tr := startReceiver(t, nil, Options{Traces: s, Logs: s, Metrics: s, TLS: srvTLS, Auth: auth, OnRequest: onRequest})
	tr.httpURL = strings.Replace(tr.httpURL, "http://", "https://", 1)
	return tr, s
}

func exportGRPC(t *testing.T, addr string, creds credentials.TransportCredentials, md metadata.MD) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer conn.Close()
	ctx := metadata.NewOutgoingContext(t.Context(), md)
	_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(newTraces(2, 0)))
	return err
}

func exportHTTP(t *testing.T, url string, tlsCfg *tls.Config, header string) (int, error) {
	t.Helper()
	body, err := ptraceotlp.NewExportRequestFromTraces(newTraces(2, 0)).MarshalProto()
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/traces", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentTypeProto)
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// TestReceiverRefusesWithoutCredentials: a wrong password, a wrong or
// absent token, plain text to the TLS port and a client certificate of
// another CA are all refused, on both transports, and nothing reaches
// the consumer.
func TestReceiverRefusesWithoutCredentials(t *testing.T) {
	certs := certtest.New(t)
	tr, s := secureReceiver(t, certs, true, nil)
	good := credentials.NewTLS(certs.ClientTLS(t, true))

	for name, md := range map[string]metadata.MD{
		"no token":       nil,
		"wrong token":    metadata.Pairs("authorization", "Bearer wrong"),
		"wrong password": metadata.Pairs("authorization", basicHeader("alice", "queen")),
	} {
		t.Run("grpc "+name, func(t *testing.T) {
			err := exportGRPC(t, tr.grpcAddr, good, md)
			require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
		})
	}
	t.Run("grpc plain text", func(t *testing.T) {
		err := exportGRPC(t, tr.grpcAddr, insecure.NewCredentials(), metadata.Pairs("authorization", "Bearer s3cret"))
		require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})
	t.Run("grpc no client certificate", func(t *testing.T) {
		err := exportGRPC(t, tr.grpcAddr, credentials.NewTLS(certs.ClientTLS(t, false)), metadata.Pairs("authorization", "Bearer s3cret"))
		require.Error(t, err)
	})
	t.Run("grpc certificate of another CA", func(t *testing.T) {
		err := exportGRPC(t, tr.grpcAddr, credentials.NewTLS(certs.BadClientTLS(t)), metadata.Pairs("authorization", "Bearer s3cret"))
		require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})

	for name, header := range map[string]string{
		"no token":       "",
		"wrong token":    "Bearer wrong",
		"wrong password": basicHeader("alice", "queen"),
	} {
		t.Run("http "+name, func(t *testing.T) {
			code, err := exportHTTP(t, tr.httpURL, certs.ClientTLS(t, true), header)
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, code)
		})
	}
	t.Run("http plain text", func(t *testing.T) {
		code, err := exportHTTP(t, strings.Replace(tr.httpURL, "https://", "http://", 1), nil, "Bearer s3cret")
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code)
	})
	t.Run("http certificate of another CA", func(t *testing.T) {
		_, err := exportHTTP(t, tr.httpURL, certs.BadClientTLS(t), "Bearer s3cret")
		require.Error(t, err)
	})
	t.Run("http no client certificate", func(t *testing.T) {
		_, err := exportHTTP(t, tr.httpURL, certs.ClientTLS(t, false), "Bearer s3cret")
		require.Error(t, err)
	})
	require.Empty(t, s.spans(), "nothing refused reaches the consumer")
	require.Equal(t, 3.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", "grpc", "signal", "traces", "reason", "unauthenticated"))
	require.Equal(t, 3.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", "http", "signal", "traces", "reason", "unauthenticated"))

	// And the right credentials get in, with their identity.
	require.NoError(t, exportGRPC(t, tr.grpcAddr, good, metadata.Pairs("authorization", "Bearer s3cret")))
	code, err := exportHTTP(t, tr.httpURL, certs.ClientTLS(t, true), basicHeader("alice", "wonderland"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, s.spans(), 4)
	require.Equal(t, []string{"token-0", "alice"}, s.ids)
}

// TestSDKExporterWithTLSAndToken: the OpenTelemetry SDK's exporters,
// over TLS with a bearer token, write spans the consumer gets with the
// token's identity.
func TestSDKExporterWithTLSAndToken(t *testing.T) {
	certs := certtest.New(t)
	tr, s := secureReceiver(t, certs, false, nil)
	headers := map[string]string{"Authorization": "Bearer s3cret"}
	clientTLS := certs.ClientTLS(t, false)
	ctx := t.Context()
	g, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(tr.grpcAddr), otlptracegrpc.WithTLSCredentials(credentials.NewTLS(clientTLS)), otlptracegrpc.WithHeaders(headers))
	require.NoError(t, err)
	h, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(strings.TrimPrefix(tr.httpURL, "https://")), otlptracehttp.WithTLSClientConfig(clientTLS), otlptracehttp.WithHeaders(headers))
	require.NoError(t, err)
	for _, exp := range []sdktrace.SpanExporter{g, h} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(sdkResource))
		_, span := tp.Tracer("checkout").Start(ctx, "GET /cart")
		span.End()
		require.NoError(t, tp.Shutdown(ctx))
	}
	require.Len(t, s.spans(), 2)
	require.Equal(t, []string{"token-0", "token-0"}, s.ids)
}

// TestOnRequest: the hook sees the metadata of both transports with
// lower-case keys, its context reaches the consumer, and its error
// refuses the request with its status.
func TestOnRequest(t *testing.T) {
	certs := certtest.New(t)
	hook := func(ctx context.Context, md map[string][]string) (context.Context, error) {
		vs := md["x-scope-orgid"]
		switch {
		case len(vs) == 0:
			return nil, errors.New("no tenant")
		case vs[0] == "forbidden":
			return nil, status.Error(codes.PermissionDenied, "tenant forbidden")
		}
		return context.WithValue(ctx, tenantKey{}, vs[0]), nil
	}
	tr, s := secureReceiver(t, certs, false, hook)
	creds := credentials.NewTLS(certs.ClientTLS(t, false))
	require.NoError(t, exportGRPC(t, tr.grpcAddr, creds, metadata.Pairs("authorization", "Bearer s3cret", "x-scope-orgid", "team-a")))
	err := exportGRPC(t, tr.grpcAddr, creds, metadata.Pairs("authorization", "Bearer s3cret"))
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	require.ErrorContains(t, err, "no tenant")
	err = exportGRPC(t, tr.grpcAddr, creds, metadata.Pairs("authorization", "Bearer s3cret", "x-scope-orgid", "forbidden"))
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	// The hook runs after authentication: no token, no hook.
	err = exportGRPC(t, tr.grpcAddr, creds, metadata.Pairs("x-scope-orgid", "team-a"))
	require.Equal(t, codes.Unauthenticated, status.Code(err))

	f := func(tenant string, want int) {
		t.Helper()
		body, err := ptraceotlp.NewExportRequestFromTraces(newTraces(1, 0)).MarshalProto()
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, tr.httpURL+"/v1/traces", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", contentTypeProto)
		req.Header.Set("Authorization", "Bearer s3cret")
		if tenant != "" {
			req.Header.Set("X-Scope-OrgID", tenant)
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(t, false)}}
		defer c.CloseIdleConnections()
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode)
	}
	f("team-b", http.StatusOK)
	f("", http.StatusUnauthorized)
	f("forbidden", http.StatusForbidden)
	require.Equal(t, []string{"team-a", "team-b"}, s.tenants)
	require.Len(t, s.spans(), 3)
}

func TestTLSConfigErrors(t *testing.T) {
	certs := certtest.New(t)
	notPEM := certs.WriteFile(t, "not-a-ca.pem", "hello\n")
	f := func(c TLSConfig, want string) {
		t.Helper()
		_, err := c.ServerConfig()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, want)
		require.NotContains(t, err.Error(), "\n")
	}
	ok := TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey}
	f(ok, "")
	f(TLSConfig{}, "")
	f(TLSConfig{ClientCAFile: certs.CA}, "set cert_file and key_file")
	f(TLSConfig{CertFile: certs.Server}, "cert_file is set without key_file")
	f(TLSConfig{CertFile: certs.Server, KeyFile: certs.CA}, "load X509KeyPair")
	f(TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey, ClientCAFile: notPEM}, "holds no PEM certificate")
	f(TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey, ClientAuthType: "RequireAndVerifyClientCert"}, "needs client_ca_file")
	f(TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey, ClientAuthType: "Sometimes"}, `client_auth_type "Sometimes"`)
	f(TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey, MinVersion: "1.1"}, "TLS 1.0 and 1.1 are not accepted")
	f(TLSConfig{CertFile: certs.Server, KeyFile: certs.ServerKey, MinVersion: "TLS13"}, "")
}

// TestAuthFilesReload: a rotated token file and a changed htpasswd file
// are taken within a second, with no restart; a changed file that does
// not parse leaves the credentials as they were.
func TestAuthFilesReload(t *testing.T) {
	certs := certtest.New(t)
	tokens := certs.WriteFile(t, "tokens", "first-token\n")
	htpasswd := certs.WriteFile(t, "htpasswd", "alice:"+certtest.Hash(t, "one")+"\n")
	a, err := NewAuthenticator(AuthConfig{
		BearerToken: &BearerTokenConfig{Filename: tokens},
		Basic:       &BasicAuthConfig{Htpasswd: HtpasswdConfig{File: htpasswd}},
	})
	require.NoError(t, err)
	now := time.Now()
	a.now = func() time.Time { return now }
	ok := func(header string) bool {
		_, err := a.Authenticate(map[string][]string{"authorization": {header}})
		return err == nil
	}
	// rewrite changes a file and moves its modification time, as a
	// Secret's update does.
	rewrite := func(path, content string) {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		mod := now.Add(time.Hour)
		require.NoError(t, os.Chtimes(path, mod, mod))
	}
	require.True(t, ok("Bearer first-token"))
	require.True(t, ok(basicHeader("alice", "one")))

	rewrite(tokens, "second-token\n")
	rewrite(htpasswd, "alice:"+certtest.Hash(t, "two")+"\nbob:"+certtest.Hash(t, "three")+"\n")
	require.True(t, ok("Bearer first-token"), "within the second, what was loaded")
	now = now.Add(reloadEvery)
	require.True(t, ok("Bearer second-token"))
	require.False(t, ok("Bearer first-token"))
	require.False(t, ok(basicHeader("alice", "one")))
	require.True(t, ok(basicHeader("alice", "two")))
	require.True(t, ok(basicHeader("bob", "three")))

	rewrite(htpasswd, "alice:plaintext\n")
	now = now.Add(2 * reloadEvery)
	require.True(t, ok(basicHeader("alice", "two")), "a file that does not parse changes nothing")
	require.True(t, ok("Bearer second-token"))
}
