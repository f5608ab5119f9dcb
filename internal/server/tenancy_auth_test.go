package server

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/crypto/bcrypt"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/tenant"
)

// TestTenancyOTLP: the OpenTelemetry SDK's exporters write spans as
// tenants a (OTLP/HTTP, the header) and b (OTLP/gRPC, the metadata); a
// span with no tenant is refused on both; each tenant reads its own.
func TestTenancyOTLP(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Evaluation.Enabled = false
	cfg.Tenancy.Enabled = true
	cfg.OTLP.GRPCListen, cfg.OTLP.HTTPListen = freeAddr(t), freeAddr(t)
	require.NoError(t, cfg.Validate())
	s := New(Options{Config: cfg, OTLPExplicit: OTLPExplicit{GRPC: true, HTTP: true}})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	base := "http://" + s.Addr().String()
	ctx := t.Context()

	httpExp := func(h map[string]string) sdktrace.SpanExporter {
		e, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(cfg.OTLP.HTTPListen), otlptracehttp.WithInsecure(), otlptracehttp.WithHeaders(h), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		require.NoError(t, err)
		return e
	}
	grpcExp := func(h map[string]string) sdktrace.SpanExporter {
		e, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(cfg.OTLP.GRPCListen), otlptracegrpc.WithInsecure(), otlptracegrpc.WithHeaders(h), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
		require.NoError(t, err)
		return e
	}
	send := func(exp sdktrace.SpanExporter, svc string) error {
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
		_, sp := tp.Tracer("test").Start(ctx, "GET /"+svc)
		sp.End()
		ro := sp.(sdktrace.ReadOnlySpan)
		err := exp.ExportSpans(ctx, []sdktrace.ReadOnlySpan{ro})
		_ = exp.Shutdown(ctx)
		_ = tp.Shutdown(ctx)
		return err
	}
	require.NoError(t, send(httpExp(map[string]string{tenant.Header: "a"}), "svc_"+marker("a")))
	require.NoError(t, send(grpcExp(map[string]string{"x-scope-orgid": "b"}), "svc_"+marker("b")))
	require.ErrorContains(t, send(httpExp(nil), "svc_nobody_marker"), "401", "OTLP/HTTP with no tenant")
	require.Error(t, send(grpcExp(nil), "svc_nobody_marker"), "OTLP/gRPC with no tenant")
	require.Error(t, send(grpcExp(map[string]string{"x-scope-orgid": "../etc"}), "svc_nobody_marker"), "OTLP/gRPC with an invalid tenant")

	for _, who := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[who]
		ans := sendAs(t, base+"/api/v1/traces?limit=100", who)
		require.Equal(t, http.StatusOK, ans.code, ans.body)
		require.Contains(t, ans.body, marker(who))
		require.NotContains(t, ans.body, marker(other))
		require.NotContains(t, ans.body, "nobody")
	}
}

func sendAs(t *testing.T, u, who string) answer {
	return send(t, http.MethodGet, u, who, "", nil)
}

// TestTenancyIdentities: with the web config file's basic-auth users
// mapped to tenants, a user reads its own tenant without a header, a
// header naming another tenant (forged) is refused, a platform user reads
// across tenants and the endpoints that are no tenant's, and a user the
// mapping does not know is refused.
func TestTenancyIdentities(t *testing.T) {
	dir := t.TempDir()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		require.NoError(t, err)
		return string(h)
	}
	web := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(web, []byte("basic_auth_users:\n  alice: "+hash("pa")+"\n  bob: "+hash("pb")+"\n  ops: "+hash("po")+"\n  eve: "+hash("pe")+"\n"), 0o600))
	cfg := testConfig(t, filepath.Join(dir, "data"))
	cfg.Evaluation.Enabled = false
	cfg.Web.ConfigFile = web
	cfg.Tenancy.Enabled = true
	cfg.Tenancy.Identities = map[string]tenant.Identity{
		"alice": {Tenants: []string{"a"}}, "bob": {Tenants: []string{"b"}}, "ops": {Role: "platform"},
	}
	require.NoError(t, cfg.Validate())
	s := New(Options{Config: cfg})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	base := "http://" + s.Addr().String()
	req := func(method, path, user, pw, header string, body string) answer {
		r, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if user != "" {
			r.SetBasicAuth(user, pw)
		}
		if header != "" {
			r.Header.Set(tenant.Header, header)
		}
		if body != "" {
			r.Header.Set("Content-Type", "text/plain")
		}
		return do(t, r)
	}
	// Writes through push as each user's own tenant, no header needed.
	for _, u := range [][3]string{{"alice", "pa", "a"}, {"bob", "pb", "b"}} {
		ans := req(http.MethodPut, "/metrics/job/j", u[0], u[1], "", "m{owner=\""+marker(u[2])+"\"} 1\n")
		require.Equal(t, http.StatusOK, ans.code, ans.body)
	}
	q := "/api/v1/query?query=m"
	require.Equal(t, http.StatusUnauthorized, req(http.MethodGet, q, "", "", "a", "").code, "no credentials")
	require.Equal(t, http.StatusUnauthorized, req(http.MethodGet, q, "alice", "wrong", "", "").code, "a wrong password")
	ans := req(http.MethodGet, q, "alice", "pa", "", "")
	require.Equal(t, http.StatusOK, ans.code)
	require.Contains(t, ans.body, marker("a"))
	require.NotContains(t, ans.body, marker("b"))
	ans = req(http.MethodGet, q, "alice", "pa", "b", "")
	require.Equal(t, http.StatusForbidden, ans.code, "alice forging b's header: %s", ans.body)
	require.NotContains(t, ans.body, marker("b"))
	ans = req(http.MethodGet, q, "alice", "pa", "a|b", "")
	require.Equal(t, http.StatusForbidden, ans.code, "alice reading across tenants")
	ans = req(http.MethodGet, q, "eve", "pe", "a", "")
	require.Equal(t, http.StatusForbidden, ans.code, "a user with no tenant")
	ans = req(http.MethodDelete, "/metrics/job/j", "alice", "pa", "b", "")
	require.Equal(t, http.StatusForbidden, ans.code, "alice deleting b's group")
	ans = req(http.MethodGet, q, "ops", "po", "a|b", "")
	require.Equal(t, http.StatusOK, ans.code)
	require.Contains(t, ans.body, marker("a"))
	require.Contains(t, ans.body, marker("b"))
	require.Contains(t, ans.body, tenant.Label, "a read across tenants shows the tenant label")
	require.Equal(t, http.StatusOK, req(http.MethodGet, "/api/v1/status/tsdb", "ops", "po", "", "").code, "the platform role reads what is no tenant's")
	require.Equal(t, http.StatusForbidden, req(http.MethodGet, "/api/v1/status/tsdb", "alice", "pa", "", "").code)
}

// TestTenancyAudit: an admin's write into another tenant and a push
// group's deletion are logged as admin actions — who, on which tenant,
// what, the answer — and a secret sent along is not.
func TestTenancyAudit(t *testing.T) {
	dir := t.TempDir()
	h, err := bcrypt.GenerateFromPassword([]byte("root-secret-pw"), bcrypt.MinCost)
	require.NoError(t, err)
	web := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(web, []byte("basic_auth_users:\n  root: "+string(h)+"\n"), 0o600))
	cfg := testConfig(t, filepath.Join(dir, "data"))
	cfg.Evaluation.Enabled = false
	cfg.Web.ConfigFile = web
	cfg.Tenancy.Enabled = true
	cfg.Tenancy.Identities = map[string]tenant.Identity{"root": {Role: "admin"}}
	require.NoError(t, cfg.Validate())
	var logs peertest.SyncBuffer
	s := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	base := "http://" + s.Addr().String()
	for _, m := range []string{http.MethodPut, http.MethodDelete} {
		r, err := http.NewRequest(m, base+"/metrics/job/j", strings.NewReader("x 1\n"))
		require.NoError(t, err)
		r.SetBasicAuth("root", "root-secret-pw")
		r.Header.Set(tenant.Header, "b")
		ans := do(t, r)
		require.Less(t, ans.code, 300, ans.body)
	}
	out := logs.String()
	require.Contains(t, out, `msg="admin action" component=audit identity=root role=admin tenants=b method=PUT path=/metrics/job/j status=200`)
	require.Contains(t, out, `method=DELETE path=/metrics/job/j status=202`)
	require.NotContains(t, out, "root-secret-pw")
}
