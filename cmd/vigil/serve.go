package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/storage"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/buildinfo"
	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/ingest/remotewrite"
	"github.com/vigil-obs/vigil/internal/ingest/scrape"
	"github.com/vigil-obs/vigil/internal/ingest/self"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/store"
)

func newServeCmd(e *env) *cobra.Command {
	var (
		cfgFile, dataDir, listen string
		otlpGRPC, otlpHTTP       string
		source                   string
		retention                model.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the server: store, query API, own metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := config.Default()
			if cfgFile != "" {
				c, err := config.Load(cfgFile)
				if err != nil {
					return usageError{err}
				}
				cfg = *c
			}
			fl := cmd.Flags()
			if fl.Changed("data-dir") {
				cfg.Storage.DataDir = dataDir
			}
			if fl.Changed("listen") {
				cfg.Web.Listen = listen
			}
			explicit := otlpExplicit{
				grpc: fl.Changed("otlp-grpc-listen") || cfg.OTLP.GRPCListen != config.DefaultOTLPGRPCListen,
				http: fl.Changed("otlp-http-listen") || cfg.OTLP.HTTPListen != config.DefaultOTLPHTTPListen,
			}
			if fl.Changed("otlp-grpc-listen") {
				cfg.OTLP.GRPCListen = otlpGRPC
			}
			if fl.Changed("otlp-http-listen") {
				cfg.OTLP.HTTPListen = otlpHTTP
			}
			if fl.Changed("prometheus") {
				cfg.Source.URL = source
			}
			if fl.Changed("retention") {
				cfg.Storage.Retention = retention
				// A shorter retention takes the out-of-order window down
				// with it: the window cannot reach past what is kept.
				cfg.Storage.OutOfOrderWindow = min(cfg.Storage.OutOfOrderWindow, retention)
			}
			if err := cfg.Validate(); err != nil {
				return usageError{flagError(fl, err)}
			}
			return serve(cmd.Context(), e, cfg, explicit)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfgFile, "config", "", "configuration file (vigil.yaml)")
	fl.StringVar(&dataDir, "data-dir", "data", "data directory of the embedded store")
	fl.StringVar(&listen, "listen", ":9700", "address of the HTTP API")
	fl.StringVar(&otlpGRPC, "otlp-grpc-listen", config.DefaultOTLPGRPCListen, `address of the OTLP/gRPC receiver ("" turns it off; a busy default is a warning)`)
	fl.StringVar(&otlpHTTP, "otlp-http-listen", config.DefaultOTLPHTTPListen, `address of the OTLP/HTTP receiver ("" turns it off; a busy default is a warning)`)
	fl.StringVar(&source, "prometheus", "", "attach to the Prometheus-compatible API a team runs (Prometheus, Thanos, Mimir, VictoriaMetrics): the evaluation reads it merged with the embedded store (source.url)")
	retention = config.Default().Storage.Retention
	fl.Var(&durationFlag{&retention}, "retention", "how long samples are kept (e.g. 15d, 12h); a longer out-of-order window is cut to it")
	return cmd
}

// fieldFlags names the flag that overrides each configuration field.
var fieldFlags = map[string]string{
	"storage.data_dir":  "data-dir",
	"web.listen":        "listen",
	"storage.retention": "retention",
	"otlp.grpc_listen":  "otlp-grpc-listen",
	"otlp.http_listen":  "otlp-http-listen",
	"source.url":        "prometheus",
}

// flagError names the flag instead of the configuration field when the
// invalid value came from a flag.
func flagError(fl *pflag.FlagSet, err error) error {
	var fe *config.FieldError
	if errors.As(err, &fe) {
		if name, ok := fieldFlags[fe.Field]; ok && fl.Changed(name) {
			return fmt.Errorf("serve: --%s: %s", name, fe.Msg)
		}
	}
	return fmt.Errorf("serve: %w", err)
}

// durationFlag reads Prometheus durations (15d, 1h30m) as a flag.
type durationFlag struct{ d *model.Duration }

func (f *durationFlag) String() string     { return f.d.String() }
func (f *durationFlag) Type() string       { return "duration" }
func (f *durationFlag) Set(s string) error { return f.d.Set(s) }

// serve runs the server until ctx ends.
func serve(ctx context.Context, e *env, cfg config.Config, explicit otlpExplicit) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfoCollector(),
	)
	red, err := redact.New(cfg.Redaction, reg)
	if err != nil {
		return usageError{fmt.Errorf("serve: redaction: %w", err)}
	}
	// Vigil's own logs go through redaction too.
	logger := slog.New(redact.NewHandler(e.logger().Handler(), red))
	budget, err := memoryBudget(&cfg, logger, reg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	st, err := openServeStore(cfg, e, logger, reg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	closeStore := func() error {
		start := time.Now()
		if err := st.Close(); err != nil {
			return fmt.Errorf("serve: close store: %w", err)
		}
		logger.Info("store closed", "took", time.Since(start).Round(time.Millisecond))
		return nil
	}
	var g run.Group
	g.Add(func() error {
		<-ctx.Done()
		return nil
	}, func(error) {})
	rp, err := openRequestPath(cfg, e, st, red, budget, explicit, logger, reg)
	if err != nil {
		return errors.Join(fmt.Errorf("serve: %w", err), closeStore())
	}
	if err := addComponents(&g, e, cfg, st, rp, red, budget, logger, reg); err != nil {
		return errors.Join(fmt.Errorf("serve: %w", err), rp.close(logger), closeStore())
	}
	// The stores close last, once nothing reads or writes them any more.
	err = errors.Join(g.Run(), rp.close(logger), closeStore())
	if err == nil {
		logger.Info("stopped")
	}
	return err
}

// ingestAdmission is what the ingest paths share: the in-flight byte
// budget and the gate of their slots.
type ingestAdmission struct {
	budget *admission.Budget
	gate   *admission.FairGate
}

// memoryBudget resolves the memory budget, sets GOMEMLIMIT from it,
// lowers limits.max_active_series to what the budget holds, and returns
// the in-flight byte budget and the slot gate of the ingest paths.
func memoryBudget(cfg *config.Config, logger *slog.Logger, reg prometheus.Registerer) (ingestAdmission, error) {
	mb := admission.ResolveMemory(int64(cfg.Memory.Budget))
	if err := mb.Apply(); err != nil {
		return ingestAdmission{}, err
	}
	if most := admission.SeriesFor(mb.Bytes); mb.Bytes > 0 && (cfg.Limits.MaxActiveSeries == 0 || cfg.Limits.MaxActiveSeries > most) {
		logger.Warn("limits.max_active_series lowered to what the memory budget holds (a quarter of it at 1.5 KiB a series); raise memory.budget for more",
			"configured", cfg.Limits.MaxActiveSeries, "max_active_series", most, "budget", config.Bytes(mb.Bytes).String())
		cfg.Limits.MaxActiveSeries = most
	}
	inflight := cfg.Memory.InflightBytes(mb.Bytes)
	attrs := []any{"inflight_bytes", config.Bytes(inflight).String()}
	if mb.Bytes > 0 {
		attrs = append(attrs, "budget", config.Bytes(mb.Bytes).String(), "budget_from", mb.Source)
	}
	if mb.GoMemLimit > 0 && mb.GoMemLimit < math.MaxInt64 {
		attrs = append(attrs, "gomemlimit", fmt.Sprintf("%.0fMiB", float64(mb.GoMemLimit)/(1<<20)), "gomemlimit_from", mb.GoMemLimitSource)
	}
	logger.Info("memory", attrs...)
	return ingestAdmission{
		budget: admission.NewBudget(inflight, reg),
		// The gate shares the slots between clients; each path's own
		// bound (503 past it) stays the first a lone client meets.
		gate: admission.NewFairGate(cfg.Limits.MaxInflightRequests+cfg.OTLP.MaxInFlight, "ingest_requests", reg),
	}, nil
}

// internalQueries are the engine's query slots kept for Vigil's own
// evaluation (rules, symptoms, diagnosis), which the API cannot take.
const internalQueries = 4

func openServeStore(cfg config.Config, e *env, logger *slog.Logger, reg prometheus.Registerer) (*store.Embedded, error) {
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
	}, e.now, logger, reg)
}

// addComponents adds the HTTP server (API, remote write, push), scraping and
// self-monitoring to g. On error nothing is left running.
func addComponents(g *run.Group, e *env, cfg config.Config, st *store.Embedded, rp *requestPath, red *redact.Redactor, budget ingestAdmission, logger *slog.Logger, reg *prometheus.Registry) error {
	// Label values are redacted on every metric path, as OTLP's are,
	// unless redaction.unredacted_paths names it.
	appendable := func(path string) storage.AppendableV2 {
		if cfg.Redaction.Redacts(path) {
			return red.Appendable(st)
		}
		return st
	}
	rw, err := remotewrite.New(remotewrite.Options{
		Appendable: appendable(redact.PathRemoteWrite), Series: st, Limits: cfg.Limits, Budget: budget.budget, Gate: budget.gate, Now: e.now,
		Logger: logger.With("component", "remote-write"), Registerer: reg,
	})
	if err != nil {
		return err
	}
	pushed, err := push.New(push.Options{
		Appendable: appendable(redact.PathPush), Budget: budget.budget, Gate: budget.gate, Now: e.now,
		Logger: logger.With("component", "push"), Registerer: reg,
	})
	if err != nil {
		return err
	}
	var scraper *scrape.Scraper
	var targets api.Targets
	if cfg.Scrape != nil {
		if scraper, err = scrape.New(cfg.Scrape, appendable(redact.PathScrape), logger, reg); err != nil {
			return err
		}
		targets = scraper.Manager()
	}
	rs, err := openRemoteWrite(cfg, st, scraper, logger, reg)
	if err != nil {
		if scraper != nil {
			scraper.Stop()
		}
		return err
	}
	stopScraper := func() {
		if scraper != nil {
			scraper.Stop()
		}
		if rs != nil {
			_ = rs.Close()
		}
	}
	ln, err := net.Listen("tcp", cfg.Web.Listen)
	if err != nil {
		stopScraper()
		if errors.Is(err, syscall.EADDRINUSE) {
			err = errors.New("address already in use (another vigil serve? choose one with --listen)")
		}
		return fmt.Errorf("listen on %s: %w", cfg.Web.Listen, err)
	}
	sender, err := openNotifier(cfg, logger, reg)
	if err != nil {
		_ = ln.Close()
		stopScraper()
		return err
	}
	ev, err := openEvaluation(cfg, e, st, ln.Addr(), logger, reg, sender)
	if err != nil {
		_ = ln.Close()
		stopScraper()
		return err
	}
	cors, err := cfg.Web.CORS()
	if err != nil { // Validate compiled it already
		_ = ln.Close()
		stopScraper()
		return fmt.Errorf("web.cors_origin: %w", err)
	}
	rr := cfg.Query.RemoteRead
	if rr.SampleLimit == 0 {
		rr.SampleLimit = -1 // the configuration's "no limit"
	}
	opts := api.Options{
		Store: st, Gatherer: reg, Registerer: reg, Logger: logger,
		CORSOrigin:    cors,
		RemoteRead:    api.RemoteReadLimits{Concurrency: rr.MaxConcurrency, SampleLimit: rr.SampleLimit, MaxBytesInFrame: rr.MaxBytesInFrame},
		QueryLimits:   api.QueryLimits{MaxBytes: cfg.Query.MaxBytes, MaxDepth: cfg.Query.MaxDepth, MaxOperators: cfg.Query.MaxOperators},
		QueryGate:     admission.NewFairGate(cfg.Query.MaxConcurrency, "api_queries", reg),
		ListenAddress: ln.Addr().String(), DataDir: cfg.Storage.DataDir,
		LookbackDelta: time.Duration(cfg.Query.LookbackDelta), QueryTimeout: time.Duration(cfg.Query.Timeout),
		Flags: map[string]string{"storage.tsdb.path": cfg.Storage.DataDir, "storage.tsdb.retention.time": cfg.Storage.Retention.String(), "web.listen-address": cfg.Web.Listen},
		Write: rw, Push: pushed, Targets: targets, Extra: rp.handlers(logger),
	}
	if ev != nil {
		opts.Rules, opts.Incidents = ev.watcher, ev.tracker
	}
	opts.Alertmanagers = alertmanagers(cfg.Alerting.Alertmanagers)
	h, err := api.New(opts)
	if err != nil {
		_ = ln.Close()
		stopScraper()
		return err
	}
	addHTTP(g, h, ln, cfg, logger, reg)
	rp.add(g)
	if sender != nil {
		nctx, ncancel := context.WithCancel(context.Background())
		g.Add(func() error { return sender.Run(nctx) }, func(error) { ncancel() })
	}
	ev.add(g)
	pctx, pcancel := context.WithCancel(context.Background())
	g.Add(func() error { return pushed.Run(pctx) }, func(error) { pcancel() })
	if scraper != nil {
		g.Add(scraper.Run, func(error) { scraper.Stop() })
	}
	if rs != nil {
		// Closed when serve stops, sending what its queues hold for up
		// to remoteFlushDeadline.
		rctx, rcancel := context.WithCancel(context.Background())
		g.Add(func() error {
			<-rctx.Done()
			if err := rs.Close(); err != nil {
				return fmt.Errorf("remote write out: %w", err)
			}
			return nil
		}, func(error) { rcancel() })
	}
	if cfg.Self.Enabled {
		sctx, cancel := context.WithCancel(context.Background())
		ing := self.New(reg, st, ln.Addr().String(), e.now, logger.With("component", "self"), reg)
		g.Add(func() error {
			return ing.Run(sctx, time.Duration(cfg.Self.Interval))
		}, func(error) { cancel() })
	}
	return nil
}

// probeConnections are the connections beyond web.max_connections that
// serve only the health probes.
const probeConnections = 16

func addHTTP(g *run.Group, h *api.Handler, ln net.Listener, cfg config.Config, logger *slog.Logger, reg prometheus.Registerer) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(cfg.Web.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(cfg.Web.ReadTimeout),
		ErrorLog:          slog.NewLogLogger(logger.With("component", "http").Handler(), slog.LevelWarn),
	}
	if cfg.Web.MaxConnections > 0 {
		ln = admission.LimitConns(ln, cfg.Web.MaxConnections, probeConnections, srv, api.IsProbe, reg)
	}
	g.Add(func() error {
		logger.Info("listening", "address", ln.Addr().String(), "data_dir", cfg.Storage.DataDir)
		h.SetReady(true)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve HTTP: %w", err)
		}
		return nil
	}, func(error) {
		h.SetReady(false)
		start := time.Now()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			// Requests still running after the grace period are cut off,
			// which cancels their queries, so that the store can close.
			logger.Warn("HTTP shutdown: closing the remaining connections", "err", err)
			_ = srv.Close()
		}
		logger.Info("HTTP server stopped", "took", time.Since(start).Round(time.Millisecond))
	})
}

func buildInfoCollector() prometheus.Collector {
	bi := buildinfo.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "vigil_build_info",
		Help:        "Build information of the running Vigil; always 1.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
	})
	g.Set(1)
	return g
}
