package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"go.opentelemetry.io/collector/component"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/config"
)

// probeConnections are the connections beyond web.max_connections that
// serve only the health probes.
const probeConnections = 16

// httpShutdownGrace is how long the requests in flight may finish when
// the server stops; those still running are cut off, which cancels their
// queries, so that the store can close.
const httpShutdownGrace = 10 * time.Second

// httpServer serves the API on its listener from Start until Shutdown.
type httpServer struct {
	h      *api.Handler
	srv    *http.Server
	ln     net.Listener
	logger *slog.Logger
	fatal  func(error)
	// configFile is the exporter-toolkit web configuration ("": none).
	configFile string
	// toolkitLogger takes exporter-toolkit's warnings and errors (its
	// start-up lines repeat what Start logs).
	toolkitLogger *slog.Logger

	mu      sync.Mutex
	done    chan struct{}
	stopped bool
	stopErr error
}

var _ component.Component = (*httpServer)(nil)

func newHTTPServer(h *api.Handler, ln net.Listener, cfg config.Config, logger *slog.Logger, reg prometheus.Registerer, fatal func(error)) *httpServer {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(cfg.Web.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(cfg.Web.ReadTimeout),
		ErrorLog:          slog.NewLogLogger(logger.With("component", "http").Handler(), slog.LevelWarn),
	}
	if cfg.Web.MaxConnections > 0 {
		ln = admission.LimitConns(ln, cfg.Web.MaxConnections, probeConnections, srv, api.IsProbe, reg)
	}
	return &httpServer{
		h: h, srv: srv, ln: ln, logger: logger, fatal: fatal, configFile: cfg.Web.ConfigFile,
		toolkitLogger: slog.New(minLevel{logger.With("component", "http").Handler(), slog.LevelWarn}),
	}
}

func (s *httpServer) Start(context.Context, component.Host) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.done != nil {
		return errors.New("start HTTP server: started or shut down already")
	}
	s.done = make(chan struct{})
	s.logger.Info("listening", "address", s.ln.Addr().String(), "web_config_file", s.configFile)
	s.h.SetReady(true)
	go func() {
		defer close(s.done)
		// exporter-toolkit serves TLS and checks basic auth as the web
		// configuration file says, re-reading it for every request and
		// its certificate for every handshake, as Prometheus does.
		flags := &web.FlagConfig{
			WebListenAddresses: &[]string{s.ln.Addr().String()},
			WebSystemdSocket:   new(bool),
			WebConfigFile:      &s.configFile,
		}
		if err := web.Serve(s.ln, s.srv, flags, s.toolkitLogger); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.fatal(fmt.Errorf("serve HTTP: %w", err))
		}
	}()
	return nil
}

// Shutdown marks the server not ready, lets the requests in flight finish
// for httpShutdownGrace (or until ctx ends), then closes what is left.
func (s *httpServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.stopErr
	}
	s.stopped = true
	if s.done == nil {
		return nil
	}
	s.h.SetReady(false)
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, httpShutdownGrace)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.logger.Warn("HTTP shutdown: closing the remaining connections", "err", err)
		_ = s.srv.Close()
	}
	<-s.done
	s.logger.Info("HTTP server stopped", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// minLevel drops the records below its level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
