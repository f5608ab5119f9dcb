package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	// Registers the gzip decompressor of gRPC: the OpenTelemetry exporters
	// compress with gzip when asked to.
	_ "google.golang.org/grpc/encoding/gzip"
)

// Receiver is the OTLP receiver. Start, Shutdown and Run are safe for
// concurrent use.
type Receiver struct {
	opts     Options
	m        *metrics
	inflight chan struct{}
	handler  http.Handler
	sigs     []*signal
	grpc     *grpc.Server
	http     *http.Server

	mu       sync.Mutex
	started  bool
	stopped  bool
	stopErr  error
	serveErr chan error
	// done is closed when Shutdown begins.
	done chan struct{}
	wg   sync.WaitGroup
}

// New returns a receiver of the signals whose consumers are set, on the
// listeners of opts. It serves nothing until Start or Run.
func New(opts Options) (*Receiver, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("OTLP receiver options: %w", err)
	}
	opts = opts.withDefaults()
	r := &Receiver{
		opts:     opts,
		m:        newMetrics(opts.Registerer),
		inflight: make(chan struct{}, opts.MaxInFlight),
		serveErr: make(chan error, 2),
		done:     make(chan struct{}),
	}
	sigs := r.signals()
	r.sigs = sigs
	r.handler = r.newHTTPHandler(sigs)
	if opts.GRPC != nil {
		r.grpc = r.newGRPCServer(sigs)
	}
	if opts.HTTP != nil {
		r.http = &http.Server{
			Handler:           r.handler,
			ReadHeaderTimeout: 10 * time.Second,
			// A client that sends its body slowly holds a slot of
			// MaxInFlight: this bounds how long.
			ReadTimeout: time.Minute,
			IdleTimeout: 2 * time.Minute,
			ErrorLog:    slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
			TLSConfig:   opts.TLS,
		}
	}
	return r, nil
}

// Handler returns the OTLP/HTTP handler (/v1/traces, /v1/metrics,
// /v1/logs), to mount on a server of the caller's; it shares the limits
// and metrics of the receiver.
func (r *Receiver) Handler() http.Handler { return r.handler }

// Start serves the listeners in the background and returns at once. A
// receiver starts once; after Shutdown it cannot start again.
func (r *Receiver) Start(_ context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopped:
		return errors.New("start OTLP receiver: already shut down")
	case r.started:
		return errors.New("start OTLP receiver: already started")
	}
	r.started = true
	if r.grpc != nil {
		r.serve(transportGRPC, r.opts.GRPC, func() error { return r.grpc.Serve(r.opts.GRPC) })
	}
	if r.http != nil {
		r.serve(transportHTTP, r.opts.HTTP, func() error {
			if r.opts.TLS != nil {
				return r.http.ServeTLS(r.opts.HTTP, "", "")
			}
			return r.http.Serve(r.opts.HTTP)
		})
	}
	return nil
}

// serve runs one server in a goroutine; an error that is not the end of a
// shutdown goes to serveErr.
func (r *Receiver) serve(transport string, l net.Listener, run func() error) {
	r.opts.Logger.Info("OTLP receiver listening", "transport", transport, "addr", l.Addr().String(),
		"tls", r.opts.TLS != nil, "auth", r.opts.Auth != nil)
	r.wg.Go(func() {
		err := run()
		if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
			return
		}
		r.serveErr <- fmt.Errorf("serve OTLP/%s on %s: %w", transport, l.Addr(), err)
	})
}

// Shutdown stops accepting connections, lets the requests in flight finish
// until ctx is done, then closes what is left. It closes the listeners,
// started or not, and returns the same result every time it is called.
func (r *Receiver) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return r.stopErr
	}
	r.stopped = true
	close(r.done)
	start := time.Now()
	var errs []error
	if !r.started {
		for _, l := range []net.Listener{r.opts.GRPC, r.opts.HTTP} {
			if l != nil {
				if err := l.Close(); err != nil {
					errs = append(errs, fmt.Errorf("close listener %s: %w", l.Addr(), err))
				}
			}
		}
		r.stopErr = errors.Join(errs...)
		return r.stopErr
	}
	if r.http != nil {
		if err := r.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut down OTLP/HTTP: %w", err))
			_ = r.http.Close()
		}
	}
	if r.grpc != nil {
		stopGRPC(ctx, r.grpc)
	}
	r.wg.Wait()
	r.opts.Logger.Info("OTLP receiver stopped", "took", time.Since(start).String())
	r.stopErr = errors.Join(errs...)
	return r.stopErr
}

// stopGRPC stops s gracefully, or at once when ctx is done first.
func stopGRPC(ctx context.Context, s *grpc.Server) {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.Stop()
		<-done
	}
}

// Err receives an error that stops a listener while the receiver runs
// (not the end of a shutdown): its owner should shut it down.
func (r *Receiver) Err() <-chan error { return r.serveErr }

// shutdownTimeout bounds how long Run waits for requests in flight.
const shutdownTimeout = 10 * time.Second

// Run serves until ctx is done, a server fails or Shutdown is called,
// then shuts down, waiting at most 10 s for the requests in flight.
func (r *Receiver) Run(ctx context.Context) error {
	if err := r.Start(ctx); err != nil {
		return err
	}
	var err error
	select {
	case <-ctx.Done():
	case <-r.done:
	case err = <-r.serveErr:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	return errors.Join(err, r.Shutdown(sctx))
}

// acquire takes a slot of MaxInFlight, or reports that there is none.
func (r *Receiver) acquire() bool {
	select {
	case r.inflight <- struct{}{}:
		r.m.inflight.Inc()
		return true
	default:
		return false
	}
}

func (r *Receiver) release() {
	<-r.inflight
	r.m.inflight.Dec()
}

// tooManyRequests is the outcome of a request over MaxInFlight.
func (r *Receiver) tooManyRequests() outcome {
	return refuse(codes.ResourceExhausted, reasonTooManyRequests,
		fmt.Sprintf("too many requests: %d already in flight: retry later", r.opts.MaxInFlight))
}

// observe records the outcome of one request in the metrics and the log.
func (r *Receiver) observe(transport string, sig *signal, o outcome, took time.Duration) {
	name := "unknown"
	if sig != nil {
		name = sig.name
		r.m.duration.WithLabelValues(transport, name).Observe(took.Seconds())
	}
	if o.code == codes.OK && o.httpCode == 0 {
		if sig != nil && o.accepted > 0 {
			sig.received(transport, o.accepted)
		}
		for _, p := range o.parts {
			r.m.rejected.WithLabelValues(transport, name, p.reason).Inc()
			r.m.rejectedItems.WithLabelValues(transport, name, p.reason).Add(float64(p.n))
		}
		return
	}
	r.m.rejected.WithLabelValues(transport, name, o.reason).Inc()
	r.opts.Logger.Debug("OTLP request refused", "transport", transport, "signal", name, "reason", o.reason, "msg", o.msg)
}
