package main

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
