package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/component"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/ingest/remotewrite"
	"github.com/vigil-obs/vigil/internal/ingest/scrape"
	"github.com/vigil-obs/vigil/internal/ingest/self"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/tenant"
	"github.com/vigil-obs/vigil/internal/tenant/limits"
	"github.com/vigil-obs/vigil/internal/ui"
	"github.com/vigil-obs/vigil/internal/watch"
)

// Options configure a server beyond its configuration file.
type Options struct {
	// Config is the configuration, already validated (config.Validate).
	Config config.Config
	// OTLPExplicit says which OTLP addresses the user asked for (a flag or
	// the file): only those are fatal when busy (DESIGN.md).
	OTLPExplicit OTLPExplicit
	// Now is the data clock: what the store, the rules and the diagnosis
	// take as now. Wall is the wall clock of the alerts' startsAt and
	// endsAt (a replay gives its data clock). Both default to time.Now.
	Now, Wall func() time.Time
	// Logger is the server's logger; its output goes through redaction.
	Logger *slog.Logger
	// Registry takes the server's metrics and is what its API and its
	// self-monitoring gather; nil is a registry of its own.
	Registry *prometheus.Registry
	// SetMemoryLimit sets GOMEMLIMIT from the memory budget: for a server
	// that owns its process (vigil serve).
	SetMemoryLimit bool
	// Headless opens no listener: no HTTP API and no OTLP receiver. The
	// pipeline is fed through Store, Traces, Logs and Metrics (the demo,
	// a replay, the evaluation harness).
	Headless bool
	// Driven leaves the evaluation's cycles to the caller (Watcher's
	// Cycle at each simulated or replayed instant) instead of a ticker.
	Driven bool
	// Read, if set, is data the evaluation reads merged with the embedded
	// store, as it reads an attached source (source.url): a replay's
	// files or backend. It is only read, and not closed by the server.
	Read storage.Queryable
	// Sender, if set, takes the alerts instead of the alerting section's
	// notifier (a replay's, which sends nothing).
	Sender watch.Sender
	// OnChange, if set, is called with every incident opened,
	// re-diagnosed or resolved.
	OnChange func(incident.Change)
	// KeepResolved is how long resolved incidents are listed (0: the
	// tracker's default).
	KeepResolved time.Duration
}

// OTLPExplicit says which OTLP addresses the user asked for.
type OTLPExplicit struct{ GRPC, HTTP bool }

// UsageError is a start that failed on the configuration: the user's to
// fix (exit 2).
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Server is Vigil's pipeline: the embedded store, the trace and log store,
// the receivers, the continuous evaluation and the API, as one Collector
// component. New builds nothing yet; Start opens and starts the parts in
// dependency order and returns once they run; Shutdown stops them in the
// reverse order, each once.
type Server struct {
	opts Options
	cfg  config.Config
	now  func() time.Time
	reg  *prometheus.Registry

	mu      sync.Mutex
	started bool
	stopped bool
	stopErr error
	parts   []part
	fatal   chan error

	// Set by Start.
	logger *slog.Logger
	red    *redact.Redactor
	st     *store.Embedded
	rp     *requestPath
	ev     *evaluation
	// view is what the evaluation and the web UI read: the embedded
	// store, or it merged with the attached source (Server.source), and
	// probe the source's probe (nil: none).
	view    watch.Source
	probe   func(context.Context) error
	scraper *scrape.Scraper
	// budget is the memory budget in bytes (0: none).
	budget int64
	// scraping is the scraper once it runs, for remote write out's
	// metadata.
	scraping atomic.Pointer[scrape.Scraper]
	addr     net.Addr
	// tenancy resolves the tenant of each request (off: Enabled false).
	tenancy *tenant.Resolver
	// webUsers are the web config file's users, whose names tenancy may
	// map to tenants.
	webUsers *webUsers
	// limits enforces the tenants' limits (tenancy only; nil: none).
	limits *limits.Enforcer
	// tenantEvals are the own evaluations of tenancy.evaluate's tenants.
	tenantEvals map[string]*evaluation
}

// part is one started component and what the log calls it.
type part struct {
	name string
	c    component.Component
}

var _ component.Component = (*Server)(nil)

// New returns a server for opts; nothing is opened or started.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &Server{opts: opts, cfg: opts.Config, now: opts.Now, reg: reg, fatal: make(chan error, 1)}
}

// Start opens the stores and starts every part, and returns once they
// run. A failed start shuts down what it started and says why. A server
// starts once.
func (s *Server) Start(ctx context.Context, host component.Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return errors.New("server: already shut down")
	case s.started:
		return errors.New("server: already started")
	}
	s.started = true
	if err := s.start(ctx, host); err != nil {
		return errors.Join(err, s.shutdown(ctx))
	}
	return nil
}

// Shutdown stops the parts in the reverse order of their start — the
// receivers and the API first, the stores last, once nothing reads or
// writes them — each within ctx. It is safe without Start, and returns
// the same result every time.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown(ctx)
}

func (s *Server) shutdown(ctx context.Context) error {
	if s.stopped {
		return s.stopErr
	}
	s.stopped = true
	var errs []error
	for i := len(s.parts) - 1; i >= 0; i-- {
		p := s.parts[i]
		start := time.Now()
		if err := p.c.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		if s.logger != nil {
			s.logger.Debug("stopped", "part", p.name, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	s.stopErr = errors.Join(errs...)
	if s.stopErr == nil && s.logger != nil && len(s.parts) > 0 {
		s.logger.Info("stopped")
	}
	return s.stopErr
}

// Err receives the first error that stops a running part on its own (the
// HTTP server failing, a receiver's listener breaking): the caller should
// shut the server down.
func (s *Server) Err() <-chan error { return s.fatal }

func (s *Server) reportFatal(err error) {
	select {
	case s.fatal <- err:
	default:
	}
}

// add starts c and keeps it for Shutdown, which it gets even when its
// start fails (what it holds is released).
func (s *Server) add(ctx context.Context, host component.Host, name string, c component.Component) error {
	s.parts = append(s.parts, part{name, c})
	if err := c.Start(ctx, host); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	return nil
}

// run adds a part that runs f from Start until Shutdown.
func (s *Server) run(ctx context.Context, host component.Host, name string, f func(ctx context.Context) error) error {
	return s.add(ctx, host, name, newRunner(name, f, s.reportFatal))
}

// onShutdown adds a part that Shutdown closes with f.
func (s *Server) onShutdown(name string, f func(ctx context.Context) error) {
	s.parts = append(s.parts, part{name, newCloser(f)})
}

func (s *Server) start(ctx context.Context, host component.Host) error {
	cfg := &s.cfg
	red, err := redact.New(cfg.Redaction, s.reg)
	if err != nil {
		return UsageError{fmt.Errorf("redaction: %w", err)}
	}
	s.red = red
	s.tenancy = tenant.NewResolver(cfg.Tenancy)
	s.webUsers = &webUsers{path: cfg.Web.ConfigFile}
	// Vigil's own logs go through redaction too.
	logger := slog.New(redact.NewHandler(s.opts.Logger.Handler(), red))
	s.logger = logger
	// The listeners' security is checked before anything opens.
	var webSec config.WebSecurity
	if !s.opts.Headless {
		if webSec, err = config.LoadWebConfig(cfg.Web.ConfigFile); err != nil {
			return UsageError{err}
		}
		if _, _, err := otlpSecurity(cfg.OTLP); err != nil {
			return err
		}
	}
	budget, err := memoryBudget(cfg, s.opts.SetMemoryLimit, logger, s.reg)
	if err != nil {
		return err
	}
	s.budget = budget.bytes
	if s.st, err = openStore(*cfg, s.now, logger, s.reg); err != nil {
		return err
	}
	st := s.st
	s.onShutdown("store", func(context.Context) error {
		start := time.Now()
		if err := st.Close(); err != nil {
			return fmt.Errorf("close store: %w", err)
		}
		logger.Info("store closed", "took", time.Since(start).Round(time.Millisecond))
		return nil
	})
	// Remote write out tails the store's WAL: it stops after everything
	// that writes the store, sending what they wrote last.
	rs, err := openRemoteWrite(*cfg, st, readyScrape{&s.scraping}, logger, s.reg)
	if err != nil {
		return err
	}
	if rs != nil {
		s.onShutdown("remote write out", func(context.Context) error {
			if err := rs.Close(); err != nil {
				return fmt.Errorf("remote write out: %w", err)
			}
			return nil
		})
	}
	if err := s.startLimits(ctx, host); err != nil {
		return err
	}
	if err := s.startRequestPath(ctx, host, budget); err != nil {
		return err
	}
	sender, err := s.startNotifier(ctx, host)
	if err != nil {
		return err
	}
	var rw *remotewrite.Handler
	var pushed *push.Handler
	if !s.opts.Headless {
		// Label values are redacted on every metric path, as OTLP's are,
		// unless redaction.unredacted_paths names it.
		if rw, err = remotewrite.New(remotewrite.Options{
			Appendable: s.appendable(redact.PathRemoteWrite), Series: s.activeSeries(), Limits: cfg.Limits, Budget: budget.budget, Gate: budget.gate, Now: s.now,
			Logger: logger.With("component", "remote-write"), Registerer: s.reg,
		}); err != nil {
			return err
		}
		po := push.Options{
			Appendable: s.appendable(redact.PathPush), Budget: budget.budget, Gate: budget.gate, Now: s.now,
			Logger: logger.With("component", "push"), Registerer: s.reg,
		}
		if s.tenancy.Enabled() {
			po.Tenant = tenant.WriteID
			po.NewGroup = s.limits.AllowPushGroup
		}
		if pushed, err = push.New(po); err != nil {
			return err
		}
		if err := s.run(ctx, host, "push", pushed.Run); err != nil {
			return err
		}
	}
	if cfg.Scrape != nil {
		if s.scraper, err = scrape.NewWith(cfg.Scrape, s.appendable(redact.PathScrape), scrape.Options{PassTarget: s.tenancy.Enabled()}, logger, s.reg); err != nil {
			return err
		}
		sc := s.scraper
		s.scraping.Store(sc)
		if err := s.run(ctx, host, "scrape", func(ctx context.Context) error {
			stop := context.AfterFunc(ctx, sc.Stop)
			defer stop()
			return sc.Run()
		}); err != nil {
			return err
		}
	}
	if err := s.startOTLP(ctx, host, budget); err != nil {
		return err
	}
	var ln net.Listener
	if !s.opts.Headless {
		if ln, err = net.Listen("tcp", cfg.Web.Listen); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				err = errors.New("address already in use (another vigil serve? choose one with --listen)")
			}
			return fmt.Errorf("listen on %s: %w", cfg.Web.Listen, err)
		}
		s.addr = ln.Addr()
		warnOpen(logger, "HTTP", ln, webSec.Authenticates(), "")
		s.onShutdown("listener", func(context.Context) error {
			if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				return err
			}
			return nil
		})
	}
	if s.view, s.probe, err = s.source(ctx, host); err != nil {
		return err
	}
	if err := s.startEvaluation(ctx, host, sender); err != nil {
		return err
	}
	if ln != nil {
		h, err := s.newAPI(ln, rw, pushed)
		if err != nil {
			return err
		}
		if err := s.add(ctx, host, "http", newHTTPServer(h, ln, *cfg, logger, s.reg, s.reportFatal)); err != nil {
			return err
		}
	}
	if cfg.Self.Enabled {
		instance := "vigil"
		if s.addr != nil {
			instance = s.addr.String()
		}
		ing := self.New(s.reg, st, instance, s.now, logger.With("component", "self"), s.reg)
		if err := s.run(ctx, host, "self", func(ctx context.Context) error {
			return ing.Run(ctx, time.Duration(cfg.Self.Interval))
		}); err != nil {
			return err
		}
	}
	return nil
}

// appendable is the store behind a metric path: label values are
// redacted unless redaction.unredacted_paths names the path, and under
// tenancy every series is stamped with its tenant (a push group's key
// carries its tenant itself, as its refreshes have no request).
func (s *Server) appendable(path string) storage.AppendableV2 {
	var a storage.AppendableV2 = s.st
	if s.cfg.Redaction.Redacts(path) {
		a = s.red.Appendable(s.st)
	}
	if s.tenancy.Enabled() && path != redact.PathPush {
		a = s.tenantWrites(a, path)
	}
	if s.limits != nil && path != redact.PathScrape {
		// A request's samples and new series against its tenant's
		// limits; a scrape pool's and a push group's refreshes are not a
		// tenant's request.
		a = limits.Appendable(a, s.limits, tenant.WriteID)
	}
	return a
}

// activeSeries is what remote write's active-series limit asks.
func (s *Server) activeSeries() remotewrite.ActiveSeries {
	if s.tenancy.Enabled() {
		return tenantSeries{s.st}
	}
	return s.st
}

// newAPI builds the HTTP API over the store and the running parts.
func (s *Server) newAPI(ln net.Listener, rw *remotewrite.Handler, pushed *push.Handler) (*api.Handler, error) {
	cfg := s.cfg
	cors, err := cfg.Web.CORS()
	if err != nil { // Validate compiled it already
		return nil, fmt.Errorf("web.cors_origin: %w", err)
	}
	rr := cfg.Query.RemoteRead
	if rr.SampleLimit == 0 {
		rr.SampleLimit = -1 // the configuration's "no limit"
	}
	opts := api.Options{
		Store: s.st, Gatherer: s.reg, Registerer: s.reg, Logger: s.logger,
		CORSOrigin:    cors,
		RemoteRead:    api.RemoteReadLimits{Concurrency: rr.MaxConcurrency, SampleLimit: rr.SampleLimit, MaxBytesInFrame: rr.MaxBytesInFrame},
		QueryLimits:   api.QueryLimits{MaxBytes: cfg.Query.MaxBytes, MaxDepth: cfg.Query.MaxDepth, MaxOperators: cfg.Query.MaxOperators},
		QueryGate:     admission.NewFairGate(cfg.Query.MaxConcurrency, "api_queries", s.reg),
		ListenAddress: ln.Addr().String(), DataDir: cfg.Storage.DataDir,
		LookbackDelta: time.Duration(cfg.Query.LookbackDelta), QueryTimeout: time.Duration(cfg.Query.Timeout),
		Flags: map[string]string{"storage.tsdb.path": cfg.Storage.DataDir, "storage.tsdb.retention.time": cfg.Storage.Retention.String(), "web.listen-address": cfg.Web.Listen, "web.config.file": cfg.Web.ConfigFile},
		Write: rw, Push: pushed, Extra: s.rp.handlers(s.logger),
	}
	if s.tenancy.Enabled() {
		opts.Tenancy = true
		opts.Wrap = func(h http.Handler) http.Handler {
			return s.tenancy.Middleware(s.audit(s.limitRequests(h)), needOf, s.identify)
		}
	}
	if s.scraper != nil {
		opts.Targets = s.scraper.Manager()
	}
	if s.ev != nil {
		opts.Rules, opts.Incidents = s.ev.watcher, s.ev.tracker
		if s.tenancy.Enabled() {
			opts.Incidents = tenantIncidents{platform: s.ev.tracker, by: s.tenantEvals}
			opts.RulesFor = s.rulesFor
		}
	}
	opts.Alertmanagers = alertmanagers(cfg.Alerting.Alertmanagers)
	// The pages read what the evaluation reads: attached, the backend's
	// series next to what Vigil derives, so an incident's evidence plots
	// and the question pages show the data the diagnosis saw.
	uo := ui.Options{Store: s.view, Traces: s.rp.traces, Now: s.now, Logger: s.logger.With("component", "ui"), QueryTimeout: opts.QueryTimeout}
	if s.ev != nil {
		uo.Incidents = s.ev.tracker
	}
	uo.Prices, uo.Currency = s.costPrices()
	web, err := ui.New(uo)
	if err != nil {
		return nil, err
	}
	opts.UI = web
	if opts.Extra == nil {
		opts.Extra = map[string]http.Handler{}
	}
	var pages *tenantUI
	if s.tenancy.Enabled() {
		// Each tenant's pages read its own data and incidents; the
		// platform role's, naming no tenant, the platform's.
		pages = &tenantUI{s: s, opts: uo, platform: web, by: map[string]*ui.Handler{}}
		opts.UI = pages
	}
	for path, hd := range web.APIs() {
		if pages != nil {
			hd = pages.api(path)
		}
		opts.Extra[path] = hd
	}
	return api.New(opts)
}

// Store is the embedded store (after Start).
func (s *Server) Store() *store.Embedded { return s.st }

// Traces takes spans as the OTLP receiver does: redaction, the trace
// store, span metrics and the service graph, forwarding (after Start).
func (s *Server) Traces() otlp.TracesConsumer { return s.rp.tracesIn }

// Logs takes log records as the OTLP receiver does: redaction, the log
// store, log signals, forwarding (after Start).
func (s *Server) Logs() otlp.LogsConsumer { return s.rp.logsIn }

// Metrics takes OTLP metrics as the receiver does (after Start).
func (s *Server) Metrics() otlp.MetricsConsumer { return s.rp.metricsIn }

// Watcher is the continuous evaluation; nil when evaluation is off
// (after Start). With Options.Driven its cycles are the caller's.
func (s *Server) Watcher() *watch.Watcher {
	if s.ev == nil {
		return nil
	}
	return s.ev.watcher
}

// Tracker is the incident tracker; nil when evaluation is off.
func (s *Server) Tracker() *incident.Tracker {
	if s.ev == nil {
		return nil
	}
	return s.ev.tracker
}

// Addr is the HTTP API's address; nil when headless (after Start).
func (s *Server) Addr() net.Addr { return s.addr }

// Registry is what the server's metrics are registered with.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// ingestAdmission is what the ingest paths share: the in-flight byte
// budget and the gate of their slots.
type ingestAdmission struct {
	budget *admission.Budget
	gate   *admission.FairGate
	// bytes is the resolved memory budget (0: none).
	bytes int64
}

// memoryBudget resolves the memory budget and returns the in-flight byte
// budget and the slot gate of the ingest paths. When setLimit (the server
// owns its process) it also sets GOMEMLIMIT from the budget and lowers
// limits.max_active_series to what the budget holds.
func memoryBudget(cfg *config.Config, setLimit bool, logger *slog.Logger, reg prometheus.Registerer) (ingestAdmission, error) {
	mb := admission.ResolveMemory(int64(cfg.Memory.Budget))
	if setLimit {
		if err := mb.Apply(); err != nil {
			return ingestAdmission{}, err
		}
	}
	if most := admission.SeriesFor(mb.Bytes); setLimit && mb.Bytes > 0 && (cfg.Limits.MaxActiveSeries == 0 || cfg.Limits.MaxActiveSeries > most) {
		logger.Warn("limits.max_active_series lowered to what the memory budget holds (a quarter of it at 1.5 KiB a series); raise memory.budget for more",
			"configured", cfg.Limits.MaxActiveSeries, "max_active_series", most, "budget", config.Bytes(mb.Bytes).String())
		cfg.Limits.MaxActiveSeries = most
	}
	inflight := cfg.Memory.InflightBytes(mb.Bytes)
	attrs := []any{"inflight_bytes", config.Bytes(inflight).String()}
	if mb.Bytes > 0 {
		attrs = append(attrs, "budget", config.Bytes(mb.Bytes).String(), "budget_from", mb.Source)
	}
	if setLimit && mb.GoMemLimit > 0 && mb.GoMemLimit < math.MaxInt64 {
		attrs = append(attrs, "gomemlimit", fmt.Sprintf("%.0fMiB", float64(mb.GoMemLimit)/(1<<20)), "gomemlimit_from", mb.GoMemLimitSource)
	}
	logger.Info("memory", attrs...)
	return ingestAdmission{
		bytes:  mb.Bytes,
		budget: admission.NewBudget(inflight, reg),
		// The gate shares the slots between clients; each path's own
		// bound (503 past it) stays the first a lone client meets.
		gate: admission.NewFairGate(cfg.Limits.MaxInflightRequests+cfg.OTLP.MaxInFlight, "ingest_requests", reg),
	}, nil
}

// internalQueries are the engine's query slots kept for Vigil's own
// evaluation (rules, symptoms, diagnosis), which the API cannot take.
const internalQueries = 4

func openStore(cfg config.Config, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) (*store.Embedded, error) {
	return store.OpenEmbedded(store.EmbeddedConfig{
		Dir:              cfg.Storage.DataDir,
		Retention:        time.Duration(cfg.Storage.Retention),
		OutOfOrderWindow: time.Duration(cfg.Storage.OutOfOrderWindow),
		MaxExemplars:     cfg.Storage.MaxExemplars,
		Engine: store.EngineConfig{
			MaxSamples: cfg.Query.MaxSamples,
			Timeout:    time.Duration(cfg.Query.Timeout),
			// The API's queries take at most max_concurrency slots (its
			// fair gate): the rest are the evaluation's and the diagnosis's.
			MaxConcurrency: cfg.Query.MaxConcurrency + internalQueries,
			LookbackDelta:  time.Duration(cfg.Query.LookbackDelta),
		},
	}, now, logger, reg)
}

// SimulatedConfig is the configuration of a pipeline driven on a clock of
// its caller's (the demo, a replay, the evaluation harness): the defaults
// with the data directory dir, no OTLP listener, no self-monitoring, and
// span metrics written after every batch of spans rather than on a wall
// ticker, so that the same run writes the same samples.
func SimulatedConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.Storage.DataDir = dir
	cfg.OTLP.GRPCListen, cfg.OTLP.HTTPListen = "", ""
	cfg.Self.Enabled = false
	cfg.SpanMetrics.FlushInterval = 0
	return cfg
}
