package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestServeRequestPathSDK builds a multi-service request path with the
// OpenTelemetry Go SDK — gateway (OTLP/HTTP) → ai-app (OTLP/gRPC) →
// vector-db and vllm, sequential, with known times — and logs of one
// request id in three services: `vigil trace` shows each service's share
// of the critical path, `vigil logs --request` finds the lines of all
// three services, and the service graph has the calls, which only SERVER
// spans record.
func TestServeRequestPathSDK(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := startServe(t, ctx, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	defer func() { cancel(); require.NoError(t, <-s.done) }()
	httpAddr := otlpHTTPRE.FindStringSubmatch(s.stderr.String())[1]
	grpcAddr := regexpFind(t, `transport=OTLP/gRPC address=(\S+)`, s.stderr.String())

	provider := func(service string, grpc bool) *sdktrace.TracerProvider {
		var exp sdktrace.SpanExporter
		var err error
		if grpc {
			exp, err = otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure())
		} else {
			exp, err = otlptracehttp.New(t.Context(), otlptracehttp.WithEndpoint(httpAddr), otlptracehttp.WithInsecure())
		}
		require.NoError(t, err)
		return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	}
	gw, app, vdb, llm := provider("gateway", false), provider("ai-app", true), provider("vector-db", true), provider("vllm", false)
	// 0–40 ms gateway, 40–110 ms ai-app, 110–530 ms vector search,
	// 530–6,930 ms inference, 6,930–7,000 ms ai-app again.
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	c0, root := gw.Tracer("gw").Start(context.Background(), "POST /v1/chat", trace.WithTimestamp(at(0)), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("request_id", "req-7")))
	c1, appSpan := app.Tracer("app").Start(c0, "answer", trace.WithTimestamp(at(40)), trace.WithSpanKind(trace.SpanKindServer))
	_, search := vdb.Tracer("db").Start(c1, "search", trace.WithTimestamp(at(110)), trace.WithSpanKind(trace.SpanKindServer))
	search.End(trace.WithTimestamp(at(530)))
	_, gen := llm.Tracer("llm").Start(c1, "generate", trace.WithTimestamp(at(530)), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("gen_ai.request.model", "llama-3.1-70b")))
	gen.End(trace.WithTimestamp(at(6930)))
	appSpan.End(trace.WithTimestamp(at(7000)))
	root.End(trace.WithTimestamp(at(7000)))
	tid := root.SpanContext().TraceID().String()
	for _, p := range []*sdktrace.TracerProvider{gw, app, vdb, llm} {
		require.NoError(t, p.Shutdown(t.Context()))
	}

	for _, service := range []string{"gateway", "ai-app", "vllm"} {
		exp, err := otlploghttp.New(t.Context(), otlploghttp.WithEndpoint(httpAddr), otlploghttp.WithInsecure())
		require.NoError(t, err)
		lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)),
			sdklog.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
		var rec otellog.Record
		rec.SetTimestamp(at(100))
		rec.SetBody(attribute.StringValue(`{"request_id":"req-7","msg":"handled by ` + service + `"}`))
		lp.Logger(service).Emit(t.Context(), rec)
		require.NoError(t, lp.Shutdown(t.Context()))
	}

	r := runVigil(t, "", "trace", tid, "--server", s.url, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var got struct {
		Services []struct {
			Service string  `json:"service"`
			Share   float64 `json:"share"`
		} `json:"services"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	shares := map[string]float64{}
	for _, sv := range got.Services {
		shares[sv.Service] = sv.Share
	}
	require.InDelta(t, 40.0/7000, shares["gateway"], 0.001, "%v", shares)
	require.InDelta(t, 140.0/7000, shares["ai-app"], 0.001, "%v", shares)
	require.InDelta(t, 420.0/7000, shares["vector-db"], 0.001, "%v", shares)
	require.InDelta(t, 6400.0/7000, shares["vllm"], 0.001, "%v", shares)
	r = runVigil(t, "", "trace", tid, "--server", s.url)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "vector-db")

	r = runVigil(t, "", "logs", "--request", "req-7", "--server", s.url)
	require.Equal(t, 0, r.code, r.stderr)
	for _, service := range []string{"gateway", "ai-app", "vllm"} {
		require.Contains(t, r.stdout, "handled by "+service)
	}
	require.Equal(t, 3, strings.Count(r.stdout, "handled by"), r.stdout)

	// No CLIENT span records these calls, only each callee's SERVER span
	// under its caller's: the service graph comes from the span tree.
	for _, e := range [][2]string{{"gateway", "ai-app"}, {"ai-app", "vector-db"}, {"ai-app", "vllm"}} {
		q := fmt.Sprintf(`traces_service_graph_request_total{client=%q,server=%q}`, e[0], e[1])
		waitFor(t, func() bool { return len(queryVector(t, s, q)) == 1 }, q, s.stderr.String)
	}
}

func regexpFind(t *testing.T, re, s string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	require.NotNil(t, m, "no %s in:\n%s", re, s)
	return m[1]
}
