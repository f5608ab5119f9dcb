package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vigil-obs/vigil/internal/buildinfo"
	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/server"
)

func newServeCmd(e *env) *cobra.Command {
	var (
		cfgFile, dataDir, listen string
		otlpGRPC, otlpHTTP       string
		source                   string
		webConfig, httpConfig    string
		retention                model.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the server: store, query API, own metrics",
		Example: `  vigil serve
  vigil serve --config vigil.yaml --data-dir /var/lib/vigil --retention 15d
  vigil serve --prometheus http://prometheus:9090  # attached to the Prometheus a team runs`,
		Args: cobra.NoArgs,
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
			explicit := server.OTLPExplicit{
				GRPC: fl.Changed("otlp-grpc-listen") || cfg.OTLP.GRPCListen != config.DefaultOTLPGRPCListen,
				HTTP: fl.Changed("otlp-http-listen") || cfg.OTLP.HTTPListen != config.DefaultOTLPHTTPListen,
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
			if fl.Changed("web.config.file") {
				cfg.Web.ConfigFile = webConfig
			}
			if fl.Changed("http.config.file") {
				hc, err := loadHTTPConfig(clientFlags{file: httpConfig})
				if err != nil {
					return usageError{fmt.Errorf("serve: %w", err)}
				}
				cfg.Source.HTTPClient = *hc
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
			// An invalid web configuration stops the start before anything
			// opens, as in Prometheus.
			if _, err := config.LoadWebConfig(cfg.Web.ConfigFile); err != nil {
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
	fl.StringVar(&webConfig, "web.config.file", "", "exporter-toolkit web configuration of the HTTP listener: TLS, mutual TLS, bcrypt basic-auth users, as Prometheus takes it (web.config_file)")
	fl.StringVar(&httpConfig, "http.config.file", "", "Prometheus HTTP client configuration for --prometheus (basic_auth, authorization, tls_config, http_headers), as promtool takes it")
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
	"web.config_file":   "web.config.file",
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

// serve runs the server until ctx ends or a part of it fails.
func serve(ctx context.Context, e *env, cfg config.Config, explicit server.OTLPExplicit) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfoCollector(),
	)
	s := server.New(server.Options{
		Config: cfg, OTLPExplicit: explicit, Now: e.now, Logger: e.logger(), Registry: reg,
		SetMemoryLimit: true,
	})
	if err := s.Start(ctx, server.Host); err != nil {
		var ue server.UsageError
		if errors.As(err, &ue) {
			return usageError{fmt.Errorf("serve: %w", err)}
		}
		return fmt.Errorf("serve: %w", err)
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-s.Err():
	}
	// The parts stop within their own bounds (the HTTP server's grace,
	// remote write out's flush deadline).
	if err := errors.Join(runErr, s.Shutdown(context.Background())); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
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
