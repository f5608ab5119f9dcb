package main

import (
	"context"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-obs/vigil/internal/ingest/otlp"
)

var otlpHTTPRE = regexp.MustCompile(`transport=OTLP/HTTP address=(\S+)`)

// TestServeOTLPRedacted sends a span carrying a (fake) secret from the
// OpenTelemetry Go SDK to `vigil serve` over OTLP/HTTP: the trace is
// served with the secret redacted, and the secret is nowhere in the data
// directory or in Vigil's logs.
func TestServeOTLPRedacted(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	s := startServe(t, ctx, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-s.done)
		}
	}
	defer stop()
	m := otlpHTTPRE.FindStringSubmatch(s.stderr.String())
	require.NotNil(t, m, "no OTLP/HTTP address in:\n%s", s.stderr)

	const secret = "sk-proj-Zq3xV9kLm2Pn8Rt5Wy7Ab4Cd6Ef1Gh0JkLmNoPqRsTuVwXy"
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpoint(m[1]), otlptracehttp.WithInsecure())
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "ai-app"))))
	_, span := tp.Tracer("test").Start(t.Context(), "POST /v1/chat")
	span.SetAttributes(attribute.String("llm.api_key", secret), attribute.String("request_id", "req-42"),
		attribute.String("gen_ai.input.messages", `[{"role":"user","content":"my password is hunter2"}]`))
	tid := span.SpanContext().TraceID().String()
	span.End()
	require.NoError(t, tp.Shutdown(t.Context()))

	code, body := s.get(t, "/api/v1/traces/"+tid)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "POST /v1/chat")
	require.Contains(t, body, "[REDACTED")
	require.NotContains(t, body, secret)
	require.NotContains(t, body, "hunter2")
	code, body = s.get(t, "/api/v1/traces?service=ai-app")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, tid)

	// The span metrics of the span, with its trace as an exemplar, and
	// its breakdown.
	s.waitFor(t, func() bool {
		return len(queryVector(t, s, `traces_span_metrics_calls_total{service_name="ai-app"}`)) == 1
	}, "span metrics")
	code, body = s.get(t, "/api/v1/query_exemplars?query=traces_span_metrics_calls_total&start=0&end=4102444800")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, tid)
	r := runVigil(t, "", "trace", tid, "--server", s.url)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "ai-app")
	require.NotContains(t, r.stdout, secret)
	code, body = s.get(t, "/api/v1/traces/"+tid+"/breakdown")
	require.Equal(t, http.StatusOK, code, body)

	stop()
	require.NotContains(t, s.stderr.String(), secret)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		require.False(t, strings.Contains(string(b), secret), "the secret is in %s", path)
		require.False(t, strings.Contains(string(b), "hunter2"), "the prompt is in %s", path)
		return nil
	})
	require.NoError(t, err)
}

// backend is an OTLP/HTTP receiver standing in for Tempo or a Collector.
type backend struct {
	mu    sync.Mutex
	spans []string
}

func (b *backend) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	m := ptrace.JSONMarshaler{}
	out, err := m.MarshalTraces(td)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spans = append(b.spans, string(out))
	return nil
}

func (b *backend) received() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.spans, "\n")
}

// TestServeForwardsRedacted: with a forwarding endpoint, the traces go on
// to the backend, redacted.
func TestServeForwardsRedacted(t *testing.T) {
	be := &backend{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	recv, err := otlp.New(otlp.Options{HTTP: ln, Traces: be})
	require.NoError(t, err)
	rctx, rcancel := context.WithCancel(t.Context())
	rdone := make(chan error, 1)
	go func() { rdone <- recv.Run(rctx) }()
	defer func() { rcancel(); require.NoError(t, <-rdone) }()

	cfg := filepath.Join(t.TempDir(), "vigil.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("forwarding:\n  endpoint: http://"+ln.Addr().String()+"\n"), 0o644))
	ctx, cancel := context.WithCancel(t.Context())
	s := startServe(t, ctx, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	defer func() { cancel(); require.NoError(t, <-s.done) }()
	m := otlpHTTPRE.FindStringSubmatch(s.stderr.String())
	require.NotNil(t, m)

	const secret = "AKIAIOSFODNN7EXAMPLQ"
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpoint(m[1]), otlptracehttp.WithInsecure())
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "gateway"))))
	_, span := tp.Tracer("test").Start(t.Context(), "GET /chat")
	span.SetAttributes(attribute.String("http.request.header.authorization", "Bearer "+secret), attribute.String("aws.key", secret))
	span.End()
	require.NoError(t, tp.Shutdown(t.Context()))

	s.waitFor(t, func() bool { return strings.Contains(be.received(), "GET /chat") }, "the span at the backend")
	require.NotContains(t, be.received(), secret)
	require.Contains(t, be.received(), "[REDACTED")
}
