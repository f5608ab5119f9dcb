package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/forward"
	"github.com/vigil-obs/vigil/internal/hops"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/tenant"
	"github.com/vigil-obs/vigil/internal/traces"
)

// requestPath is the request-path side of the server: redaction in
// front of everything it takes, the trace and log store, span metrics and
// the service graph, log signals, forwarding, and the OTLP receiver.
type requestPath struct {
	traces *traces.Store
	spans  *spanmetrics.Consumer
	logsig *logsignals.Consumer
	fwd    *forward.Forwarder // nil: no forwarding
	now    func() time.Time
	// What the receiver, and a caller feeding the pipeline itself, give
	// their data to.
	tracesIn  otlp.TracesConsumer
	logsIn    otlp.LogsConsumer
	metricsIn otlp.MetricsConsumer
}

// startRequestPath opens the trace store and starts span metrics and
// forwarding; the receiver starts later (startOTLP), once everything its
// requests reach runs.
func (s *Server) startRequestPath(ctx context.Context, host component.Host, budget ingestAdmission) (err error) {
	cfg := s.cfg
	tc := cfg.Traces
	if tc.Dir == "" {
		tc.Dir = filepath.Join(cfg.Storage.DataDir, "traces")
	}
	rp := &requestPath{now: s.now}
	if rp.traces, err = traces.Open(tc, s.logger, s.reg, s.now); err != nil {
		return fmt.Errorf("open the trace store: %w", err)
	}
	ts, logger := rp.traces, s.logger
	s.onShutdown("trace store", func(context.Context) error {
		start := time.Now()
		if err := ts.Close(); err != nil {
			return fmt.Errorf("close the trace store: %w", err)
		}
		logger.Info("trace store closed", "took", time.Since(start).Round(time.Millisecond))
		return nil
	})
	// Under tenancy each tenant's derivation counts itself under its
	// tenant label; these, unused by the receivers then, under Vigil's.
	var derivedReg prometheus.Registerer = s.reg
	if s.tenancy.Enabled() {
		derivedReg = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": cfg.Tenancy.InternalTenant}, s.reg)
	}
	if rp.spans, err = spanmetrics.New(cfg.SpanMetrics, s.st, s.now, logger, derivedReg); err != nil {
		return fmt.Errorf("span metrics: %w", err)
	}
	// Its last flush, at Shutdown, comes after the receiver stopped.
	if err := s.run(ctx, host, "span metrics", rp.spans.Run); err != nil {
		return err
	}
	if rp.logsig, err = logsignals.New(cfg.LogSignals, s.st, s.now, logger, derivedReg); err != nil {
		return fmt.Errorf("log signals: %w", err)
	}
	if cfg.Forwarding.Enabled() {
		if rp.fwd, err = forward.New(cfg.Forwarding, logger, s.reg); err != nil {
			return fmt.Errorf("forwarding: %w", err)
		}
		if err := s.run(ctx, host, "forwarding", rp.fwd.Run); err != nil {
			return err
		}
	}
	rp.tracesIn = redactedTraces{s.red, bothTraces{rp.traces, rp.spans, rp.logsig, rp.fwd}}
	rp.logsIn = redactedLogs{s.red, bothLogs{rp.traces, rp.logsig, rp.fwd}}
	if s.tenancy.Enabled() {
		// Each tenant's spans and logs derive its own series.
		pool := newDerivedPool(cfg, s.st, s.now, logger, s.reg)
		if err := s.add(ctx, host, "tenants' span metrics", pool); err != nil {
			return err
		}
		rp.tracesIn = redactedTraces{s.red, tenantTraces{rp.traces, pool, rp.fwd, s.limits}}
		rp.logsIn = redactedLogs{s.red, tenantLogs{rp.traces, pool, rp.fwd, s.limits}}
	}
	var metrics storage.AppendableV2 = s.st
	if s.tenancy.Enabled() {
		metrics = tenant.Writes{A: s.st}
	}
	rp.metricsIn = redactedMetrics{s.red, otlp.NewMetricsAppender(metrics, s.now, logger.With("component", "otlp-metrics"))}
	s.rp = rp
	return nil
}

// startOTLP listens on the OTLP addresses and starts the receiver over
// the request path; headless, there is none.
func (s *Server) startOTLP(ctx context.Context, host component.Host, budget ingestAdmission) error {
	if s.opts.Headless {
		return nil
	}
	cfg, logger := s.cfg, s.logger
	tlsCfg, auth, err := otlpSecurity(cfg.OTLP)
	if err != nil {
		return err
	}
	gl, err := otlpListen("OTLP/gRPC", cfg.OTLP.GRPCListen, s.opts.OTLPExplicit.GRPC, logger)
	if err != nil {
		return err
	}
	hl, err := otlpListen("OTLP/HTTP", cfg.OTLP.HTTPListen, s.opts.OTLPExplicit.HTTP, logger)
	if err != nil {
		if gl != nil {
			_ = gl.Close()
		}
		return err
	}
	if gl == nil && hl == nil {
		return nil
	}
	recv, err := otlp.New(otlp.Options{
		GRPC: gl, HTTP: hl,
		Traces: s.rp.tracesIn, Logs: s.rp.logsIn, Metrics: s.rp.metricsIn,
		MaxRequestBytes: cfg.OTLP.MaxRequestBytes,
		MaxInFlight:     cfg.OTLP.MaxInFlight,
		Budget:          budget.budget,
		Gate:            budget.gate,
		TLS:             tlsCfg,
		Auth:            auth,
		OnRequest:       s.otlpTenant(),
		Logger:          logger.With("component", "otlp"),
		Registerer:      s.reg,
	})
	if err != nil {
		for _, l := range []net.Listener{gl, hl} {
			if l != nil {
				_ = l.Close()
			}
		}
		return err
	}
	for what, l := range map[string]net.Listener{"OTLP/gRPC": gl, "OTLP/HTTP": hl} {
		warnOpen(logger, what, l, cfg.OTLP.OTLPAuthenticates(), "otlp.auth in docs/security.md")
	}
	return s.add(ctx, host, "OTLP receiver", &receiver{r: recv, fatal: s.reportFatal, stop: make(chan struct{})})
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

// receiver is the OTLP receiver as a component: its Start and Shutdown
// already keep the contract (Shutdown closes the listeners, started or
// not); a listener that breaks while it runs is reported to fatal.
type receiver struct {
	r     *otlp.Receiver
	fatal func(error)
	stop  chan struct{}
	once  sync.Once
}

func (r *receiver) Start(ctx context.Context, _ component.Host) error {
	if err := r.r.Start(ctx); err != nil {
		return err
	}
	go func() {
		select {
		case err := <-r.r.Err():
			r.fatal(err)
		case <-r.stop:
		}
	}()
	return nil
}

func (r *receiver) Shutdown(ctx context.Context) error {
	r.once.Do(func() { close(r.stop) })
	return r.r.Shutdown(ctx)
}

// handlers are the trace and log API routes for the main HTTP API.
func (rp *requestPath) handlers(logger *slog.Logger) map[string]http.Handler {
	h := traces.NewHandler(rp.traces, logger)
	hh := hops.NewHandler(rp.traces, rp.now, logger)
	return map[string]http.Handler{"/api/v1/traces": h, "/api/v1/traces/": h, "/api/v1/logs": h,
		"GET /api/v1/traces/{id}/breakdown": hh, "GET /api/v1/slow": hh}
}

// bothTraces stores the spans, derives the span metrics and service graph
// from them, tells the log signals their names and forwards them — only
// once the store took them, so that a client's retry is not counted or
// forwarded twice.
type bothTraces struct {
	st    *traces.Store
	spans *spanmetrics.Consumer
	sig   *logsignals.Consumer
	fwd   *forward.Forwarder
}

func (b bothTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if err := b.st.ConsumeTraces(ctx, td); err != nil {
		return err
	}
	if b.fwd != nil {
		_ = b.fwd.ConsumeTraces(ctx, td) // queues a copy; never fails
	}
	_ = b.sig.ConsumeTraces(ctx, td) // learns the spans' names; never fails
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
