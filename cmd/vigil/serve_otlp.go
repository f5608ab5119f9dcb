package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"time"

	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/forward"
	"github.com/vigil-obs/vigil/internal/hops"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/traces"
)

// requestPath is the request-path side of `vigil serve`: the OTLP
// receiver, redaction in front of everything it takes, and the trace and
// log store.
type requestPath struct {
	red    *redact.Redactor
	traces *traces.Store
	spans  *spanmetrics.Consumer
	logsig *logsignals.Consumer
	fwd    *forward.Forwarder // nil: no forwarding
	recv   *otlp.Receiver
	now    func() time.Time
}

// otlpExplicit says which OTLP addresses the user asked for (a flag or
// the configuration file): only those are fatal when busy.
type otlpExplicit struct{ grpc, http bool }

// openRequestPath opens the trace store and builds the receiver on its
// listeners; nothing serves yet. On error nothing is left open.
func openRequestPath(cfg config.Config, e *env, st *store.Embedded, red *redact.Redactor, budget ingestAdmission, explicit otlpExplicit, logger *slog.Logger, reg prometheus.Registerer) (_ *requestPath, err error) {
	tc := cfg.Traces
	if tc.Dir == "" {
		tc.Dir = filepath.Join(cfg.Storage.DataDir, "traces")
	}
	rp := &requestPath{red: red, now: e.now}
	if rp.traces, err = traces.Open(tc, logger, reg, e.now); err != nil {
		return nil, fmt.Errorf("open the trace store: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, rp.traces.Close())
		}
	}()
	rp.spans, err = spanmetrics.New(cfg.SpanMetrics, st, e.now, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("span metrics: %w", err)
	}
	rp.logsig, err = logsignals.New(cfg.LogSignals, st, e.now, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("log signals: %w", err)
	}
	if cfg.Forwarding.Enabled() {
		if rp.fwd, err = forward.New(cfg.Forwarding, logger, reg); err != nil {
			return nil, fmt.Errorf("forwarding: %w", err)
		}
	}
	gl, err := otlpListen("OTLP/gRPC", cfg.OTLP.GRPCListen, explicit.grpc, logger)
	if err != nil {
		return nil, err
	}
	hl, err := otlpListen("OTLP/HTTP", cfg.OTLP.HTTPListen, explicit.http, logger)
	if err != nil {
		if gl != nil {
			_ = gl.Close()
		}
		return nil, err
	}
	rp.recv, err = otlp.New(otlp.Options{
		GRPC: gl, HTTP: hl,
		Traces:          redactedTraces{red, bothTraces{rp.traces, rp.spans, rp.fwd}},
		Logs:            redactedLogs{red, bothLogs{rp.traces, rp.logsig, rp.fwd}},
		Metrics:         redactedMetrics{red, otlp.NewMetricsAppender(st, e.now, logger.With("component", "otlp-metrics"))},
		MaxRequestBytes: cfg.OTLP.MaxRequestBytes,
		MaxInFlight:     cfg.OTLP.MaxInFlight,
		Budget:          budget.budget,
		Gate:            budget.gate,
		Logger:          logger.With("component", "otlp"),
		Registerer:      reg,
	})
	if err != nil {
		for _, l := range []net.Listener{gl, hl} {
			if l != nil {
				_ = l.Close()
			}
		}
		return nil, err
	}
	return rp, nil
}

// otlpListen listens on addr ("" is off). A busy default address that the
// user did not ask for is a warning, and that transport stays off
// (DESIGN.md).
func otlpListen(what, addr string, explicit bool, logger *slog.Logger) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		logger.Info("listening", "transport", what, "address", ln.Addr().String())
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) && !explicit {
		logger.Warn(what+" is off: its default address is in use (choose another with --otlp-grpc-listen / --otlp-http-listen)", "address", addr)
		return nil, nil
	}
	return nil, fmt.Errorf("listen on %s for %s: %w", addr, what, err)
}

// handlers are the trace and log API routes for the main HTTP API.
func (rp *requestPath) handlers(logger *slog.Logger) map[string]http.Handler {
	h := traces.NewHandler(rp.traces, logger)
	hh := hops.NewHandler(rp.traces, rp.now, logger)
	return map[string]http.Handler{"/api/v1/traces": h, "/api/v1/traces/": h, "/api/v1/logs": h,
		"GET /api/v1/traces/{id}/breakdown": hh, "GET /api/v1/slow": hh}
}

// add runs the receiver in g; the trace store closes after everything
// stopped (close).
func (rp *requestPath) add(g *run.Group) {
	ctx, cancel := context.WithCancel(context.Background())
	g.Add(func() error { return rp.recv.Run(ctx) }, func(error) { cancel() })
	sctx, scancel := context.WithCancel(context.Background())
	g.Add(func() error { return rp.spans.Run(sctx) }, func(error) { scancel() })
	if rp.fwd != nil {
		fctx, fcancel := context.WithCancel(context.Background())
		g.Add(func() error { return rp.fwd.Run(fctx) }, func(error) { fcancel() })
	}
}

// close closes the trace store.
func (rp *requestPath) close(logger *slog.Logger) error {
	start := time.Now()
	if err := rp.traces.Close(); err != nil {
		return fmt.Errorf("close the trace store: %w", err)
	}
	logger.Info("trace store closed", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// bothTraces stores the spans, derives the span metrics and service graph
// from them and forwards them — only once the store took them, so that a
// client's retry is not counted or forwarded twice.
type bothTraces struct {
	st    *traces.Store
	spans *spanmetrics.Consumer
	fwd   *forward.Forwarder
}

func (b bothTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if err := b.st.ConsumeTraces(ctx, td); err != nil {
		return err
	}
	if b.fwd != nil {
		_ = b.fwd.ConsumeTraces(ctx, td) // queues a copy; never fails
	}
	return b.spans.ConsumeTraces(ctx, td)
}

// bothLogs stores the log records, counts the events they report and
// forwards them, once the store took them.
type bothLogs struct {
	st  *traces.Store
	sig *logsignals.Consumer
	fwd *forward.Forwarder
}

func (b bothLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if err := b.st.ConsumeLogs(ctx, ld); err != nil {
		return err
	}
	if b.fwd != nil {
		_ = b.fwd.ConsumeLogs(ctx, ld)
	}
	return b.sig.ConsumeLogs(ctx, ld)
}

// redactedTraces redacts spans before the store sees them.
type redactedTraces struct {
	red  *redact.Redactor
	next otlp.TracesConsumer
}

func (r redactedTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	r.red.Traces(td)
	return r.next.ConsumeTraces(ctx, td)
}

type redactedLogs struct {
	red  *redact.Redactor
	next otlp.LogsConsumer
}

func (r redactedLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	r.red.Logs(ld)
	return r.next.ConsumeLogs(ctx, ld)
}

type redactedMetrics struct {
	red  *redact.Redactor
	next otlp.MetricsConsumer
}

func (r redactedMetrics) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	r.red.Metrics(md)
	return r.next.ConsumeMetrics(ctx, md)
}
